"""Block pooling: edges, max / signed largest-magnitude / all-of-block reductions."""

import numpy as np
import pytest

from explorer.viz.pool import block_edges, max_pool, pool


def test_block_edges_and_max_pool_against_reduceat():
    e = block_edges(10, 4)
    assert e == (0, 2, 5, 7, 10)  # blocks of 2 and 3 tokens, alternating: cell positions stay proportional
    assert np.diff(block_edges(1024, 656)).tolist()[:6] == [1, 2, 1, 2, 1, 2]
    assert block_edges(5, 10) == (0, 1, 2, 3, 4, 5)
    x = np.random.default_rng(1).random((2, 10, 7))
    k = block_edges(7, 3)
    ref = np.maximum.reduceat(np.maximum.reduceat(x, list(e[:-1]), axis=-2), list(k[:-1]), axis=-1)
    np.testing.assert_array_equal(max_pool(x, e, k), ref)
    np.testing.assert_array_equal(pool(x, e, k, "max"), ref)


def test_absmax_keeps_the_sign_of_the_largest_change():
    x = np.array([[0.1, -0.5, 0.2, 0.3], [0.0, 0.1, -0.1, 0.05]])
    out = pool(x, (0, 2), (0, 2, 4), "absmax")
    np.testing.assert_array_equal(out, [[-0.5, 0.3]])


def test_all_is_true_only_for_full_blocks():
    m = np.tril(np.ones((4, 4), bool))
    out = pool(~m, (0, 2, 4), (0, 2, 4), "all")  # masked (upper triangle) blocks
    np.testing.assert_array_equal(out, [[False, True], [False, False]])


def test_nothing_pooled_returns_the_input_and_bad_reduction_raises():
    x = np.ones((3, 3))
    assert pool(x, (0, 1, 2, 3), (0, 1, 2, 3)) is x
    with pytest.raises(ValueError, match="how must be"):
        pool(x, (0, 3), (0, 3), "median")


def test_mean_is_the_share_of_each_block():
    m = np.tril(np.ones((5, 5), bool))
    out = pool(m, block_edges(5, 2), block_edges(5, 2), "mean")  # blocks of 2 and 3
    np.testing.assert_allclose(out, [[3 / 4, 0.0], [1.0, 6 / 9]])

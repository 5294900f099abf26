"""Block pooling: edges, max / signed largest-magnitude / all-of-block reductions."""

import numpy as np
import pytest

from explorer.viz.pool import block_edges, max_pool, max_pool_tensor, pool


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


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_max_pool_of_a_tensor_equals_max_pool_of_its_float32_values(dtype):
    """Blocks of p and p + 1 tokens (1,000 -> 37 cells: 27 or 28), leading batch axes, an axis left unpooled."""
    import torch

    x = torch.rand(2, 3, 1000, 300).to(getattr(torch, dtype))
    x[1, 2, 999, 0] = 1.0  # a spike in the last token of the last block, the first key
    q, k = block_edges(1000, 37), block_edges(300, 300)  # keys: one token per cell
    want = max_pool(x.float().numpy(), q, k)
    got = max_pool_tensor(x, q, k)
    assert got.dtype == np.float32 and got.shape == (2, 3, 37, 300)
    np.testing.assert_array_equal(got, want)
    assert got[1, 2, -1, 0] == 1.0
    k = block_edges(300, 41)
    np.testing.assert_array_equal(max_pool_tensor(x, q, k), max_pool(x.float().numpy(), q, k))

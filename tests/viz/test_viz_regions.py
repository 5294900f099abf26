"""Covered cells as rectangles and one path; a heatmap cover when the path would cost more."""

import re

import numpy as np
import pytest

from explorer.viz.regions import cover, path, rectangles


def paint(rects, shape):
    out = np.zeros(shape, bool)
    for r0, r1, c0, c1 in rects:
        assert not out[r0:r1, c0:c1].any()  # rectangles never overlap
        out[r0:r1, c0:c1] = True
    return out


@pytest.mark.parametrize("seed", range(5))
def test_rectangles_cover_exactly_the_true_cells(seed):
    rng = np.random.default_rng(seed)
    m = rng.random((23, 17)) < rng.random()
    m[:, 3] = True  # a column (padding) and a triangle (causal) on top of noise
    m |= np.triu(np.ones((23, 17), bool), 5)
    np.testing.assert_array_equal(paint(rectangles(m), m.shape), m)


def test_structured_masks_give_few_rectangles():
    t = 512
    causal_masked = ~np.tril(np.ones((t, t), bool))
    assert len(rectangles(causal_masked)) == t - 1  # one per row of the triangle
    padding = np.zeros((t, t), bool)
    padding[:, 400:] = True
    assert rectangles(padding) == [(0, t, 400, t)]  # equal rows merge into one rectangle


def test_path_uses_cell_edges_in_category_positions():
    assert path([(0, 2, 1, 3)]) == "M0.5 -0.5H2.5V1.5H0.5Z"
    nums = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", path(rectangles(np.eye(4, dtype=bool))))]
    assert all(v % 1 == 0.5 for v in nums)


def test_cover_picks_the_cheaper_form():
    x = [f"k{i}" for i in range(64)]
    assert cover(np.zeros((64, 64)), x, x, "#bdbdbd") == ([], [])
    shapes, traces = cover(~np.tril(np.ones((64, 64), bool)), x, x, "#bdbdbd")
    assert traces == [] and shapes[0]["type"] == "path" and shapes[0]["fillcolor"] == "#bdbdbd"
    assert shapes[0]["line"] == {"width": 0} and (shapes[0]["xref"], shapes[0]["yref"]) == ("x", "y")
    checker = (np.indices((64, 64)).sum(0) % 2).astype(bool)  # 2,048 runs: a path would cost ~60 kB
    shapes, traces = cover(checker, x, x, "#bdbdbd")
    assert shapes == [] and traces[0]["hoverinfo"] == "skip" and traces[0]["z"].dtype == np.uint8
    np.testing.assert_array_equal(traces[0]["z"], checker)
    assert traces[0]["colorscale"][0][1] == "rgba(0,0,0,0)"  # uncovered cells stay transparent

"""Sinusoidal table against the formula, and the positional figures' structure."""

import math

import numpy as np
import plotly.graph_objects as go
import pytest

from explorer.viz import position_similarity, positional_curves, positional_heatmap, sinusoidal_table


@pytest.mark.parametrize("d_model", [6, 7])
def test_sinusoidal_formula_even_and_odd_width(d_model):
    pe = sinusoidal_table(5, d_model, base=10000.0)
    assert pe.shape == (5, d_model)
    for pos in range(5):
        for i in range(d_model):
            angle = pos / 10000.0 ** (2 * (i // 2) / d_model)
            want = math.sin(angle) if i % 2 == 0 else math.cos(angle)
            assert pe[pos, i] == pytest.approx(want, abs=1e-12)
    # Odd width: the last column is a sine (value 0 at position 0), not a cosine.
    assert pe[0, -1] == (0.0 if d_model % 2 else 1.0)


def test_sinusoidal_base_changes_frequencies():
    a, b = sinusoidal_table(4, 4, base=100.0), sinusoidal_table(4, 4)
    assert a[1, 2] == pytest.approx(math.sin(1 / 100.0 ** 0.5))
    assert not np.allclose(a, b)


def test_positional_heatmap_symmetric_diverging_range_for_learned_table():
    table = np.array([[0.5, -2.0], [1.0, 0.0], [0.1, 0.2]])
    fig = positional_heatmap(table, title="Learned")
    (tr,) = fig.data
    assert isinstance(tr, go.Heatmap) and np.asarray(tr.z).shape == (3, 2)
    assert (tr.zmin, tr.zmax, tr.zmid) == (-2.0, 2.0, 0.0)
    assert fig.layout.xaxis.title.text == "dimension" and fig.layout.yaxis.title.text == "position"
    assert fig.layout.yaxis.autorange == "reversed"
    assert "Learned" in fig.layout.title.text


def test_position_similarity_cosine_and_dot():
    t = np.array([[1.0, 0.0], [0.0, 2.0], [-1.0, 0.0]])
    cos = np.asarray(position_similarity(t).data[0].z)
    np.testing.assert_allclose(cos, [[1, 0, -1], [0, 1, 0], [-1, 0, 1]], atol=1e-6)
    dot = position_similarity(t, metric="dot").data[0]
    np.testing.assert_allclose(np.asarray(dot.z)[1, 1], 4.0)
    assert (dot.zmin, dot.zmax) == (-4.0, 4.0)
    with pytest.raises(ValueError, match="metric"):
        position_similarity(t, metric="l2")


def test_positional_curves_one_line_per_dim():
    pe = sinusoidal_table(10, 8)
    fig = positional_curves(pe, dims=[0, 5])
    assert [tr.name for tr in fig.data] == ["dim 0", "dim 5"]
    np.testing.assert_allclose(np.asarray(fig.data[1].y), pe[:, 5], rtol=1e-6)
    assert fig.layout.xaxis.title.text == "position"
    with pytest.raises(ValueError, match="out of range"):
        positional_curves(pe, dims=[8])
    assert len(positional_curves(pe).data) >= 3  # default picks


def test_table_must_be_2d():
    with pytest.raises(ValueError, match="positions, d_model"):
        positional_heatmap(np.zeros(5))

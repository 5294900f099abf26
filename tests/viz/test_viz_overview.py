"""The tiled all-heads overview: one heatmap, NaN gaps, labels, downsampling, click mapping."""

import json

import numpy as np
import plotly.graph_objects as go
import pytest

from explorer.viz import OverviewGrid, attention_overview, overview_grid_index
from explorer.viz.overview import block_edges, max_pool, plan_grid


def attn(layers, heads, t, seed=0):
    x = np.random.default_rng(seed).random((layers, heads, t, t), dtype=np.float32)
    return x / x.sum(-1, keepdims=True)


def test_single_tiled_heatmap_with_gaps_and_tile_contents():
    a = attn(2, 3, 5)
    toks = ["the", "cat", "the", "<b>", "$x$"]
    fig = attention_overview(a, toks, toks)
    assert len(fig.data) == 1 and isinstance(fig.data[0], go.Heatmap)
    g = OverviewGrid(**{**fig.layout.meta["overview_grid"],
                        "q_edges": tuple(fig.layout.meta["overview_grid"]["q_edges"]),
                        "k_edges": tuple(fig.layout.meta["overview_grid"]["k_edges"])})
    z = np.asarray(fig.data[0].z)
    assert z.shape == g.shape == (2 * 5 + g.gap_rows, 3 * 5 + 2 * g.gap_cols)
    r, k = g.tile_origin(1, 2)
    np.testing.assert_allclose(z[r:r + 5, k:k + 5], a[1, 2])
    assert np.isnan(z[5:5 + g.gap_rows]).all() and np.isnan(z[:, 5:5 + g.gap_cols]).all()
    tr = fig.data[0]
    assert (tr.zmin, tr.zmax) == (0.0, 1.0)
    assert list(fig.layout.yaxis.ticktext) == ["L0", "L1"]
    assert list(fig.layout.xaxis.ticktext) == ["H0", "H1", "H2"]
    # Hover names carry layer/query and head/key; repeats separate, tokens escaped.
    assert tr.y[2] == "layer 0 · query 2: the·2" and tr.y[3] == "layer 0 · query 3: &lt;b&gt;"
    assert tr.x[0] == "head 0 · key 0: the"
    assert tr.x[k + 4] == "head 2 · key 4: &#36;x&#36;"
    assert "%{y}" in tr.hovertemplate and "%{x}" in tr.hovertemplate and "%{z:.3f}" in tr.hovertemplate
    assert len(set(tr.x)) == len(tr.x) and len(set(tr.y)) == len(tr.y)  # categories never merge
    assert "<b>" not in fig.to_json().replace("<b>off</b>", "")
    assert not any("downsampled" in a.text for a in fig.layout.annotations)


def test_downsampling_notice_and_size_at_512_tokens_6x12_heads():
    a = attn(6, 12, 512)
    toks = [f"t{i % 30}" for i in range(512)]
    fig = attention_overview(a, toks, toks)
    assert any("downsampled" in ann.text for ann in fig.layout.annotations)
    z = np.asarray(fig.data[0].z)
    meta = fig.layout.meta["overview_grid"]
    rows = len(meta["q_edges"]) - 1
    assert rows < 100  # a tile is at most ~ its on-screen pixels
    assert z.shape[0] == 6 * rows + 5 * meta["gap_rows"]
    # max-pool keeps the largest weight of each block
    r0 = meta["q_edges"][1]
    c0 = meta["k_edges"][1]
    assert z[0, 0] == pytest.approx(a[0, 0, :r0, :c0].max())
    assert len(fig.to_json()) < 2_000_000
    assert "max weight in block" in fig.data[0].hovertemplate
    assert "queries 0–" in fig.data[0].y[0]


def test_no_downsampling_when_tiles_have_room_or_max_pixels_forces_it():
    a = attn(2, 2, 20)
    toks = [str(i) for i in range(20)]
    assert not any("downsampled" in x.text for x in attention_overview(a, toks, toks).layout.annotations)
    fig = attention_overview(a, toks, toks, max_pixels=5)
    assert any("downsampled" in x.text for x in fig.layout.annotations)
    assert len(fig.layout.meta["overview_grid"]["q_edges"]) == 6


def test_switched_off_heads_marked():
    a = attn(2, 3, 4)
    hm = np.ones((2, 3))
    hm[1, 0] = 0
    fig = attention_overview(a, list("abcd"), list("abcd"), head_mask=hm)
    assert "1 head switched off" in fig.layout.title.text
    assert len(fig.layout.shapes) == 1
    assert [x.text for x in fig.layout.annotations] == ["<b>off</b>"]
    s = fig.layout.shapes[0]
    g = plan_grid(2, 3, 4, 4, tile_px=72)
    assert s.y0 == pytest.approx(g.tile_rows + g.gap_rows - 0.5)  # layer 1 row band
    assert s.x0 == -0.5


def test_click_maps_back_to_layer_and_head():
    a = attn(3, 4, 6)
    fig = attention_overview(a, list("abcdef"), list("abcdef"))
    m = fig.layout.meta["overview_grid"]
    step_r, step_c = 6 + m["gap_rows"], 6 + m["gap_cols"]
    assert overview_grid_index(fig, 0, 0) == (0, 0)
    assert overview_grid_index(fig, 3 * step_c + 5, 2 * step_r + 5) == (2, 3)
    assert overview_grid_index(fig, 6, 0) is None  # gap column
    assert overview_grid_index(fig, 99 * step_c, 0) is None
    tr = fig.data[0]
    assert overview_grid_index(fig, tr.x[step_c + 1], tr.y[2 * step_r]) == (2, 1)  # category names
    assert overview_grid_index(json.loads(fig.to_json()), step_c, step_r) == (1, 1)


def test_block_edges_and_max_pool_against_reduceat():
    e = block_edges(10, 4)
    assert e == (0, 3, 6, 8, 10)
    assert block_edges(5, 10) == (0, 1, 2, 3, 4, 5)
    x = np.random.default_rng(1).random((2, 10, 7))
    k = block_edges(7, 3)
    ref = np.maximum.reduceat(np.maximum.reduceat(x, list(e[:-1]), axis=-2), list(k[:-1]), axis=-1)
    np.testing.assert_array_equal(max_pool(x, e, k), ref)


def test_shape_errors():
    with pytest.raises(ValueError, match=r"\(L, H, Tq, Tk\)"):
        attention_overview(np.zeros((2, 3, 4)), list("abcd"), list("abcd"))
    with pytest.raises(ValueError, match="attn must have shape"):
        attention_overview(np.zeros((1, 1, 4, 4)), list("abc"), list("abcd"))
    with pytest.raises(ValueError, match="head_mask"):
        attention_overview(np.zeros((1, 2, 4, 4)), list("abcd"), list("abcd"), head_mask=np.ones((2, 1)))

"""The tiled all-heads overview: one heatmap with empty cells between tiles, labels, downsampling, click mapping."""

import json

import numpy as np
import plotly.graph_objects as go
import pytest

from explorer.viz import OverviewGrid, attention_overview, figure_json, overview_grid_index
from explorer.viz.overview import MAX_CELLS, plan_grid
from tests.viz.strings import containing


def attn(layers, heads, t, seed=0):
    x = np.random.default_rng(seed).random((layers, heads, t, t), dtype=np.float32)
    return x / x.sum(-1, keepdims=True)


def grid_of(fig):
    g = fig.layout.meta["overview_grid"]
    return OverviewGrid(**{**g, "q_edges": tuple(g["q_edges"]), "k_edges": tuple(g["k_edges"])})


def test_single_tiled_heatmap_with_empty_cells_between_tiles():
    a = attn(2, 3, 5)
    toks = ["the", "cat", "the", "<b>", "$x$"]
    fig = attention_overview(a, toks, toks)
    heats = [t for t in fig.data if isinstance(t, go.Heatmap)]
    assert len(heats) == 1 and len(fig.data) == 2  # the tiles, and the colour bar's trace without points
    g = grid_of(fig)
    tr = fig.data[0]
    z = np.asarray(tr.z)
    assert z.shape == g.shape == (2 * 5 + g.gap_rows, 3 * 5 + 2 * g.gap_cols)  # every cell of the axes
    r, k = g.tile_origin(1, 2)
    np.testing.assert_allclose(z[r:r + 5, k:k + 5], a[1, 2], rtol=1e-6)  # 30 x 5 cells: exact float32
    assert np.isnan(z[5:5 + g.gap_rows]).all() and np.isnan(z[:, 5:5 + g.gap_cols]).all()  # gaps: no value
    assert np.isfinite(z).sum() == a.size
    # x and y list every category in order, gaps included (the axes need no categoryarray).
    x_axis, y_axis = list(tr.x), list(tr.y)
    assert fig.layout.xaxis.categoryarray is None and fig.layout.yaxis.categoryarray is None
    assert len(x_axis) == g.shape[1] and len(y_axis) == g.shape[0]
    assert all(n.startswith("\u200b") and "gap between" in n for n in x_axis[5:5 + g.gap_cols] + y_axis[5:5 + g.gap_rows])
    assert (tr.zmin, tr.zmax) == (0.0, 1.0) and tr.hoverongaps is False and tr.showscale is False
    bar = fig.data[1]
    assert bar.type == "scatter" and list(bar.x) == [None] and bar.hoverinfo == "skip" and bar.marker.showscale
    assert (bar.marker.cmin, bar.marker.cmax) == (0.0, 1.0) and bar.marker.colorbar.title.text == "weight"
    assert list(fig.layout.yaxis.ticktext) == ["L0", "L1"]
    assert list(fig.layout.xaxis.ticktext) == ["H0", "H1", "H2"]
    # Hover names carry layer/query and head/key; repeats separate, tokens escaped.
    assert tr.y[2] == "layer 0 · query 2: the·2" and tr.y[3] == "layer 0 · query 3: &lt;b&gt;"
    assert tr.x[0] == "head 0 · key 0: the"
    assert tr.x[k + 4] == "head 2 · key 4: &#36;x&#36;"
    assert "%{y}" in tr.hovertemplate and "%{x}" in tr.hovertemplate and "%{z:.3f}" in tr.hovertemplate
    assert len(set(x_axis)) == len(x_axis) and len(set(y_axis)) == len(y_axis)  # categories never merge
    assert containing(fig, "&lt;b&gt;") and not containing(fig, "<b>")  # the figure's strings, not its JSON
    assert not any("downsampled" in a.text for a in fig.layout.annotations)


def test_percent_codes_mark_gaps_with_the_transparent_top_of_a_stretched_scale():
    """Codes are integers (no NaN): a gap is GAP_CODE, drawn by the colour scale's transparent top; the weights'
    codes keep their colours, and the colour bar, on its own trace, shows the weights' range only."""
    from explorer.viz.common import WEIGHT_SCALE
    from explorer.viz.overview import GAP_CODE

    fig = attention_overview(attn(3, 4, 300), [f"t{i}" for i in range(300)], [f"t{i}" for i in range(300)])
    tr, bar, g = fig.data[0], fig.data[1], grid_of(fig)
    z = np.asarray(tr.z)
    assert z.dtype == np.uint8 and z.shape == g.shape and (tr.zmin, tr.zmax) == (0, GAP_CODE)
    gaps = np.zeros(g.shape, bool)
    for layer in range(1, 3):
        gaps[layer * (g.tile_rows + g.gap_rows) - g.gap_rows:layer * (g.tile_rows + g.gap_rows)] = True
    for head in range(1, 4):
        gaps[:, head * (g.tile_cols + g.gap_cols) - g.gap_cols:head * (g.tile_cols + g.gap_cols)] = True
    assert (z[gaps] == GAP_CODE).all() and (z[~gaps] <= 100).all()
    scale = [(float(p), col) for p, col in tr.colorscale]
    assert scale[-1] == (1.0, "rgba(255,255,255,0)")  # only GAP_CODE reaches it
    for (p, col), (q, ref) in zip(scale, WEIGHT_SCALE):  # code v sits where v / 100 sat on the weights' scale
        assert p * GAP_CODE == pytest.approx(q * 100) and col == ref
    assert scale[-2][0] * GAP_CODE == pytest.approx(100)
    assert (bar.marker.cmin, bar.marker.cmax) == (0, 100) and [tuple(x) for x in bar.marker.colorscale] == [
        tuple(x) for x in WEIGHT_SCALE]


def test_downsampling_notice_and_size_at_512_tokens_6x12_heads():
    a = attn(6, 12, 512)
    toks = [f"t{i % 30}" for i in range(512)]
    fig = attention_overview(a, toks, toks)
    assert any("downsampled" in ann.text for ann in fig.layout.annotations)
    z = np.asarray(fig.data[0].z)
    g = grid_of(fig)
    assert g.tile_rows < 100  # a tile is at most ~ its on-screen pixels
    assert z.shape == g.shape and g.packed_shape[0] * g.packed_shape[1] <= MAX_CELLS
    assert z.dtype == np.uint8  # percent codes: one byte per cell
    # max-pool keeps the largest weight of each block (to the percent)
    r0, c0 = g.q_edges[1], g.k_edges[1]
    assert z[0, 0] == round(100 * float(a[0, 0, :r0, :c0].max()))
    assert len(figure_json(fig)) < 400_000
    assert "max weight in block: ≈ %{z:d}%" in fig.data[0].hovertemplate
    assert "queries 0–" in fig.data[0].y[0]


def test_the_grid_fits_its_container_and_keeps_its_tiles_shape():
    """No fixed width (a 12-head grid sized for 1,100 px was cut off in the app's ~930 px column at a 1,280 px
    page): the y axis is tied to the x axis at the planned cell ratio, so a narrower figure is a smaller grid, top
    aligned, with the downsampling note under the grid rather than under the figure."""
    for heads, tokens in ((12, 1024), (4, 20)):
        fig = attention_overview(attn(2, heads, tokens), [f"t{i}" for i in range(tokens)],
                                 [f"t{i}" for i in range(tokens)])
        lay, g = fig.layout, grid_of(fig)
        assert lay.width is None and lay.height > 0
        assert lay.yaxis.scaleanchor == "x" and lay.yaxis.constrain == "domain" and lay.yaxis.constraintoward == "top"
        plot_w = 1100 - lay.margin.l - lay.margin.r  # the width the tiles were planned for
        plot_h = lay.height - lay.margin.t - lay.margin.b
        cell_w, cell_h = plot_w / len(fig.data[0].x), plot_h / len(fig.data[0].y)
        assert lay.yaxis.scaleratio == pytest.approx(cell_h / cell_w, rel=0.01)  # the height is whole pixels
        # At the planned width the grid fills the figure: square tiles of square tokens stay square.
        assert cell_h * g.tile_rows == pytest.approx(cell_w * g.tile_cols, rel=0.02)
    note = next(a for a in attention_overview(attn(2, 12, 1024), [f"t{i}" for i in range(1024)],
                                              [f"t{i}" for i in range(1024)]).layout.annotations
                if "downsampled" in a.text)
    assert (note.xref, note.yref, note.y, note.yanchor) == ("x domain", "y domain", 0, "top")


def test_grid_stays_within_the_cell_budget_at_1024_tokens_12x12_heads():
    g = plan_grid(12, 12, 1024, 1024, tile_px=(1100 - 160 - 11 * 6) / 12)
    assert g.downsampled and g.tile_rows == g.tile_cols <= 73  # at most the tile's pixels
    assert g.packed_shape[0] * g.packed_shape[1] <= MAX_CELLS


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
    assert overview_grid_index(fig, tr.x[6], "layer 0 · query 0: a") is None  # a gap
    assert overview_grid_index(json.loads(fig.to_json()), step_c, step_r) == (1, 1)


def test_shape_errors():
    with pytest.raises(ValueError, match=r"\(L, H, Tq, Tk\)"):
        attention_overview(np.zeros((2, 3, 4)), list("abcd"), list("abcd"))
    with pytest.raises(ValueError, match="attn must have shape"):
        attention_overview(np.zeros((1, 1, 4, 4)), list("abc"), list("abcd"))
    with pytest.raises(ValueError, match="head_mask"):
        attention_overview(np.zeros((1, 2, 4, 4)), list("abcd"), list("abcd"), head_mask=np.ones((2, 1)))


def test_overview_from_its_tiles_is_the_same_figure():
    """The app keeps only the tiles (at most MAX_CELLS values) and draws the overview from them later."""
    from explorer.viz import attention_overview, draw_overview, figure_json, overview_tiles
    from explorer.viz.overview import MAX_CELLS

    rng = np.random.default_rng(3)
    attn = rng.random((3, 4, 300, 300)).astype(np.float32)
    labels = [f"t{i}" for i in range(300)]
    tiles = overview_tiles(attn, width=900)
    assert tiles.z.size <= MAX_CELLS and tiles.grid.downsampled
    assert figure_json(draw_overview(tiles, labels, labels, np.ones((3, 4)), title="x")) == \
        figure_json(attention_overview(attn, labels, labels, np.ones((3, 4)), title="x", width=900))
    with pytest.raises(ValueError, match="labels must match"):
        draw_overview(tiles, labels[:-1], labels)


def test_tile_notes_sit_in_each_tiles_corner_as_escaped_text():
    """Role labels on the tiles: one boxed annotation at the top-left cell of each noted tile; text, never HTML."""
    from explorer.viz.overview import draw_overview, overview_tiles

    attn = np.full((2, 3, 4, 4), 0.25, dtype=np.float32)
    tiles = overview_tiles(attn)
    labels = [f"t{i}" for i in range(4)]
    notes = [["ind .92", "", "<b>x</b>"], ["", "prev .88", ""]]
    fig = draw_overview(tiles, labels, labels, tile_notes=notes)
    noted = [a for a in fig.layout.annotations if a.xanchor == "left" and a.yanchor == "top" and a.xref == "x"]
    assert sorted(a.text for a in noted) == ["&lt;b&gt;x&lt;/b&gt;", "ind .92", "prev .88"]
    grid = tiles.grid
    first = next(a for a in noted if a.text == "prev .88")
    r, k = grid.tile_origin(1, 1)
    assert (first.x, first.y) == (k - 0.5, r - 0.5)  # the tile's top-left corner
    assert len(draw_overview(tiles, labels, labels).layout.annotations) == 0
    with pytest.raises(ValueError, match="tile_notes must be 2 rows of 3"):
        draw_overview(tiles, labels, labels, tile_notes=[["a", "b", "c"]])


@pytest.mark.parametrize("tokens", [300, 20])  # pooled, and one token per cell
def test_tiles_from_a_list_of_layers_equal_tiles_from_the_array(tokens):
    """The app passes per-layer float16 tensors (pooled one layer at a time): the tiles are the same."""
    import torch

    from explorer.viz import overview_tiles

    attn = torch.rand(3, 4, tokens, tokens).half()
    whole, by_layer = overview_tiles(attn, width=900), overview_tiles(list(attn), width=900)
    assert whole.grid == by_layer.grid
    np.testing.assert_array_equal(whole.z, by_layer.z)
    with pytest.raises(ValueError, match="attn must have shape"):
        overview_tiles([np.zeros((4, 4))])

"""All layers x heads at once, as ONE tiled heatmap (not L*H subplots, which draw slowly).

Shapes: attn (L, H, Tq, Tk); head_mask (L, H), 1 = on. Tiles are laid out in a grid (row =
layer, column = head). The tiles are reduced packed edge to edge, (L * rows, H * cols)
(`OverviewTiles`); the figure's z spreads them over every cell of the axes with empty cells between
tiles (`gapped_heatmap`: evenly spaced cells are what lets plotly.js draw the heatmap as one image).

Size: a tile gets about `tile_px` screen pixels per side. When a tile has more tokens than
pixels (or the whole grid more cells than `MAX_CELLS`), each tile is max-pooled (a spike stays
visible) down to at most `max_pixels` cells per side and the figure says "downsampled". Values go
in `encode`'s percent form (one byte per cell) beyond its exact size.

Hover: both axes are category axes whose names carry the layer/query (rows) and head/key
(columns), so the hover needs no per-cell data: O(rows + columns) strings, not O(cells). Gap
names start with a zero-width space.

`OverviewGrid` records the geometry in axis positions, gaps included (also stored in
`fig.layout.meta["overview_grid"]`), and `overview_grid_index` maps a clicked cell back to
(layer, head) for the app's head selector.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from explorer.viz import common as c
from explorer.viz import tile_marks
from explorer.viz.axes import block_name
from explorer.viz.encode import PERCENT, Encoded, encode
from explorer.viz.grid import GAP_PX, MAX_CELLS, OverviewGrid, pack_tiles, plan_grid, tile_attention
from explorer.viz.pool import block_edges, max_pool, max_pool_tensor

__all__ = ["GAP_PX", "MAX_CELLS", "OverviewGrid", "OverviewTiles", "attention_overview", "block_edges",
           "draw_overview", "max_pool", "overview_grid_index", "overview_tiles", "plan_grid", "tile_attention"]

def _axis_names(edges: Sequence[int], gap: int, n_tiles: int, labels: list[str], tile_word: str,
                tok_word: str) -> tuple[list[str], list[str]]:
    """(the axis's categories: cell names with gap names between tiles, tick names at the tiles' centres)."""
    plural = "queries" if tok_word == "query" else f"{tok_word}s"
    cells = [block_name(lo, hi - 1, labels, tok_word, plural) for lo, hi in zip(edges[:-1], edges[1:])]
    between = "layers" if tile_word == "layer" else "heads"
    axis: list[str] = []
    centres: list[str] = []
    for t in range(n_tiles):
        tile = [f"{tile_word} {t} · {cell}" for cell in cells]
        axis += tile
        centres.append(tile[len(tile) // 2])
        if t < n_tiles - 1:  # unique names; the zero-width space marks a gap for the page script
            axis.extend(f"\u200bgap between {between} {t} and {t + 1} ({g + 1})" for g in range(gap))
    return axis, centres


@dataclass(frozen=True)
class OverviewTiles:
    """The overview's data, reduced to what the figure draws: the tiles packed edge to edge (pooled to the
    tiles' pixels when the tokens outnumber them). Small whatever the length: at most MAX_CELLS values."""

    grid: OverviewGrid
    z: np.ndarray  # grid.packed_shape, float32 weights (block maxima when downsampled)
    tq: int  # query tokens
    tk: int  # key tokens
    width: int  # figure width the tiles were sized for


MARGINS = dict(left=70, right=90, top=100, bottom=20)


def tile_pixels(width: int, n_heads: int) -> float:
    """Screen pixels per side of one (square) tile at this figure width."""
    plot_w = width - MARGINS["left"] - MARGINS["right"]
    return max(8.0, (plot_w - (n_heads - 1) * GAP_PX) / n_heads)


def overview_tiles(attn: Any, max_pixels: int | None = None, *, width: int = 1100) -> OverviewTiles:
    """attn (L, H, Tq, Tk), or a sequence of L (H, Tq, Tk) layers -> the tiles of its overview (see
    `attention_overview`). A sequence is read and pooled one layer at a time, tensors in their own dtype (`max_pool_tensor`: a
    float16 run is never copied to float32); the tiles are the same."""
    layers = attn if isinstance(attn, Sequence) else None  # a list, or layers made one at a time when read
    shape = tuple(np.shape(attn[0])) if layers is not None else tuple(np.shape(attn))[1:]
    if len(shape) != 3:
        raise ValueError(f"attn must have shape (L, H, Tq, Tk); got {(len(attn), *shape)}")
    n_heads, tq, tk = shape
    grid = plan_grid(len(attn), n_heads, tq, tk, tile_pixels(width, n_heads), max_pixels)
    if layers is None:
        return OverviewTiles(grid, tile_attention(c.to_numpy(attn, np.float32), grid), tq, tk, width)
    pooled = [max_pool_tensor(x[None], grid.q_edges, grid.k_edges) if hasattr(x, "detach") else
              max_pool(c.to_numpy(x, np.float32)[None], grid.q_edges, grid.k_edges) for x in layers]  # (1, H, r, c)
    return OverviewTiles(grid, pack_tiles(np.concatenate(pooled), grid), tq, tk, width)


def attention_overview(
    attn: Any,
    query_labels: Sequence[str],
    key_labels: Sequence[str],
    head_mask: Any | None = None,
    max_pixels: int | None = None,
    *,
    title: str = "Attention, all layers x heads",
    width: int = 1100,
) -> go.Figure:
    """One tiled heatmap of attn (L, H, Tq, Tk): rows = layers, columns = heads.

    max_pixels: largest number of cells per tile side; default the tile's size in screen
    pixels at this `width`. Larger tiles are max-pooled and the figure says "downsampled".
    head_mask (L, H), 1 = on: switched-off heads are faded, framed and labelled "off".
    """
    a = c.to_numpy(attn, np.float32)
    if a.ndim == 4:
        c.check_shape("attn", a, (a.shape[0], a.shape[1], len(query_labels), len(key_labels)),
                      "(L, H, len(query_labels), len(key_labels))")
    return draw_overview(overview_tiles(a, max_pixels, width=width), query_labels, key_labels, head_mask,
                         title=title)


def draw_overview(tiles: OverviewTiles, query_labels: Sequence[str], key_labels: Sequence[str],
                  head_mask: Any | None = None, *, title: str = "Attention, all layers x heads",
                  tile_notes: Sequence[Sequence[str]] | None = None, value_name: str = c.WEIGHT) -> go.Figure:
    """The overview figure from its tiles (`overview_tiles`): nothing here looks at the full attention.

    tile_notes: (L, H) short texts ("" for none), e.g. each head's role ("ind .92"), written in the top-left
    corner of its tile. value_name: what the tiles hold (weights on 0..1; value-weighted attention,
    `common.VALUE_WEIGHTED`, on 0..its largest), named in the hover and on the colour bar.
    """
    grid, width = tiles.grid, tiles.width
    n_layers, n_heads, tq, tk = grid.n_layers, grid.n_heads, tiles.tq, tiles.tk
    if (len(query_labels), len(key_labels)) != (tq, tk):
        raise ValueError(f"labels must match the tiles' tokens ({tq}, {tk}); got ({len(query_labels)}, "
                         f"{len(key_labels)})")
    hm = np.ones((n_layers, n_heads), dtype=bool)
    if head_mask is not None:
        hm = c.to_numpy(head_mask).astype(bool)
        c.check_shape("head_mask", hm, (n_layers, n_heads), "(L, H) like attn")

    left, right, top, bottom = MARGINS["left"], MARGINS["right"], MARGINS["top"], MARGINS["bottom"]
    tile_px = tile_pixels(width, n_heads)
    q_tok = [c.escape(t) for t in c.unique_labels(query_labels)]
    k_tok = [c.escape(t) for t in c.unique_labels(key_labels)]
    y_axis, y_centres = _axis_names(grid.q_edges, grid.gap_rows, n_layers, q_tok, "layer", "query")
    x_axis, x_centres = _axis_names(grid.k_edges, grid.gap_cols, n_heads, k_tok, "head", "key")

    name = c.escape(value_name)
    value = f"max {name} in block" if grid.downsampled else name
    enc = encode(tiles.z, 0.0, c.value_range(tiles.z, value_name), name="attn")
    traces = gapped_heatmap(enc, grid, c.WEIGHT_SCALE, x_axis, y_axis, value,
                            "%{y}<br>%{x}<br>" + value + ": " + enc.hover() + "<extra></extra>")
    annotations, shapes = tile_marks.off_markers(grid, hm)
    annotations += tile_marks.tile_notes(grid, tile_notes)
    if grid.downsampled:
        # Below the grid (its axes' domain, which shrinks with a narrower page): above it would collide with
        # the head labels and axis title.
        annotations.append(dict(
            text=(f"downsampled: each tile shows {grid.tile_rows}×{grid.tile_cols} cells for {tq}×{tk} "
                  f"tokens; a cell is the max over its block (open one head for full detail)"),
            x=0, xanchor="left", y=0, yanchor="top", yshift=-6, xref="x domain", yref="y domain",
            showarrow=False, font=dict(size=11, color="#444")))
        bottom += 24
    row_px = tile_px / grid.tile_rows  # screen height of one row of cells
    height = int(top + bottom + row_px * grid.shape[0])
    n_off = int((~hm).sum())
    if n_off:
        title = f"{title} ({n_off} head{'s' if n_off != 1 else ''} switched off)"

    # The figure takes its container's width (a 12-head grid sized for `width` was cut off in a narrower page);
    # scaleanchor keeps the tiles' shape by shrinking the grid's height with its width.
    cell_ratio = row_px / ((width - left - right) / len(x_axis))  # a cell's height / width, as planned
    # The heatmap's x and y list every category in order, gaps included: the axes need no categoryarray.
    layout = dict(
        **c.base_layout(title, height, None, l=left, r=right, t=top, b=bottom),
        xaxis=dict(type="category", tickmode="array",
                   tickvals=x_centres, ticktext=[f"H{h}" for h in range(n_heads)], side="top", showgrid=False,
                   constrain="domain", title=dict(text="head (each tile: keys left → right)", standoff=4)),
        yaxis=dict(type="category", tickmode="array",
                   tickvals=y_centres, ticktext=[f"L{layer}" for layer in range(n_layers)], autorange="reversed",
                   scaleanchor="x", scaleratio=cell_ratio, constrain="domain", constraintoward="top", showgrid=False,
                   title=dict(text="layer (each tile: queries top → bottom)")),
        annotations=annotations,
        shapes=shapes,
        # word_axes: the cells' names ("layer 2 · query 5: cat") are words around tokens, said in a page's language
        meta={"overview_grid": asdict(grid), "word_axes": True},
    )
    return c.figure(traces, layout)


GAP_CODE = PERCENT + 1  # a gap cell in the percent form: drawn in the transparent top of a stretched colour scale
CLEAR = "rgba(255,255,255,0)"


def gapped_heatmap(enc: Encoded, grid: OverviewGrid, scale: list, x_axis: list[str], y_axis: list[str],
                   bar_title: str, hovertemplate: str) -> list[dict[str, Any]]:
    """The heatmap of the tiles over every cell of the axes, gaps included, and a trace that draws only its colour
    bar.

    Why gaps are cells: plotly.js draws a heatmap as one image when its cells are evenly spaced (`_islinear`), and
    brick by brick otherwise: at 1,024 tokens on 12 x 12 heads, 197,000 canvas rectangles, 0.45-0.7 s in an idle
    Chromium against 0.09 s as one image. A gap cell has no value: NaN in the exact form (no colour, no hover with
    hoverongaps=False); in the percent form (integer codes, no NaN) GAP_CODE, coloured by the transparent top of a
    scale stretched by one code, so that codes 0..100 keep their colours. Its hover label names the gap (names that
    start with a zero-width space), and the app's page script hides it (explorer.app.page.assets). A stretched scale
    would show its transparent top on the colour bar, so the bar comes from a trace without points, on the true range.
    """
    z = np.full(grid.shape, np.nan if enc.exact else GAP_CODE, dtype=enc.z.dtype)
    rows, cols = (np.arange(n * size) + np.arange(n * size) // size * gap  # axis positions of the tiles' cells
                  for n, size, gap in ((grid.n_layers, grid.tile_rows, grid.gap_rows),
                                       (grid.n_heads, grid.tile_cols, grid.gap_cols)))
    z[np.ix_(rows, cols)] = enc.z
    zmax, stretched = enc.zmax, scale
    if not enc.exact:
        zmax = GAP_CODE
        stretched = [[float(p) * (enc.zmax - enc.zmin) / (zmax - enc.zmin), col] for p, col in scale] + [[1.0, CLEAR]]
    heat = dict(type="heatmap", z=z, x=x_axis, y=y_axis, zmin=enc.zmin, zmax=zmax, colorscale=stretched,
                showscale=False, hovertemplate=hovertemplate, hoverongaps=False,
                **({} if enc.exact else {"meta": {"unit": enc.unit}}))  # codes back to values: viz.describe
    # One point at no position (plotly.js draws no colour bar for a marker colour array without values).
    bar = dict(type="scatter", x=[None], y=[None], mode="markers", hoverinfo="skip", showlegend=False,
               marker=dict(color=[enc.zmin], colorscale=scale, cmin=enc.zmin, cmax=enc.zmax, showscale=True,
                           colorbar=enc.colorbar(bar_title)))
    return [heat, bar]


def overview_grid_index(grid_or_fig: OverviewGrid | go.Figure | dict, x: Any, y: Any) -> tuple[int, int] | None:
    """Map a clicked point back to (layer, head); None for a gap.

    x, y: axis positions (column, row, gaps included; Plotly's click `pointNumber` is [row, col])
    or the category names Plotly reports as the point's x and y.
    """
    if isinstance(grid_or_fig, OverviewGrid):
        grid, x_axis, y_axis = grid_or_fig, None, None
    else:
        fig = grid_or_fig if isinstance(grid_or_fig, dict) else grid_or_fig.to_plotly_json()
        layout = fig["layout"]
        g = dict(layout["meta"]["overview_grid"])
        g["q_edges"], g["k_edges"] = tuple(g["q_edges"]), tuple(g["k_edges"])
        grid = OverviewGrid(**g)
        heat = fig["data"][0]
        x_axis, y_axis = heat["x"], heat["y"]
    col = _index(x, x_axis)
    row = _index(y, y_axis)
    if row is None or col is None:
        return None
    return grid.locate(row, col)


def _index(v: Any, names: Sequence[str] | None) -> int | None:
    if isinstance(v, str):
        if names is None:
            raise ValueError("category names need the figure, not only its OverviewGrid")
        try:
            return list(names).index(v)
        except ValueError:
            return None
    return int(round(float(v)))

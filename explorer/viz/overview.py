"""All layers x heads at once, as ONE tiled heatmap (not L*H subplots, which draw slowly).

Shapes: attn (L, H, Tq, Tk); head_mask (L, H), 1 = on. Tiles are laid out in a grid (row =
layer, column = head) inside a single z array, separated by NaN gaps that draw as background.

Size: a tile gets about `tile_px` screen pixels per side. When a tile has more tokens than
pixels, each tile is max-pooled (a spike stays visible) down to at most `max_pixels` cells per
side and the figure says "downsampled". This keeps 6x12 heads at 512 tokens under 2 MB of JSON.

Hover: both axes are category axes whose names carry the layer/query (rows) and head/key
(columns), so the hover needs no per-cell data: O(rows + columns) strings, not O(cells).

`OverviewGrid` records the geometry (also stored in `fig.layout.meta["overview_grid"]`) and
`overview_grid_index` maps a clicked cell back to (layer, head) for the app's head selector.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from explorer.viz import common as c

GAP_PX = 6  # visible gap between tiles, in screen pixels


MAX_CELLS = 240_000  # JSON budget for the whole grid: float32 base64 is ~5.3 bytes per cell


@dataclass(frozen=True)
class OverviewGrid:
    """Where each (layer, head) tile sits in the tiled z array (row/column indices).

    q_edges / k_edges: token boundaries of the cells of a tile; cell i covers tokens
    edges[i] .. edges[i+1]-1 (one token per cell unless downsampled).
    """

    n_layers: int
    n_heads: int
    q_edges: tuple[int, ...]
    k_edges: tuple[int, ...]
    gap_rows: int  # NaN rows between layers
    gap_cols: int  # NaN columns between heads

    @property
    def tile_rows(self) -> int:
        return len(self.q_edges) - 1

    @property
    def tile_cols(self) -> int:
        return len(self.k_edges) - 1

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_layers * self.tile_rows + (self.n_layers - 1) * self.gap_rows,
                self.n_heads * self.tile_cols + (self.n_heads - 1) * self.gap_cols)

    @property
    def downsampled(self) -> bool:
        return self.tile_rows < self.q_edges[-1] or self.tile_cols < self.k_edges[-1]

    def tile_origin(self, layer: int, head: int) -> tuple[int, int]:
        """(row, col) of the top-left cell of a tile."""
        return layer * (self.tile_rows + self.gap_rows), head * (self.tile_cols + self.gap_cols)

    def locate(self, row: int, col: int) -> tuple[int, int] | None:
        """(layer, head) of the tile containing cell (row, col); None for gaps or outside."""
        if row < 0 or col < 0:
            return None
        layer, r = divmod(int(row), self.tile_rows + self.gap_rows)
        head, k = divmod(int(col), self.tile_cols + self.gap_cols)
        if layer >= self.n_layers or head >= self.n_heads or r >= self.tile_rows or k >= self.tile_cols:
            return None
        return layer, head


def block_edges(n_tokens: int, n_cells: int) -> tuple[int, ...]:
    """n_cells + 1 boundaries: blocks of p+1 tokens first, then blocks of p (p = n_tokens // n_cells).

    Two block sizes in two runs let `max_pool` use reshapes (fast) instead of `reduceat`.
    """
    n_cells = max(1, min(n_tokens, n_cells))
    p, n_big = divmod(n_tokens, n_cells)
    sizes = [p + 1] * n_big + [p] * (n_cells - n_big)
    return tuple(int(e) for e in np.concatenate([[0], np.cumsum(sizes)]))


def _pool_axis(x: np.ndarray, edges: Sequence[int], axis: int) -> np.ndarray:
    """Max over the blocks given by `block_edges` along `axis` (-2 or -1)."""
    n_cells, n_tok = len(edges) - 1, edges[-1]
    if n_cells == n_tok:
        return x
    x = np.moveaxis(x, axis, 0)  # a view; block members are then strided slices of axis 0
    p = n_tok // n_cells
    split = (n_tok - p * n_cells) * (p + 1)  # tokens covered by the (p+1)-blocks
    parts = []
    for lo, hi, size in ((0, split, p + 1), (split, n_tok, p)):
        if hi > lo:
            # Element-wise max of the size members (numpy's .max over a short axis is slow).
            part = x[lo:hi:size].copy()
            for j in range(1, size):
                np.maximum(part, x[lo + j:hi:size], out=part)
            parts.append(part)
    return np.moveaxis(np.concatenate(parts, axis=0), 0, axis)


def max_pool(x: np.ndarray, q_edges: Sequence[int], k_edges: Sequence[int]) -> np.ndarray:
    """Max over blocks: (..., Tq, Tk) -> (..., len(q_edges)-1, len(k_edges)-1)."""
    return _pool_axis(_pool_axis(x, q_edges, -2), k_edges, -1)


def plan_grid(n_layers: int, n_heads: int, tq: int, tk: int, tile_px: float,
              max_pixels: int | None = None) -> OverviewGrid:
    """Cells per tile side: at most the tile's pixels (and the JSON budget), or max_pixels."""
    if max_pixels is None:
        budget = math.sqrt(MAX_CELLS / (n_layers * n_heads))
        max_pixels = int(min(tile_px, budget))
    cap = max(1, int(max_pixels))
    q_edges, k_edges = block_edges(tq, cap), block_edges(tk, cap)
    rows, cols = len(q_edges) - 1, len(k_edges) - 1
    # Gaps are whole cells, so convert the pixel gap into cells of this tile's size.
    gap_rows = max(1, round(GAP_PX * rows / tile_px))
    gap_cols = max(1, round(GAP_PX * cols / tile_px))
    return OverviewGrid(n_layers, n_heads, q_edges, k_edges, gap_rows, gap_cols)


def tile_attention(attn: np.ndarray, grid: OverviewGrid) -> np.ndarray:
    """Lay (L, H, Tq, Tk) out as one float32 z array of grid.shape with NaN gaps."""
    pooled = max_pool(attn, grid.q_edges, grid.k_edges) if grid.downsampled else attn
    z = np.full(grid.shape, np.nan, dtype=np.float32)
    for layer in range(grid.n_layers):
        for head in range(grid.n_heads):
            r, k = grid.tile_origin(layer, head)
            z[r:r + grid.tile_rows, k:k + grid.tile_cols] = pooled[layer, head]
    return z


def _axis_names(edges: Sequence[int], gap: int, n_tiles: int, labels: list[str],
                tile_word: str, tok_word: str) -> tuple[list[str], list[str]]:
    """Unique category names for every row (or column) and the tick name at each tile centre."""
    names: list[str] = []
    centres: list[str] = []
    tile_len = len(edges) - 1
    for t in range(n_tiles):
        for i in range(tile_len):
            lo, hi = edges[i], edges[i + 1] - 1
            if lo == hi:
                tok = f"{tok_word} {lo}: {labels[lo]}"
            else:
                plural = "queries" if tok_word == "query" else f"{tok_word}s"
                tok = f"{plural} {lo}–{hi}: {labels[lo]} … {labels[hi]}"
            names.append(f"{tile_word} {t} · {tok}")
            if i == tile_len // 2:
                centres.append(names[-1])
        if t < n_tiles - 1:
            names.extend(f"\u200b{tile_word} {t} gap {g}" for g in range(gap))  # never shown
    return names, centres


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
    if a.ndim != 4:
        raise ValueError(f"attn must have shape (L, H, Tq, Tk); got {tuple(a.shape)}")
    n_layers, n_heads, tq, tk = a.shape
    c.check_shape("attn", a, (n_layers, n_heads, len(query_labels), len(key_labels)),
                  "(L, H, len(query_labels), len(key_labels))")
    hm = np.ones((n_layers, n_heads), dtype=bool)
    if head_mask is not None:
        hm = c.to_numpy(head_mask).astype(bool)
        c.check_shape("head_mask", hm, (n_layers, n_heads), "(L, H) like attn")

    left, right, top, bottom = 70, 90, 100, 20
    plot_w = width - left - right
    tile_px = max(8.0, (plot_w - (n_heads - 1) * GAP_PX) / n_heads)  # square tiles on screen
    grid = plan_grid(n_layers, n_heads, tq, tk, tile_px, max_pixels)
    z = tile_attention(a, grid)

    q_tok = [c.escape(t) for t in c.unique_labels(query_labels)]
    k_tok = [c.escape(t) for t in c.unique_labels(key_labels)]
    y_names, y_centres = _axis_names(grid.q_edges, grid.gap_rows, n_layers, q_tok, "layer", "query")
    x_names, x_centres = _axis_names(grid.k_edges, grid.gap_cols, n_heads, k_tok, "head", "key")

    value = "max weight in block" if grid.downsampled else "weight"
    heat = dict(
        type="heatmap", z=z, x=x_names, y=y_names, zmin=0.0, zmax=1.0, colorscale=c.WEIGHT_SCALE,
        colorbar=c.weight_colorbar(value), hoverongaps=False,
        hovertemplate="%{y}<br>%{x}<br>" + value + ": %{z:.3f}<extra></extra>",
    )

    annotations: list[dict[str, Any]] = []
    shapes: list[dict[str, Any]] = []
    if grid.downsampled:
        # Below the grid: above it would collide with the head labels and axis title.
        annotations.append(dict(
            text=(f"downsampled: each tile shows {grid.tile_rows}×{grid.tile_cols} cells for {tq}×{tk} "
                  f"tokens; a cell is the max over its block (open one head for full detail)"),
            x=0, xanchor="left", y=0, yanchor="top", yshift=-6, xref="paper", yref="paper",
            showarrow=False, font=dict(size=11, color="#444")))
        bottom += 24
    for layer, head in zip(*np.nonzero(~hm)):
        r, k = grid.tile_origin(int(layer), int(head))
        # Category axes place shapes by category index; cells span index +- 0.5.
        box = dict(x0=k - 0.5, x1=k + grid.tile_cols - 0.5, y0=r - 0.5, y1=r + grid.tile_rows - 0.5,
                   xref="x", yref="y")
        shapes.append(dict(type="rect", **box, fillcolor="rgba(255,255,255,0.6)",
                           line=dict(color=c.OFF_COLOR, width=2, dash="dot")))
        annotations.append(dict(text="<b>off</b>", x=k + (grid.tile_cols - 1) / 2,
                                y=r + (grid.tile_rows - 1) / 2, xref="x", yref="y", showarrow=False,
                                font=dict(size=12, color="#222"), bgcolor="rgba(255,255,255,0.8)"))
    row_px = tile_px / grid.tile_rows  # screen height of one row of cells
    height = int(top + bottom + row_px * grid.shape[0])
    n_off = int((~hm).sum())
    if n_off:
        title = f"{title} ({n_off} head{'s' if n_off != 1 else ''} switched off)"

    layout = dict(
        **c.base_layout(title, height, width, l=left, r=right, t=top, b=bottom),
        xaxis=dict(type="category", tickmode="array", tickvals=x_centres,
                   ticktext=[f"H{h}" for h in range(n_heads)], side="top", showgrid=False,
                   title=dict(text="head (each tile: keys left → right)", standoff=4)),
        yaxis=dict(type="category", tickmode="array", tickvals=y_centres,
                   ticktext=[f"L{l}" for l in range(n_layers)], autorange="reversed", showgrid=False,
                   title=dict(text="layer (each tile: queries top → bottom)")),
        annotations=annotations,
        shapes=shapes,
        meta={"overview_grid": asdict(grid)},
    )
    return c.figure([heat], layout)


def overview_grid_index(grid_or_fig: OverviewGrid | go.Figure | dict, x: Any, y: Any) -> tuple[int, int] | None:
    """Map a clicked point back to (layer, head); None for a gap.

    x, y: cell indices (column, row; Plotly's click `pointNumber` is [row, col]) or the category
    names Plotly reports as the point's x and y.
    """
    if isinstance(grid_or_fig, OverviewGrid):
        grid, names = grid_or_fig, None
    else:
        fig = grid_or_fig if isinstance(grid_or_fig, dict) else grid_or_fig.to_plotly_json()
        g = dict(fig["layout"]["meta"]["overview_grid"])
        g["q_edges"], g["k_edges"] = tuple(g["q_edges"]), tuple(g["k_edges"])
        grid = OverviewGrid(**g)
        names = fig["data"][0]
    col = _index(x, names["x"] if names else None)
    row = _index(y, names["y"] if names else None)
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

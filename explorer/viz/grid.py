"""The all-heads overview's geometry: where each (layer, head) tile sits on the figure's axes, gaps between tiles
included, and how many cells a tile gets (`plan_grid`). Shared by the overview (explorer.viz.overview) and the marks
drawn on its tiles (explorer.viz.tile_marks).

Shapes: attn (L, H, Tq, Tk); a tile is (rows, cols) cells, one token per cell unless pooled; the tiles packed edge
to edge are (L * rows, H * cols).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from explorer.viz.pool import block_edges, max_pool

GAP_PX = 6  # visible gap between tiles, in screen pixels
MAX_CELLS = 200_000  # cells of the whole grid: ~270 kB of JSON at one byte per cell (base64)


@dataclass(frozen=True)
class OverviewGrid:
    """Where each (layer, head) tile sits on the axes (row/column positions, gaps included).

    q_edges / k_edges: token boundaries of the cells of a tile; cell i covers tokens
    edges[i] .. edges[i+1]-1 (one token per cell unless downsampled). The z array holds the
    tiles without the gaps: `packed_shape`.
    """

    n_layers: int
    n_heads: int
    q_edges: tuple[int, ...]
    k_edges: tuple[int, ...]
    gap_rows: int  # empty axis rows between layers
    gap_cols: int  # empty axis columns between heads

    @property
    def tile_rows(self) -> int:
        return len(self.q_edges) - 1

    @property
    def tile_cols(self) -> int:
        return len(self.k_edges) - 1

    @property
    def packed_shape(self) -> tuple[int, int]:
        """Shape of z: the tiles edge to edge."""
        return self.n_layers * self.tile_rows, self.n_heads * self.tile_cols

    @property
    def shape(self) -> tuple[int, int]:
        """Rows x columns on the axes, gaps included."""
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
    """Lay (L, H, Tq, Tk) out as one z array of grid.packed_shape: tile (l, h) at rows l*r.., columns h*c.."""
    return pack_tiles(max_pool(attn, grid.q_edges, grid.k_edges) if grid.downsampled else attn, grid)


def pack_tiles(pooled: np.ndarray, grid: OverviewGrid) -> np.ndarray:
    """(L, H, r, c) tiles, already pooled to the grid's cells -> one z array of grid.packed_shape."""
    # (L, H, r, c) -> (L, r, H, c) -> (L*r, H*c)
    return np.ascontiguousarray(pooled.transpose(0, 2, 1, 3)).reshape(grid.packed_shape)

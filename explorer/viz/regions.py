"""Cells of a boolean grid as rectangles, drawn as one filled SVG path over a heatmap.

Shapes: cells (R, C) bool, True = covered (e.g. masked cells of a head view). Masks are structured
(padding columns, a causal triangle, a window band), so their True cells form few runs per row: a
path of rectangles costs O(runs) bytes (a causal mask of 1,024 tokens: ~30 kB) where a second
heatmap of one byte per cell would cost 1.4 MB. When the cells are scattered (more runs than the
path can beat) the cover is that second heatmap instead, transparent where a cell is not covered.

Coordinates are category indices (cell i spans i - 0.5 .. i + 0.5 on a category axis; plotly places
shape coordinates by index even where a category's name looks like a number).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

PATH_BYTES_PER_RECT = 30  # "M12.5 -0.5H40.5V3.5H12.5Z": the path's cost per rectangle, about
CELL_BYTES = 4 / 3  # one uint8 per cell, base64


def runs(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, first column, end column) of every horizontal run of True cells, in row order."""
    padded = np.zeros((cells.shape[0], cells.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = cells
    step = np.diff(padded, axis=1)  # (R, C + 1): +1 where a run starts, -1 after it ends
    r0, c0 = np.nonzero(step == 1)
    _, c1 = np.nonzero(step == -1)  # same rows, same order: run k is (r0[k], c0[k], c1[k])
    return r0, c0, c1


def rectangles(cells: np.ndarray) -> list[tuple[int, int, int, int]]:
    """(row0, row1, col0, col1), end-exclusive: row runs merged with equal runs in the rows below."""
    r, c0, c1 = runs(cells)
    out: list[tuple[int, int, int, int]] = []
    open_: dict[tuple[int, int], int] = {}  # (col0, col1) -> first row of a rectangle still growing
    bounds = np.searchsorted(r, np.arange(cells.shape[0] + 1))
    for row in range(cells.shape[0] + 1):
        here = set() if row == cells.shape[0] else \
            {(int(a), int(b)) for a, b in zip(c0[bounds[row]:bounds[row + 1]], c1[bounds[row]:bounds[row + 1]])}
        for span in [s for s in open_ if s not in here]:
            out.append((open_.pop(span), row, *span))
        for span in here:
            open_.setdefault(span, row)
    return sorted(out)


def path(rects: Sequence[tuple[int, int, int, int]]) -> str:
    """One SVG path of closed rectangles in category-index coordinates."""
    return "".join(f"M{c0 - 0.5:g} {r0 - 0.5:g}H{c1 - 0.5:g}V{r1 - 0.5:g}H{c0 - 0.5:g}Z" for r0, r1, c0, c1 in rects)


def cover(cells: Any, x: Sequence[str], y: Sequence[str], color: str, name: str = "cover"
          ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(shapes, traces) drawing the True cells of `cells` (R, C) in `color` over a heatmap on (x, y).

    Nothing when no cell is covered; otherwise one path shape, or one transparent/`color` heatmap
    trace (no hover) when the path would cost more bytes than a byte per cell.
    """
    m = np.asarray(cells, dtype=bool)
    if not m.any():
        return [], []
    n_runs = int(np.count_nonzero(np.diff(m.astype(np.int8), axis=1, prepend=0) == 1))
    if n_runs * PATH_BYTES_PER_RECT <= m.size * CELL_BYTES:
        shape = dict(type="path", path=path(rectangles(m)), xref="x", yref="y", fillcolor=color,
                     line=dict(width=0), layer="above", name=name)
        return [shape], []
    trace = dict(type="heatmap", z=m.astype(np.uint8), x=list(x), y=list(y), zmin=0, zmax=1, showscale=False,
                 colorscale=[[0.0, "rgba(0,0,0,0)"], [1.0, color]], hoverinfo="skip", name=name)
    return [], [trace]

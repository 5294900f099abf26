"""What the overview draws on its tiles besides the attention: the frame and "off" of a switched-off head, and
short notes (e.g. each head's role, "ind .92") in a tile's top-left corner. Positions are in the overview's
axis coordinates (`OverviewGrid.tile_origin`; a cell spans its position +- 0.5).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from explorer.viz import common as c
from explorer.viz.grid import OverviewGrid


def off_markers(grid: OverviewGrid, head_on: np.ndarray) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(annotations, shapes): a dotted white-washed frame and "off" on each switched-off head's tile."""
    annotations: list[dict[str, Any]] = []
    shapes: list[dict[str, Any]] = []
    for layer, head in zip(*np.nonzero(~head_on)):
        r, k = grid.tile_origin(int(layer), int(head))
        # Category axes place shapes by category position; cells span position +- 0.5.
        box = dict(x0=k - 0.5, x1=k + grid.tile_cols - 0.5, y0=r - 0.5, y1=r + grid.tile_rows - 0.5,
                   xref="x", yref="y")
        shapes.append(dict(type="rect", **box, fillcolor="rgba(255,255,255,0.6)",
                           line=dict(color=c.OFF_COLOR, width=2, dash="dot")))
        annotations.append(dict(text="<b>off</b>", x=k + (grid.tile_cols - 1) / 2,
                                y=r + (grid.tile_rows - 1) / 2, xref="x", yref="y", showarrow=False,
                                font=dict(size=12, color="#222"), bgcolor="rgba(255,255,255,0.8)"))
    return annotations, shapes


def tile_notes(grid: OverviewGrid, notes: Sequence[Sequence[str]] | None) -> list[dict[str, Any]]:
    """One small boxed text in the top-left corner of each tile with a note (text, escaped, never HTML)."""
    if notes is None:
        return []
    if len(notes) != grid.n_layers or any(len(row) != grid.n_heads for row in notes):
        raise ValueError(f"tile_notes must be {grid.n_layers} rows of {grid.n_heads} texts (L, H)")
    out = []
    for layer, row in enumerate(notes):
        for head, text in enumerate(row):
            if not text:
                continue
            r, k = grid.tile_origin(layer, head)
            out.append(dict(text=c.escape(str(text)), x=k - 0.5, y=r - 0.5, xref="x", yref="y", xanchor="left",
                            yanchor="top", xshift=1, yshift=-1, showarrow=False, font=dict(size=10, color="#111"),
                            bgcolor="rgba(255,255,255,0.85)", borderpad=1))
    return out

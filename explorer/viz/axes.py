"""Category axes of token x token heatmaps: unique escaped names, ticks (every token up to 64 a side, thinned
beyond), pooled blocks.

Shapes: a view of Tq query tokens x Tk key tokens, drawn as (rows x columns) cells. A cell is one
token, or, when a side has more tokens than cells, a block of neighbouring tokens
(`pool.block_edges`) whose name says so ("tokens 12–15: the … cat").

How many cells: at most `max_side` (default `pool.FULL_SIDE`, 1,024) per side, and never more
columns than the plot is wide in pixels (at `width`, or `common.DEFAULT_WIDTH` when the caller
does not say): plotly draws a heatmap whose cells are thinner than a pixel by dropping or fading
some of them, so a one-token feature (the first token's column, say) could vanish. Rows never need
pooling for that: the figure grows to at least a pixel per row (`common.cell_figure_height`).
So a 1,024-token head view has 1,024 rows and as many columns as its width allows (all 1,024 at a
width of ~1,250 px); a block shows its largest value, so a spike stays visible.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from explorer.viz import common as c
from explorer.viz.pool import FULL_SIDE, Reduce, block_edges, pool

QUERY_AXIS = "query (attending)"
KEY_AXIS = "key (attended to)"


def block_name(lo: int, hi: int, labels: Sequence[str], word: str, plural: str) -> str:
    """Name of the cell covering tokens lo..hi (inclusive): "query 5: the" or "queries 0–2: a … c"."""
    if lo == hi:
        return f"{word} {lo}: {labels[lo]}"
    return f"{plural} {lo}–{hi}: {labels[lo]} … {labels[hi]}"


def cell_names(edges: Sequence[int], labels: Sequence[str]) -> list[str]:
    """Category names of the cells of one pooled side (labels escaped and unique)."""
    return [block_name(lo, hi - 1, labels, "token", "tokens") for lo, hi in zip(edges[:-1], edges[1:])]


class TokenAxes:
    """Category axes for a (query x key) token grid: unique escaped names, thinned ticks, size.

    `layout(title)` gives the layout dict with queries on y (top to bottom, reading order) and
    keys on x; `q_names` / `k_names` are the trace's y / x (one per cell). `pool(values)` brings a
    (Tq, Tk) array to the cells; `pooled` says whether a cell may hold more than one token.
    """

    def __init__(self, query_labels: Sequence[Any], key_labels: Sequence[Any], *,
                 x_title: str, y_title: str, width: int | None = None, max_side: int = FULL_SIDE) -> None:
        self.q_tok, self.k_tok = c.unique_labels(query_labels), c.unique_labels(key_labels)
        q_esc, k_esc = [c.escape(t) for t in self.q_tok], [c.escape(t) for t in self.k_tok]
        self.width = width
        self.left = c.label_margin(self.q_tok)
        self.top = 80
        self.bottom = c.label_margin(self.k_tok, per_char_px=5.0)  # labels slanted at 45 degrees
        self.right = 40
        self.plot_w = (width or c.DEFAULT_WIDTH) - self.left - self.right - c.COLORBAR_PX
        self.q_edges = block_edges(len(self.q_tok), max_side)
        self.k_edges = block_edges(len(self.k_tok), min(max_side, max(1, self.plot_w)))
        rows_pooled, cols_pooled = len(self.q_edges) - 1 < len(self.q_tok), len(self.k_edges) - 1 < len(self.k_tok)
        self.pooled = rows_pooled or cols_pooled
        self.q_names = cell_names(self.q_edges, q_esc) if rows_pooled else q_esc
        self.k_names = cell_names(self.k_edges, k_esc) if cols_pooled else k_esc
        self.height = c.cell_figure_height(len(self.q_edges) - 1, self.top, self.bottom)
        self.x_title, self.y_title = x_title, y_title

    def layout(self, title: str, **extra: Any) -> dict[str, Any]:
        """The figure's layout; pooled, its meta says the cells' names are words around tokens ("tokens 0–15: a …
        p"), which a page in another language says in it."""
        if self.pooled:
            extra["meta"] = {**extra.get("meta", {}), "word_axes": True}
        plot_w = self.plot_w
        plot_h = self.height - self.top - self.bottom
        n_k = len(self.k_names)
        k_ticks = [self.k_tok[lo] for lo in self.k_edges[:-1]]  # a pooled cell's tick: its first token
        q_ticks = [self.q_tok[lo] for lo in self.q_edges[:-1]]
        return dict(
            **c.base_layout(title, self.height, self.width, l=self.left, b=self.bottom, t=self.top, r=self.right),
            # every token labelled up to EVERY_TICK_UP_TO a side; standing upright when slanted ones would touch
            xaxis=dict(title=dict(text=self.x_title), showgrid=False,
                       tickangle=0 if n_k <= 6 else -45 if plot_w / n_k >= 1.5 * c.TICK_SPACING_PX else -90,
                       **c.category_ticks(self.k_names, k_ticks, plot_w, c.EVERY_TICK_UP_TO)),
            yaxis=dict(title=dict(text=self.y_title), autorange="reversed", showgrid=False,
                       **c.category_ticks(self.q_names, q_ticks, plot_h, c.EVERY_TICK_UP_TO)),
            **extra,
        )

    def check(self, name: str, arr: np.ndarray) -> None:
        c.check_shape(name, arr, (len(self.q_tok), len(self.k_tok)), "(len(query_labels), len(key_labels))")

    def pool(self, values: np.ndarray, how: Reduce = "max") -> np.ndarray:
        """(..., Tq, Tk) -> (..., cells on y, cells on x); unchanged when nothing is pooled."""
        return pool(values, self.q_edges, self.k_edges, how) if self.pooled else values

    def pooled_note(self, what: str) -> str:
        """Hover suffix naming the reduction when cells are blocks (e.g. " (max in block)")."""
        return f" ({what} in block)" if self.pooled else ""

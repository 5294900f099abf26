"""Positional encodings' figures (the sinusoidal table itself: explorer.sinusoid, exported as viz.sinusoidal_table).

Shapes: table (T positions, D model width); works for a learned embedding table as well.
Heatmap values go through `encode` (exact float32 when small, one byte per cell beyond).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import plotly.graph_objects as go

from explorer.viz import common as c
from explorer.viz.encode import encode, symmetric_range

CURVE_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442")  # Okabe-Ito


def _table(table: Any) -> np.ndarray:
    t = c.to_numpy(table, np.float32)
    if t.ndim != 2:
        raise ValueError(f"table must have shape (positions, d_model); got {tuple(t.shape)}")
    return t


def positional_heatmap(table: Any, title: str = "Positional encoding", *, width: int | None = None) -> go.Figure:
    """Position (y, top to bottom) x dimension (x) heatmap, diverging colours centred on 0."""
    t = _table(table)
    n_pos, d = t.shape
    m = symmetric_range(t)
    height = c.clamp(150 + 6 * n_pos, 360, 760)
    heat = encode(t, -m, m, name="table").trace(None, None, c.DIVERGING_SCALE, "value",
                                                 "position %{y}, dimension %{x}: {value}")
    return c.figure([heat], dict(
        **c.base_layout(f"{title} ({n_pos} positions × {d} dimensions)", height, width),
        xaxis=dict(title=dict(text="dimension"), showgrid=False, zeroline=False),
        yaxis=dict(title=dict(text="position"), autorange="reversed", showgrid=False, zeroline=False),
    ))


def position_similarity(table: Any, metric: Literal["cosine", "dot"] = "cosine",
                        title: str | None = None, *, width: int | None = None) -> go.Figure:
    """Position x position similarity of the encoding vectors (cosine or dot product)."""
    t = _table(table).astype(np.float64)
    if metric == "cosine":
        norms = np.linalg.norm(t, axis=1, keepdims=True)
        unit = t / np.where(norms == 0, 1.0, norms)  # a zero vector has similarity 0
        s = unit @ unit.T
        m = 1.0
    elif metric == "dot":
        s = t @ t.T
        m = symmetric_range(s)
    else:
        raise ValueError(f"metric must be 'cosine' or 'dot'; got {metric!r}")
    n_pos = t.shape[0]
    size = c.clamp(160 + 5 * n_pos, 500, 760)
    heat = encode(s, -m, m, name="similarity").trace(None, None, c.DIVERGING_SCALE, metric,
                                                      "positions %{y} and %{x}: {value}")
    return c.figure([heat], dict(
        # Square plot: default width = height + room for the axis title and colour bar.
        **c.base_layout(title or f"Similarity of positions ({metric})", size, width or size + 110),
        xaxis=dict(title=dict(text="position"), showgrid=False, zeroline=False, constrain="domain"),
        yaxis=dict(title=dict(text="position"), autorange="reversed", showgrid=False, zeroline=False,
                   scaleanchor="x", constrain="domain"),
    ))


def default_dims(d_model: int) -> list[int]:
    """A few telling dimensions: fast (first pair), middle and slow (last)."""
    picks = [0, 1, d_model // 4, d_model // 2, d_model - 1]
    return sorted({p for p in picks if 0 <= p < d_model})


def positional_curves(table: Any, dims: Sequence[int] | None = None, title: str = "Positional encoding by dimension",
                      *, width: int | None = None) -> go.Figure:
    """Selected dimensions as lines over position (fast dimensions oscillate, slow ones drift)."""
    t = _table(table)
    n_pos, d = t.shape
    dims = default_dims(d) if dims is None else [int(i) for i in dims]
    bad = [i for i in dims if not 0 <= i < d]
    if bad:
        raise ValueError(f"dims {bad} out of range for d_model = {d}")
    pos = np.arange(n_pos)
    lines = [
        dict(type="scatter", x=pos, y=t[:, i], mode="lines", name=f"dim {i}",
             hovertemplate=f"dim {i}, " + "position %{x}: %{y:.3f}<extra></extra>")
        for i in dims
    ]
    return c.figure(lines, dict(
        **c.base_layout(title, 420, width),
        xaxis=dict(title=dict(text="position")),
        yaxis=dict(title=dict(text="value")),
        legend=dict(title=dict(text="dimension")),
        colorway=list(CURVE_COLORS),
    ))

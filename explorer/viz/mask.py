"""The attention mask itself: which query may attend to which key.

Shape: mask (Tq, Tk) bool, True = may attend (the one convention used in `explorer`).
Two discrete colours (allowed / blocked) share one colour axis whose bar reads like a legend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go  # noqa: F401  (return type)

from explorer.viz import common as c
from explorer.viz.attention import KEY_AXIS, QUERY_AXIS

# Two solid bands: [0, 0.5) blocked, [0.5, 1] allowed.
MASK_SCALE = [[0.0, c.BLOCKED_COLOR], [0.5, c.BLOCKED_COLOR], [0.5, c.ALLOWED_COLOR], [1.0, c.ALLOWED_COLOR]]


def mask_heatmap(
    mask: Any,
    query_labels: Sequence[str],
    key_labels: Sequence[str],
    title: str = "Attention mask",
    *,
    width: int | None = None,
) -> go.Figure:
    """Allowed (dark blue) / blocked (light grey) cells, hover says which."""
    m = c.to_numpy(mask)
    ax = c.TokenAxes(query_labels, key_labels, x_title=KEY_AXIS, y_title=QUERY_AXIS, width=width)
    ax.check("mask", m)
    m = m.astype(bool)
    # One trace per state so the hover can name it without a per-cell text array; the other state's
    # cells are NaN gaps (float32). A state no cell is in gets no trace, and a mask with one state
    # needs no gaps: its single trace is 1 byte per cell (uint8) instead of 4.
    states = [(1, "allowed", m), (0, "blocked", ~m)]
    states = [(value, name, where) for value, name, where in states if where.any()]
    common = dict(type="heatmap", x=ax.k_names, y=ax.q_names, coloraxis="coloraxis", hoverongaps=False)
    traces = [
        dict(z=np.full(m.shape, value, np.uint8) if len(states) == 1
             else np.where(where, float(value), np.nan).astype(np.float32),
             name=name, hovertemplate=f"%{{y}} → %{{x}}: {name}<extra></extra>", **common)
        for value, name, where in states
    ]
    n_ok = int(m.sum())
    return c.figure(traces, ax.layout(
        f"{title} ({n_ok} of {m.size} allowed)",
        coloraxis=dict(cmin=0.0, cmax=1.0, colorscale=MASK_SCALE, colorbar=dict(
            title=dict(text="mask", side="right"), tickmode="array", tickvals=[0.25, 0.75],
            ticktext=["blocked", "allowed"], thickness=14, len=0.4)),
    ))

"""The attention mask itself: which query may attend to which key.

Shape: mask (Tq, Tk) bool, True = may attend (the one convention used in `explorer`).
One heatmap of the mask as 0/1 (one byte per cell; never pooled, a block of a mask has no one
state). Two discrete colours (allowed / blocked) on a colour axis whose bar reads like a legend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go  # noqa: F401  (return type)

from explorer.viz import common as c
from explorer.viz.axes import KEY_AXIS, QUERY_AXIS, TokenAxes

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
    """Allowed (dark blue, 1) / blocked (light grey, 0) cells; the hover gives the mask value."""
    m = c.to_numpy(mask)
    ax = TokenAxes(query_labels, key_labels, x_title=KEY_AXIS, y_title=QUERY_AXIS, width=width,
                   max_side=max(len(query_labels), len(key_labels), 1))
    ax.check("mask", m)
    m = m.astype(bool)
    trace = dict(type="heatmap", z=m.astype(np.uint8), x=ax.k_names, y=ax.q_names, coloraxis="coloraxis",
                 hovertemplate="%{y} → %{x}: mask %{z} (1 = may attend, 0 = blocked)<extra></extra>", name="mask")
    n_ok = int(m.sum())
    return c.figure([trace], ax.layout(
        f"{title} ({n_ok} of {m.size} allowed)",
        coloraxis=dict(cmin=0.0, cmax=1.0, colorscale=MASK_SCALE, colorbar=dict(
            title=dict(text="mask", side="right"), tickmode="array", tickvals=[0.25, 0.75],
            ticktext=["blocked (0)", "allowed (1)"], thickness=14, len=0.4)),
    ))

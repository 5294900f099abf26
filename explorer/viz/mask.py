"""The attention mask itself: which query may attend to which key.

Shape: mask (Tq, Tk) bool, True = may attend (the one convention used in `explorer`).
One heatmap of the mask as 0/1, one byte per cell, in two colours (allowed / blocked) on a colour
axis whose bar reads like a legend. When the view has more keys than pixels (`axes.TokenAxes`), a
cell covers a block of tokens and shows the share of it that is allowed, in percent (a colour
between the two), so a single blocked token still shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go  # noqa: F401  (return type)

from explorer.viz import common as c
from explorer.viz.axes import KEY_AXIS, QUERY_AXIS, TokenAxes

# Two solid bands: [0, 0.5) blocked, [0.5, 1] allowed; pooled blocks: a gradient between the two.
MASK_SCALE = [[0.0, c.BLOCKED_COLOR], [0.5, c.BLOCKED_COLOR], [0.5, c.ALLOWED_COLOR], [1.0, c.ALLOWED_COLOR]]
SHARE_SCALE = [[0.0, c.BLOCKED_COLOR], [1.0, c.ALLOWED_COLOR]]


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
    ax = TokenAxes(query_labels, key_labels, x_title=KEY_AXIS, y_title=QUERY_AXIS, width=width)
    ax.check("mask", m)
    m = m.astype(bool)
    if ax.pooled:
        z = np.rint(100 * ax.pool(m, "mean")).astype(np.uint8)  # percent of the block allowed
        hover, top, scale = "≈ %{z}% of the block allowed", 100.0, SHARE_SCALE
        ticks = dict(tickvals=[0, 50, 100], ticktext=["blocked (0)", "half", "allowed (1)"])
    else:
        z = m.astype(np.uint8)
        hover, top, scale = "mask %{z} (1 = may attend, 0 = blocked)", 1.0, MASK_SCALE
        ticks = dict(tickvals=[0.25, 0.75], ticktext=["blocked (0)", "allowed (1)"])
    trace = dict(type="heatmap", z=z, x=ax.k_names, y=ax.q_names, coloraxis="coloraxis",
                 hovertemplate=f"%{{y}} → %{{x}}: {hover}<extra></extra>", name="mask",
                 **({"meta": {"unit": 1.0}} if ax.pooled else {}))  # percent codes: a share (viz.describe)
    n_ok = int(m.sum())
    return c.figure([trace], ax.layout(
        f"{title} ({n_ok} of {m.size} allowed)",
        coloraxis=dict(cmin=0.0, cmax=top, colorscale=scale, colorbar=dict(
            title=dict(text="mask", side="right"), tickmode="array", thickness=14, len=0.4, **ticks)),
    ))

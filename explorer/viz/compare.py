"""Comparing two attention maps of the same tokens, e.g. with and without a mask or a head.

Shapes: a, b (Tq, Tk). The difference a - b is drawn on a diverging scale centred on 0 with a
symmetric range, so equal magnitudes of more and less attention look equally strong.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go  # noqa: F401  (return type)

from explorer.viz import common as c
from explorer.viz.attention import KEY_AXIS, QUERY_AXIS


def difference_heatmap(
    a: Any,
    b: Any,
    query_labels: Sequence[str],
    key_labels: Sequence[str],
    title: str = "Attention difference",
    *,
    a_name: str = "A",
    b_name: str = "B",
    width: int | None = None,
) -> go.Figure:
    """Heatmap of a - b (red: more attention in a, blue: more in b), zmid = 0."""
    x, y = c.to_numpy(a, np.float32), c.to_numpy(b, np.float32)
    ax = c.TokenAxes(query_labels, key_labels, x_title=KEY_AXIS, y_title=QUERY_AXIS, width=width)
    ax.check("a", x)
    ax.check("b", y)
    d = (x - y).astype(np.float32)
    finite = d[np.isfinite(d)]
    m = float(np.abs(finite).max()) if finite.size else 0.0
    m = m if m > 0 else 1.0  # identical maps: keep a valid, symmetric range
    an, bn = c.escape(a_name), c.escape(b_name)
    heat = dict(
        type="heatmap", z=d, x=ax.k_names, y=ax.q_names, zmin=-m, zmax=m, zmid=0.0, colorscale=c.DIVERGING_SCALE,
        colorbar=c.weight_colorbar(f"{an} − {bn}"), hoverongaps=False,
        hovertemplate="%{y} → %{x}: " + f"{an} − {bn}" + " = %{z:+.3f}<extra></extra>",
    )
    return c.figure([heat], ax.layout(title, annotations=[
        c.caption(f"red: more attention in {an}; blue: more in {bn}; white: no change")]))

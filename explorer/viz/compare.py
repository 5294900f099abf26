"""Comparing two attention maps of the same tokens, e.g. with and without a mask or a head.

Shapes: a, b (Tq, Tk). The difference a - b is drawn on a diverging scale centred on 0 with a
symmetric range, so equal magnitudes of more and less attention look equally strong. Beyond
`pool.FULL_SIDE` tokens a side, a cell shows the change of largest magnitude in its block.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go  # noqa: F401  (return type)

from explorer.viz import common as c
from explorer.viz.axes import KEY_AXIS, QUERY_AXIS, TokenAxes
from explorer.viz.encode import encode, symmetric_range
from explorer.viz.pool import FULL_SIDE


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
    max_side: int = FULL_SIDE,
    value_name: str = "attention",
) -> go.Figure:
    """Heatmap of a - b (red: more attention in a, blue: more in b), zmid = 0; `value_name` names what a and b
    hold (e.g. `common.VALUE_WEIGHTED`) in the caption and hover."""
    x, y = c.to_numpy(a, np.float32), c.to_numpy(b, np.float32)
    ax = TokenAxes(query_labels, key_labels, x_title=KEY_AXIS, y_title=QUERY_AXIS, width=width, max_side=max_side)
    ax.check("a", x)
    ax.check("b", y)
    d = ax.pool((x - y).astype(np.float32), "absmax")
    m = symmetric_range(d)  # identical maps: a valid, symmetric range of ±1
    an, bn = c.escape(a_name), c.escape(b_name)
    enc = encode(d, -m, m, name="a - b")
    what = c.escape(value_name)
    measured = "" if value_name == "attention" else f" of {what}"
    heat = enc.trace(ax.k_names, ax.q_names, c.DIVERGING_SCALE, f"{an} − {bn}",
                     "%{y} → %{x}: {value}" + f" ({an} − {bn}{measured})" + ax.pooled_note("largest change"),
                     fmt="+.3f")
    return c.figure([heat], ax.layout(title, annotations=[
        c.caption(f"red: more {what} in {an}; blue: more in {bn}; white: no change")]))

"""Per-token values of one sentence as a bar chart: how surprised a language model is by each token.

Shapes: N tokens with a value (for surprisal, every token but the first: the first has no prediction).
Values are in nats and shown in bits (1 bit = a probability halved); a toggled run's values, if given, are
drawn as markers over the baseline's bars, so the change per token reads at a glance. No model runs here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from explorer.viz import common as c

BASELINE_COLOR = "#0072B2"
TOGGLED_COLOR = "#D55E00"


def surprisal_chart(labels: Sequence[Any], baseline: Any, toggled: Any | None = None, *,
                    title: str = "Surprisal of each token", width: int | None = None) -> go.Figure:
    """labels (N,) of the predicted tokens; baseline and toggled (N,) nats (NaN = no prediction)."""
    base = c.to_numpy(baseline, np.float64) / math.log(2)
    if base.shape != (len(labels),):
        raise ValueError(f"baseline must have one value per label ({len(labels)}); got shape {base.shape}")
    names = c.display_labels(labels)
    step = c.tick_step(len(names), (width or c.DEFAULT_WIDTH) - 120)
    ticks = list(range(0, len(names), step))
    traces = [dict(type="bar", x=names, y=base, name="without toggles", marker=dict(color=BASELINE_COLOR),
                   customdata=np.exp2(-base), hovertemplate="%{x}: %{y:.2f} bits (p = %{customdata:.3f})"
                                                            "<extra>without toggles</extra>")]
    if toggled is not None:
        tog = c.to_numpy(toggled, np.float64) / math.log(2)
        if tog.shape != base.shape:
            raise ValueError(f"toggled must have the baseline's shape {base.shape}; got {tog.shape}")
        traces.append(dict(type="scatter", mode="markers", x=names, y=tog, name="with toggles",
                           marker=dict(color=TOGGLED_COLOR, symbol="diamond", size=8), customdata=np.exp2(-tog),
                           hovertemplate="%{x}: %{y:.2f} bits (p = %{customdata:.3f})<extra>with toggles</extra>"))
    mean = float(np.nanmean(base)) if np.isfinite(base).any() else float("nan")
    return c.figure(traces, dict(
        **c.base_layout(f"{c.escape(title)} (mean {mean:.2f} bits)", 300, width, b=90),
        xaxis=dict(type="category", tickmode="array", tickvals=[names[i] for i in ticks],
                   ticktext=[c.escape(c.short(str(labels[i]))) for i in ticks], tickangle=-45,
                   tickfont=dict(size=c.TICK_FONT_SIZE)),
        yaxis=dict(title=dict(text="bits (−log₂ p)"), rangemode="tozero"),
        legend=dict(orientation="h", x=1, xanchor="right", y=1.02, yanchor="bottom"), bargap=0.15,
    ))

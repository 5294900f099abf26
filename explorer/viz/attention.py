"""One attention head, drawn large: queries on y (reading order, top to bottom), keys on x.

Shapes: weights (Tq, Tk) for one head of one layer; mask (Tq, Tk) bool, True = may attend.
Also the encoder-decoder views: cross-attention (T generated x S source) and decoder
self-attention (T x T, causal), which are the same drawing with their own titles and axes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go  # noqa: F401  (return type)

from explorer.viz import common as c

QUERY_AXIS = "query (attending)"
KEY_AXIS = "key (attended to)"


def head_heatmap(
    weights: Any,
    query_labels: Sequence[str],
    key_labels: Sequence[str],
    mask: Any | None = None,
    head_off: bool = False,
    title: str = "Attention",
    *,
    x_title: str = KEY_AXIS,
    y_title: str = QUERY_AXIS,
    width: int | None = None,
) -> go.Figure:
    """Heatmap of one head's weights (Tq, Tk) with a fixed 0-1 colour bar.

    Masked cells (mask False) are drawn in grey by a second trace and named in the hover.
    A switched-off head (head_off) keeps its weights but is faded, framed and titled as off.
    """
    w = c.to_numpy(weights, np.float32)
    ax = c.TokenAxes(query_labels, key_labels, x_title=x_title, y_title=y_title, width=width)
    ax.check("weights", w)
    m = None
    if mask is not None:
        m = c.to_numpy(mask).astype(bool)
        ax.check("mask", m)

    hover = "%{y} → %{x}: %{z:.3f}<extra></extra>"
    shown = w if m is None else np.where(m, w, np.nan).astype(np.float32)
    traces = [
        dict(
            type="heatmap", z=shown, x=ax.k_names, y=ax.q_names, zmin=0.0, zmax=1.0, colorscale=c.WEIGHT_SCALE,
            colorbar=c.weight_colorbar(), hovertemplate=hover, hoverongaps=False,
            opacity=0.45 if head_off else 1.0, name="weights",
        )
    ]
    annotations: list[dict[str, Any]] = []
    if m is not None and not m.all():
        # Masked cells: a second trace in one neutral colour, so they never read as weight 0.
        traces.append(
            dict(
                type="heatmap", z=np.where(m, np.nan, w).astype(np.float32), x=ax.k_names, y=ax.q_names,
                colorscale=[[0, c.MASKED_COLOR], [1, c.MASKED_COLOR]], showscale=False,
                hovertemplate="%{y} → %{x}: masked (weight %{z:.3f})<extra></extra>",
                hoverongaps=False, name="masked",
            )
        )
        annotations.append(c.caption(f"<span style='color:{c.MASKED_COLOR}'>■</span> grey = masked (may not attend)"))
    shapes: list[dict[str, Any]] = []
    if head_off:
        title = f"{title} (switched off)"
        shapes.append(dict(type="rect", xref="paper", yref="paper", x0=0, x1=1, y0=0, y1=1,
                           line=dict(color=c.OFF_COLOR, width=3, dash="dash")))
        annotations.append(c.caption("head switched off: faded weights are what it would attend to",
                                     x=1.0, xanchor="right"))
    return c.figure(traces, ax.layout(title, annotations=annotations, shapes=shapes))


def cross_attention_heatmap(
    weights: Any,
    generated_labels: Sequence[str],
    source_labels: Sequence[str],
    mask: Any | None = None,
    head_off: bool = False,
    title: str = "Cross-attention",
    *,
    width: int | None = None,
) -> go.Figure:
    """Decoder -> encoder attention, weights (T generated, S source); mask (T, S) e.g. source padding."""
    return head_heatmap(
        weights, generated_labels, source_labels, mask=mask, head_off=head_off, title=title,
        x_title="source token (key, encoder)", y_title="generated token (query, decoder)", width=width,
    )


def decoder_self_attention_heatmap(
    weights: Any,
    generated_labels: Sequence[str],
    mask: Any | None = None,
    head_off: bool = False,
    title: str = "Decoder self-attention",
    *,
    causal: bool = True,
    width: int | None = None,
) -> go.Figure:
    """Decoder self-attention over generated tokens, weights (T, T).

    Without an explicit mask, `causal=True` shows the look-ahead mask (a token may attend to
    itself and earlier tokens only).
    """
    t = len(generated_labels)
    if mask is None and causal:
        mask = np.tril(np.ones((t, t), dtype=bool))
    return head_heatmap(
        weights, generated_labels, generated_labels, mask=mask, head_off=head_off, title=title,
        x_title="earlier generated token (key)", y_title="generated token (query)", width=width,
    )

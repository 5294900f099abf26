"""One attention head, drawn large: queries on y (reading order, top to bottom), keys on x.

Shapes: weights (Tq, Tk) for one head of one layer; mask (Tq, Tk) bool, True = may attend.
Also the encoder-decoder views: cross-attention (T generated x S source) and decoder
self-attention (T x T, causal), which are the same drawing with their own titles and axes.

Full resolution up to `pool.FULL_SIDE` tokens a side (1,024 x 1,024 cells, one byte each in the
percent form of `encode`); beyond that a cell is the max over a block of tokens. Masked cells are
covered in grey by `regions.cover` (a path of rectangles), so the weights keep one trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go  # noqa: F401  (return type)

from explorer.viz import common as c
from explorer.viz.axes import KEY_AXIS, QUERY_AXIS, TokenAxes
from explorer.viz.encode import encode
from explorer.viz.pool import FULL_SIDE
from explorer.viz.regions import cover

__all__ = ["KEY_AXIS", "QUERY_AXIS", "cross_attention_heatmap", "decoder_self_attention_heatmap", "head_heatmap"]


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
    max_side: int = FULL_SIDE,
    value_name: str = c.WEIGHT,
) -> go.Figure:
    """Heatmap of one head's weights (Tq, Tk) with a fixed 0-1 colour bar; or of another per-cell value named
    `value_name` (value-weighted attention, `c.VALUE_WEIGHTED`) on a 0..max bar, named in the hover and on the bar.

    Masked cells (mask False) are covered in grey (their hover still shows the weight, which the
    model set to 0). A switched-off head (head_off) keeps its weights but is faded, framed and
    titled as off. max_side: most cells per side before tokens are pooled into blocks.
    """
    w = c.to_numpy(weights, np.float32)
    ax = TokenAxes(query_labels, key_labels, x_title=x_title, y_title=y_title, width=width, max_side=max_side)
    ax.check("weights", w)
    m = None
    if mask is not None:
        m = c.to_numpy(mask).astype(bool)
        ax.check("mask", m)

    cells = ax.pool(w)
    name = c.escape(value_name)
    enc = encode(cells, 0.0, c.value_range(cells, value_name), name="weights")
    traces = [enc.trace(ax.k_names, ax.q_names, c.WEIGHT_SCALE, name,
                        "%{y} → %{x}: " + ("" if value_name == c.WEIGHT else name + " ") + "{value}"
                        + ax.pooled_note("max"), opacity=0.45 if head_off else 1.0, name="weights")]
    shapes: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    if m is not None and not m.all():
        # Masked cells in one neutral colour, so they never read as weight 0 (a block only when all of it is).
        cover_shapes, cover_traces = cover(ax.pool(~m, "all"), ax.k_names, ax.q_names, c.MASKED_COLOR, "masked")
        shapes += cover_shapes
        traces += cover_traces
        annotations.append(c.caption(f"<span style='color:{c.MASKED_COLOR}'>■</span> grey = masked (may not attend)"))
    if head_off:
        title = f"{title} (switched off)"
        shapes.append(dict(type="rect", xref="paper", yref="paper", x0=0, x1=1, y0=0, y1=1,
                           line=dict(color=c.OFF_COLOR, width=3, dash="dash")))
        # From the plot's left edge, on a line of its own above the mask's note: anchored right, a narrow (phone)
        # figure cut its start ("ead switched off").
        note = c.caption("head switched off: faded = what it would attend to")
        annotations.append({**note, "yshift": 16} if annotations else note)
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
    max_side: int = FULL_SIDE,
) -> go.Figure:
    """Decoder -> encoder attention, weights (T generated, S source); mask (T, S) e.g. source padding."""
    return head_heatmap(
        weights, generated_labels, source_labels, mask=mask, head_off=head_off, title=title,
        x_title="source token (key, encoder)", y_title="generated token (query, decoder)", width=width,
        max_side=max_side,
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
    max_side: int = FULL_SIDE,
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
        max_side=max_side,
    )

"""The next-token probabilities before and after the temperature, with the top-k and top-p cut-offs marked
(Transformer Explainer's sampling view). Drawing only: the numbers come from an
`explorer.outputs.sampling.NextTokenDistribution` the caller computed; nothing here runs a model.

Shapes: V vocabulary, N tokens drawn (the N most probable, most probable first).

    sampling_figure(dist, labels (N,), chosen=None, uniform=None) -> bars per token: the model's probability
        (temperature 1), after the temperature (faded where a cut-off drops the token), and the distribution a draw
        picks from (after top-k and top-p, renormalised); a dashed line after the last token each cut-off keeps
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go  # noqa: F401  (return type)

from explorer.viz import common as c

MODEL_COLOR = "#9ecae1"  # light blue: the model's own probabilities
TEMPERED_COLOR = "#0072B2"  # blue: after the temperature
CUT_COLOR = "#d9d9d9"  # grey: a token a cut-off drops
FINAL_COLOR = "#D55E00"  # vermillion: what the draw picks from
LINE_COLOR = "#444444"


def _cut_line(after: int, text: str, y: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """A dashed vertical line between bar `after - 1` and bar `after`, and its label."""
    x = after - 0.5
    line = dict(type="line", x0=x, x1=x, xref="x", y0=0, y1=1, yref="paper",
                line=dict(color=LINE_COLOR, width=1.5, dash="dash"))
    note = dict(text=text, x=x, xref="x", y=y, yref="paper", xanchor="left", yanchor="top", showarrow=False,
                font=dict(size=11, color=LINE_COLOR), bgcolor="rgba(255,255,255,0.8)")
    return line, note


def sampling_figure(dist: Any, labels: Sequence[Any], *, chosen: int | None = None, uniform: float | None = None,
                    title: str = "Next-token probabilities", width: int | None = None) -> go.Figure:
    """`dist` an explorer.outputs.sampling.NextTokenDistribution; `labels` (N,) the texts of its N most probable tokens
    (``dist.order[:N]``), most probable first; `chosen` a token id drawn from it, `uniform` the number that drew it
    (both optional, shown if given). Token text is escaped."""
    labels = list(labels)
    n = len(labels)
    order = c.to_numpy(dist.order).astype(np.int64).reshape(-1)
    if not 1 <= n <= order.shape[0]:
        raise ValueError(f"labels must name the first 1..{order.shape[0]} tokens of dist.order; got {n} labels")
    ids = order[:n]
    stages = {name: c.to_numpy(getattr(dist, name), np.float64).reshape(-1)[ids]
              for name in ("probs", "tempered", "final")}
    s = dist.sampling
    names = c.display_labels(labels)
    rank = np.arange(1, n + 1)
    kept = rank <= dist.top_p_kept  # (N,) tokens the draw can pick
    custom = np.stack([rank, ids], axis=-1)
    hover = "%{x} (id %{customdata[1]}, rank %{customdata[0]}): %{y:.4f}<extra>"

    def bars(name: str, y: np.ndarray, color: Any) -> dict[str, Any]:
        return dict(type="bar", x=names, y=y, name=name, marker=dict(color=color), customdata=custom,
                    hovertemplate=hover + c.escape(name) + "</extra>")

    traces = [bars("model (temperature 1)", stages["probs"], MODEL_COLOR),
              bars(f"after temperature {s.temperature:g}", stages["tempered"],
                   [TEMPERED_COLOR if k else CUT_COLOR for k in kept]),
              bars("drawn from (after the cut-offs, renormalised)", stages["final"], FINAL_COLOR)]
    top = float(max(v.max() for v in stages.values())) or 1.0
    shapes, notes = [], []
    cuts = []
    if s.top_k:
        cuts.append((dist.top_k_kept, f"top-k {s.top_k}" + ("" if dist.top_k_kept == s.top_k else
                                                            f" (keeps {dist.top_k_kept}: ties)")))
    if s.top_p < 1:
        cuts.append((dist.top_p_kept, f"top-p {s.top_p:g}: {dist.top_p_kept} kept, together {dist.top_p_mass:.3f}"))
    shown = [(after, text) for after, text in cuts if after < n]
    for k, (after, text) in enumerate(shown):
        line, note = _cut_line(after, text, 0.98 - 0.09 * k)
        shapes.append(line)
        notes.append(note)
    words = [f"temperature {s.temperature:g}"]
    for after, text in cuts:
        where = "" if after < n else " (the last shown)" if after == n else f" (beyond the {n} shown)"
        words.append(text + where)
    words.append(f"the draw picks from {dist.top_p_kept} of {order.shape[0]:,} tokens")
    if chosen is not None:
        chosen = int(chosen)
        where = np.flatnonzero(ids == chosen)
        with_u = f" with u = {uniform:.3f}" if uniform is not None else ""
        if where.size:
            i = int(where[0])
            words.append(f"▼ drawn{with_u}: {c.short(str(labels[i]))}")
            traces.append(dict(type="scatter", mode="markers", x=[names[i]], y=[stages["final"][i] + 0.05 * top],
                               marker=dict(symbol="triangle-down", size=12, color=FINAL_COLOR), showlegend=False,
                               hovertemplate=f"drawn{with_u}: %{{x}}<extra></extra>"))
        else:
            words.append(f"drawn{with_u}: token {chosen}, not among the {n} shown")
    notes.append(c.caption(c.escape(" · ".join(words))))  # token text in it escaped once, here
    return c.figure(traces, dict(
        **c.base_layout(c.escape(title), 380, width, b=110, t=90),
        xaxis=dict(**c.category_ticks(names, c.unique_labels(labels), (width or c.DEFAULT_WIDTH) - 120),
                   tickangle=-45 if n > 12 else 0),
        yaxis=dict(title=dict(text="probability"), range=[0, top * 1.2], fixedrange=True),
        barmode="group", bargap=0.2, bargroupgap=0.05, shapes=shapes, annotations=notes,
        legend=dict(orientation="h", x=0, xanchor="left", y=-0.32, yanchor="top"),
    ))

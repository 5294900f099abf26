"""Inside one head at one query token (BertViz's neuron view), drawn from an explorer.interpret.HeadComputation:
the query q over every key k_j, their element-wise products q * k_j (whose sums are the dot products), the scores,
the weights, and the values v_j with their weighted sum z. Nothing here runs a model.

Columns, left to right (one row per key drawn, the query's vectors above their column):
    k_j unrotated         rotary models only: before the rotation, under q before it
    k_j                   under q (as the scores read them: after rotary)
    q * k_j               element-wise; each row sums to q . k_j
    score                 q . k_j * scale + position term; a blocked key has none (no bar, "−∞", why in its hover)
    weight                the softmax (baseline, and with the toggles beside it when given)
    v_j                   under z = sum_j a_j v_j

Each strip of vectors has its own colour scale, written under its title (`scale_text`).

Shapes: S keys, Dh head width; n keys drawn, the `top` strongest (largest weight in either run), in position order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from explorer.viz import common as c

TOP = 12  # keys drawn
BASE_COLOR, TOGGLED_COLOR = "#0072B2", "#D55E00"  # Okabe-Ito blue and vermilion
ROW_PX = 24


def shown_keys(comp: Any, toggled: Any | None = None, top: int = TOP) -> np.ndarray:
    """(n,) indices of the keys drawn: the `top` with the largest weight in either run, in position order."""
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ValueError(f"top must be a positive number of keys, got {top!r}")
    w = comp.weights if toggled is None else np.maximum(comp.weights, toggled.weights)
    return np.sort(np.argsort(-w, kind="stable")[:min(top, len(w))])


def scale_text(z: np.ndarray, short: bool = False) -> str:
    """The colour scale of a strip of vectors, in words: its range about 0 (`short`: "scale ±top")."""
    top = (float(np.abs(z).max()) if z.size else 0.0) or 1.0
    return f"scale ±{top:.2g}" if short else f"blue −{top:.2g} · 0 · red +{top:.2g}"


def _vectors(z: np.ndarray, names: Sequence[str], ax: int, hover: str) -> dict[str, Any]:
    """A heatmap of vectors (rows) on axes number `ax`, diverging about 0 (its scale: `scale_text(z)`)."""
    top = float(np.abs(z).max()) if z.size else 1.0
    return dict(type="heatmap", z=z.astype(np.float32), y=list(names), colorscale=c.DIVERGING_SCALE,
                zmin=-(top or 1.0), zmax=top or 1.0, showscale=False, xaxis=c.axis_ref("x", ax),
                yaxis=c.axis_ref("y", ax), hovertemplate=hover + " dim %{x}: %{z:.3f}<extra></extra>")


def head_computation_figure(comp: Any, key_labels: Sequence[Any], query_label: Any, *, toggled: Any | None = None,
                            top: int = TOP, title: str | None = None, width: int | None = None) -> go.Figure:
    """The neuron view of `comp` (a HeadComputation) for the keys labelled `key_labels` (S,); `toggled`: the same
    head and query computed with the page's toggles, whose scores and weights are drawn beside the baseline's."""
    S = len(comp.weights)
    if len(key_labels) != S:
        raise ValueError(f"{len(key_labels)} key labels for {S} keys")
    if toggled is not None and len(toggled.weights) != S:
        raise ValueError("the toggled computation has another number of keys than the baseline")
    idx = shown_keys(comp, toggled, top)
    names = [f"{j} {c.escape(c.short(lab, 14))}" for j, lab in zip(idx.tolist(), c.unique_labels(
        [key_labels[j] for j in idx.tolist()]))]
    shown = toggled if toggled is not None else comp  # the vectors drawn: of the model as switched
    rotary = shown.q_unrotated is not None
    panels: list[tuple[str, str]] = ([("k_j unrotated", "vec")] if rotary else []) + [
        ("k_j", "vec"), ("q ∘ k_j", "vec"), ("score", "bar"), ("weight", "bar"), ("v_j", "vec")]
    share = [3.0 if kind == "vec" else 1.7 for _, kind in panels]
    gap = 0.025
    room = 1.0 - gap * (len(panels) - 1)
    edges, x0 = [], 0.0
    for s in share:
        edges.append((round(x0, 4), min(1.0, round(x0 + room * s / sum(share), 4))))
        x0 = edges[-1][1] + gap
    n = len(idx)
    height = 265 + ROW_PX * n
    plot_h = height - 155  # less the margins (110 above, 45 below)
    key_top = round(1.0 - 80 / plot_h, 4)  # the keys' rows, below the query's row (24 px) and its label
    q_row = (round(key_top + 16 / plot_h, 4), round(min(1.0, key_top + 40 / plot_h), 4))
    traces: list[dict[str, Any]] = []
    layout: dict[str, Any] = {}
    query = c.escape(c.short(str(query_label), 24))
    above = {"k_j unrotated": ("q unrotated", shown.q_unrotated), "k_j": ("q", shown.q),
             "v_j": ("z = Σ a_j v_j", shown.weighted_sum)}
    annotations = []
    for k, ((name, kind), (lo, hi)) in enumerate(zip(panels, edges), start=1):
        kb = len(panels) + k  # the axes of the query's row above this column
        if kind == "vec":
            data = {"k_j unrotated": shown.keys_unrotated, "k_j": shown.keys, "q ∘ k_j": shown.products,
                    "v_j": shown.values}[name][idx]
            traces.append(_vectors(data, names, k, f"{name} of %{{y}},"))
        else:
            runs = [("baseline", comp, BASE_COLOR)] + ([("with toggles", toggled, TOGGLED_COLOR)] if toggled is not None
                                                       else [])
            for run, r, colour in runs:
                values = (r.scores if name == "score" else r.weights)[idx].astype(np.float32)
                blocked = [r.blocked_by[j] for j in idx.tolist()]
                if name == "score":  # a blocked key has no score (the softmax reads −∞): no bar, its reason written
                    values = np.where([bool(b) for b in blocked], np.float32(0), values)
                colours = [c.MASKED_COLOR if b else colour for b in blocked]
                text = [f"blocked ({b}): no score, −∞" if b else f"{name} {v:.4f}"
                        for b, v in zip(blocked, values.tolist())]
                traces.append(dict(type="bar", orientation="h", x=values, y=names, name=run,
                                   marker=dict(color=colours), legendgroup=run, showlegend=name == "weight",
                                   customdata=text, meta={"word_custom": True},  # hover words: said in a language
                                   xaxis=c.axis_ref("x", k), yaxis=c.axis_ref("y", k),
                                   **({"text": ["−∞" if b else "" for b in blocked], "textposition": "outside",
                                       "cliponaxis": False} if name == "score" else {}),
                                   hovertemplate=f"{run}, key %{{y}}: %{{customdata}}<extra></extra>"))
        bars = kind == "bar"
        axis_title = name if bars else f"{name}<br><span style='font-size:10px'>{scale_text(data)}</span>"
        layout[c.axis_key("x", k)] = dict(domain=[lo, hi], anchor=c.axis_ref("y", k), showgrid=bars, zeroline=bars,
                                          showticklabels=bars, title=dict(text=axis_title, font=dict(size=12)),
                                          **({"tickfont": dict(size=10), "nticks": 3} if bars else {"ticks": ""}))
        layout[c.axis_key("y", k)] = dict(domain=[0.0, key_top], anchor=c.axis_ref("x", k), autorange="reversed",
                                          type="category", showticklabels=k == 1,
                                          **({"tickfont": dict(size=11)} if k == 1 else {"matches": "y"}))
        if name in above and above[name][1] is not None:
            label, vec = above[name]
            traces.append(_vectors(vec[None], [label], kb, label))
            layout[c.axis_key("x", kb)] = dict(domain=[lo, hi], anchor=c.axis_ref("y", kb), visible=False)
            layout[c.axis_key("y", kb)] = dict(domain=list(q_row), anchor=c.axis_ref("x", kb), visible=False)
            annotations.append(dict(text=f"{label}  <span style='font-size:10px'>{scale_text(vec, short=True)}</span>", x=lo,
                                    xanchor="left", y=q_row[1],
                                    yanchor="bottom", xref="paper", yref="paper", showarrow=False,
                                    font=dict(size=11, color="#333")))
    head = f"{comp.kind} L{comp.layer} H{comp.head}"
    kv = f" (reads K/V head {comp.kv_head})" if comp.n_kv_heads != comp.n_heads else ""
    title = title or f"Inside {c.escape(head)}{kv} at query {comp.query} ({query})"
    scale = f"× {comp.scale:.4g}" + (" + relative position bias" if comp.position is not None else "")
    note = (f"score = q · k_j {scale}; the {n} strongest of {S} keys" + ("; vectors of the run with the toggles"
            if toggled is not None else "") + ".<br>Red > 0 > blue, each strip on its own scale (written under it); "
            "blocked keys: no score (−∞), weight 0.")
    annotations.append(dict(c.caption(note), y=1.0, yshift=6))
    layout.update(c.base_layout(title, height, width, l=130, r=20, t=110, b=45), annotations=annotations,
                  barmode="group", bargap=0.25, legend=dict(orientation="h", x=1, xanchor="right",
                                                            y=round(1.0 + 40 / plot_h, 4), yanchor="bottom",
                                                            font=dict(size=11)),
                  hovermode="closest")
    return c.figure(traces, layout)

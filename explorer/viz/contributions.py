"""Figures of where one prediction comes from: the direct-logit-attribution map and the token-attribution strip.

Drawing only: every value comes from a result the caller computed (explorer.interpret.dla, .attribution); nothing
here runs a model. Shapes: L layers, H heads (per attention kind), n tokens of an attributed sequence.

    dla_map([DLARun], kind titles)     per run (baseline | toggled, side by side): one layer x head panel per
                                       attention kind and the MLPs as a column beside them; one diverging scale
                                       centred at 0 for every panel; embeddings and biases written under each run
    attribution_strip([(name, labels (n,), values (n,))])
                                       one row of cells per sequence: the input tokens coloured by attribution,
                                       diverging, centred at 0

A head cell's customdata is "kind|layer|head" (an MLP cell's "mlp|layer|"): the page script sends a clicked cell's
to the server (explorer.app.page.assets).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from explorer.viz import common as c
from explorer.viz.common import axis_key, axis_ref
from explorer.viz.encode import encode, symmetric_range

TEXT_CELL_PX = 30  # a cell at least this wide gets its value written in it
STRIP_TEXT_CELLS = 48  # at most this many tokens get their label written in their cell
OFF_COLOR = "#333333"


@dataclass(frozen=True)
class DLARun:
    """One run's shares of one logit: name ("" for a single run), heads {kind: (L, H)}, mlps (L,), embeddings,
    rest (biases, norm betas), logit, and off {kind: (L, H) bool} (True = switched off) or None."""

    name: str
    heads: Mapping[str, Any]
    mlps: Any
    embeddings: float
    rest: float
    logit: float
    off: Mapping[str, Any] | None = None


def _signed(v: float, digits: int = 2) -> str:
    return f"{v:+.{digits}f}".replace("-", "−")


def dla_map(runs: Sequence[DLARun], kind_titles: Mapping[str, str] | None = None, *,
            title: str = "Direct logit attribution", width: int | None = None) -> go.Figure:
    """Each head's and MLP's share of the logit, one panel group per run (side by side). `title` is used as given
    (escape token text in it); kind_titles: kind -> panel title (plain text)."""
    if not runs:
        return c.message_figure("No attribution to show.")
    kinds = list(runs[0].heads)
    data = []
    for run in runs:
        heads = {k: c.to_numpy(run.heads[k], np.float32) for k in kinds}
        mlps = c.to_numpy(run.mlps, np.float32).reshape(-1)
        for k, a in heads.items():
            c.check_shape(f"heads[{k!r}]", a, (mlps.size, None), "(L, H) with L = len(mlps)")
        off = None if run.off is None else {k: c.to_numpy(run.off[k]).astype(bool) for k in kinds}
        data.append((run, heads, mlps, off))
    n_layers = data[0][2].size
    m = symmetric_range(np.concatenate([np.concatenate([a.ravel() for a in h.values()] + [ml])
                                        for _, h, ml, _ in data]))
    # Columns in cell units: each run's kind panels and its MLP column, a gap between panels, a wider one between runs.
    gap, run_gap = 0.9, 2.2
    widths = [[a.shape[1] for a in data[0][1].values()] + [1] for _ in runs]
    units = sum(sum(w) + gap * (len(w) - 1) for w in widths) + run_gap * (len(runs) - 1)
    left_px, right_px = 70, 100
    plot_px = (width or c.DEFAULT_WIDTH) - left_px - right_px
    cell_px = plot_px / units
    text_in_cells = cell_px >= TEXT_CELL_PX
    top = 110 if len(runs) > 1 else 90
    row_px = max(30, 120 // n_layers) if n_layers <= 16 else max(12, 480 // n_layers)  # a colour bar's room
    bottom = 95
    height = top + row_px * n_layers + bottom
    plot_h = height - top - bottom
    layers = [f"L{la}" for la in range(n_layers)]
    traces: list[dict[str, Any]] = []
    axes: dict[str, Any] = {}
    notes: list[dict[str, Any]] = []
    pos, k = 0.0, 0
    titles = dict(kind_titles or {})

    def domain(cells: int) -> list[float]:
        nonlocal pos
        lo = min(1.0, pos / units)
        pos += cells
        return [lo, min(1.0, pos / units)]

    for r, (run, heads, mlps, off) in enumerate(data):
        run_lo = pos / units
        prefix = f"{c.escape(run.name)} · " if run.name else ""
        panels = [(kind, heads[kind]) for kind in kinds] + [("mlp", mlps[:, None])]
        for p, (kind, values) in enumerate(panels):
            k += 1
            x_dom = domain(values.shape[1])
            if p < len(panels) - 1:
                pos += gap
            if kind == "mlp":
                x = ["MLP"]
                custom = [[f"mlp|{la}|"] for la in range(n_layers)]
                hover = f"{prefix}%{{y}} MLP: %{{z:+.3f}} of logit {run.logit:.3f}"
            else:
                x = [f"H{h}" for h in range(values.shape[1])]
                custom = [[f"{kind}|{la}|{h}" for h in range(values.shape[1])] for la in range(n_layers)]
                name = "" if kind in ("decoder", "encoder") else f"{kind} "
                hover = f"{prefix}{name}%{{y}} %{{x}}: %{{z:+.3f}} of logit {run.logit:.3f}"
            enc = encode(values, -m, m, exact=True, name=kind)
            trace = enc.trace(x, layers, c.DIVERGING_SCALE, "share of the logit" if k == 1 else None, hover,
                              customdata=custom, xaxis=axis_ref("x", k), yaxis=axis_ref("y", k), xgap=1, ygap=1)
            trace.pop("zmid", None)  # zmin = -zmax already centres the scale at 0
            if text_in_cells:
                text = [[_signed(float(v)) for v in row] for row in values]
                if off is not None and kind in off:  # an off head's cell carries the cross, not a number
                    text = [["" if o else t for t, o in zip(trow, orow)] for trow, orow in zip(text, off[kind])]
                trace.update(text=text, texttemplate="%{text}", textfont=dict(size=10))
            if k == 1:
                trace["colorbar"].update(len=1.0, y=0.5, yanchor="middle")
            traces.append(trace)
            if off is not None and kind in off and off[kind].any():
                la, h = np.nonzero(off[kind])
                traces.append(dict(type="scatter", mode="markers", x=[x[i] for i in h], y=[layers[i] for i in la],
                                   xaxis=axis_ref("x", k), yaxis=axis_ref("y", k), hoverinfo="skip", showlegend=False,
                                   marker=dict(symbol="x-thin", size=max(6, min(14, cell_px * 0.5)),
                                               line=dict(width=1.5, color=OFF_COLOR))))
            axes[axis_key("x", k)] = dict(anchor=axis_ref("y", k), domain=x_dom, type="category", side="bottom",
                                      tickfont=dict(size=c.TICK_FONT_SIZE), fixedrange=True, ticks="")
            axes[axis_key("y", k)] = dict(anchor=axis_ref("x", k), domain=[0.0, 1.0], type="category",
                                          autorange="reversed", tickfont=dict(size=c.TICK_FONT_SIZE), fixedrange=True,
                                          showticklabels=p == 0, ticks="",
                                          **({"title": dict(text="layer")} if p == 0 and r == 0 else {}))
            label = "MLPs" if kind == "mlp" else c.escape(titles.get(kind, kind))
            notes.append(dict(text=label, x=(x_dom[0] + x_dom[1]) / 2, xanchor="center", y=1.0 + 6 / plot_h,
                              yanchor="bottom", xref="paper", yref="paper", showarrow=False, font=dict(size=12)))
        run_hi = pos / units
        heads_sum = sum(float(a.sum()) for a in heads.values())
        total = heads_sum + float(mlps.sum()) + run.embeddings + run.rest
        line = (f"heads {_signed(heads_sum)} · MLPs {_signed(float(mlps.sum()))} · embeddings "
                f"{_signed(run.embeddings)} · biases/norms {_signed(run.rest)}<br>sum {_signed(total, 3)} = logit "
                f"{_signed(run.logit, 3)}")
        notes.append(dict(text=line, x=(run_lo + run_hi) / 2, xanchor="center", y=-44 / plot_h, yanchor="top",
                          xref="paper", yref="paper", showarrow=False, font=dict(size=11, color="#444")))
        if run.name:
            notes.append(dict(text=f"<b>{c.escape(run.name)}</b>", x=(run_lo + run_hi) / 2, xanchor="center",
                              y=1.0 + 26 / plot_h, yanchor="bottom", xref="paper", yref="paper", showarrow=False,
                              font=dict(size=13)))
        pos += run_gap
    return c.figure(traces, dict(**c.base_layout(title, height, width, l=left_px, r=right_px, t=top, b=bottom),
                                 **axes, annotations=notes, showlegend=False))


def attribution_strip(sequences: Sequence[tuple[str, Sequence[str], Any]], *, title: str = "Token attribution",
                      width: int | None = None) -> go.Figure:
    """One row of cells per sequence (name, token labels (n,), attributions (n,)): each input token coloured by its
    attribution on one diverging scale centred at 0. `title` is used as given (escape token text in it)."""
    rows = [(name, list(labels), c.to_numpy(values, np.float32).reshape(-1)) for name, labels, values in sequences]
    rows = [r for r in rows if r[1]]
    if not rows:
        return c.message_figure("No tokens to attribute.")
    for name, labels, values in rows:
        c.check_shape(f"attributions of {name!r}", values, (len(labels),), "(n,) one per token label")
    m = symmetric_range(np.concatenate([v for _, _, v in rows]))
    scale = float(sum(np.abs(v).sum() for _, _, v in rows)) or 1.0
    band_px, top = 56, 80
    gap_px = 40 if all(len(labels) <= STRIP_TEXT_CELLS for _, labels, _ in rows) else 110
    toks_all = [t for _, labels, _ in rows for t in c.unique_labels(labels)]
    written = all(len(labels) <= STRIP_TEXT_CELLS for _, labels, _ in rows)
    bottom = 30 if written else min(c.label_margin(toks_all), 120) + 10
    height = top + len(rows) * band_px + (len(rows) - 1) * gap_px + bottom
    plot_h = height - top - bottom
    room = (width or c.DEFAULT_WIDTH) - 200
    traces, axes = [], {}
    y_top = 1.0
    for k, (name, labels, values) in enumerate(rows, start=1):
        names, toks = c.display_labels(labels), c.unique_labels(labels)
        y_dom = [max(0.0, y_top - band_px / plot_h), y_top]
        y_top = y_dom[0] - gap_px / plot_h
        share = [[f"{100 * v / scale:+.1f}%".replace("-", "−") for v in values]]
        positions = [[str(t) for t in range(len(labels))]]
        custom = np.stack([np.array(positions, dtype=object), np.array(share, dtype=object)], axis=-1).tolist()
        enc = encode(values[None, :], -m, m, exact=True, name=name)
        label = c.escape(name)
        trace = enc.trace(names, [label], c.DIVERGING_SCALE, "attribution" if k == 1 else None,
                          f"{label}, position %{{customdata[0]}}: %{{x}} · %{{z:+.4f}} (%{{customdata[1]}} of all "
                          "|attribution|)", customdata=custom, xaxis=axis_ref("x", k), yaxis=axis_ref("y", k), xgap=1,
                          ygap=1)
        trace.pop("zmid", None)
        trace["meta"] = {**trace.get("meta", {}), "word_rows": True}  # its row: a sequence's name, said in a language
        written = len(labels) <= STRIP_TEXT_CELLS  # the tokens in their cells: no tick labels needed
        if written:
            trace.update(text=[[c.escape(c.short(t, 8)) for t in labels]], texttemplate="%{text}",
                         textfont=dict(size=10))
        if k == 1:
            trace["colorbar"].update(len=1.0, y=0.5, yanchor="middle")
        traces.append(trace)
        axes[axis_key("x", k)] = dict(anchor=axis_ref("y", k), domain=[0.0, 1.0], **c.category_ticks(names, toks, room),
                                  tickangle=-45 if len(labels) > 12 else 0, fixedrange=True, showticklabels=not written,
                                  ticks="")
        axes[axis_key("y", k)] = dict(anchor=axis_ref("x", k), domain=y_dom, type="category", fixedrange=True,
                                  tickfont=dict(size=c.TICK_FONT_SIZE))
    return c.figure(traces, dict(**c.base_layout(title, height, width, l=110, r=100, t=top, b=bottom), **axes,
                                 showlegend=False))

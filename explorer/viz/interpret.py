"""Figures of explorer.interpret: head roles, activation patching and the logit lens.

Drawing only: every value comes from a result the caller computed (role scores, a Patching, a
LogitLens); nothing here runs a model. Shapes: L layers, H heads, T positions.

    role_figure({role: (L, H)})                 small multiples, one layer x head map per role, 0..1
    patching_figure(Patching, labels (T,))      head map(s) (L, H) on a diverging scale centred at 0,
                                                and the residual stream (L+1, T) with token labels
    lens_figure(LogitLens, labels (T,))         layer x position: top token as text, its probability
                                                as colour; and the rank of the model's final prediction
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go  # noqa: F401  (return type)

from explorer.labels import visible
from explorer.viz import common as c
from explorer.viz.common import axis_key, axis_ref
from explorer.viz.encode import encode

ROLE_TITLES = {"previous": "previous token", "duplicate": "duplicate token", "induction": "induction",
               "first": "first token (sink)", "self": "self (diagonal)", "local": "local window"}
TEXT_CELLS = 48  # at most this many columns get their value / token written in the cells
RANK_SCALE = [[1.0 - p, col] for p, col in reversed(c.ROLLOUT_SCALE)]  # rank 0 (the prediction) brightest


def _domains(n: int, spacing: float, lo: float = 0.0, hi: float = 1.0) -> list[tuple[float, float]]:
    """n equal intervals of [lo, hi] with `spacing` (a fraction of the whole) between them."""
    width = (hi - lo - spacing * (n - 1)) / n
    return [(lo + i * (width + spacing), lo + i * (width + spacing) + width) for i in range(n)]


def _without_zmid(trace: dict[str, Any]) -> dict[str, Any]:
    """zmin = -zmax already centres the scale at 0; plotly ignores zmid beside them (Plotly.validate says so)."""
    trace.pop("zmid", None)
    return trace


def _panel_title(text: str, x: tuple[float, float], y_top: float) -> dict[str, Any]:
    return dict(text=text, x=(x[0] + x[1]) / 2, xanchor="center", y=y_top, yanchor="bottom", xref="paper",
                yref="paper", showarrow=False, font=dict(size=13))


def _head_axes(k: int, x: tuple[float, float], y: tuple[float, float], n_heads: int, n_layers: int,
               titles: bool = True) -> dict[str, Any]:
    """Category axes of one layer x head panel, layer 0 on top."""
    axes = {axis_key("x", k): dict(anchor=axis_ref("y", k), domain=list(x), type="category",
                               tickfont=dict(size=c.TICK_FONT_SIZE)),
            axis_key("y", k): dict(anchor=axis_ref("x", k), domain=list(y), type="category", autorange="reversed",
                               tickfont=dict(size=c.TICK_FONT_SIZE))}
    if titles:
        axes[axis_key("x", k)]["title"] = dict(text="head")
        axes[axis_key("y", k)]["title"] = dict(text="layer")
    return axes


def role_figure(scores: Mapping[str, Any], title: str = "Head roles", *, width: int | None = None) -> go.Figure:
    """One layer x head heatmap per role (mean attention on the keys the role predicts), colours 0..1."""
    if not scores:
        return c.message_figure("No role scores to show.")
    arrays = {role: c.to_numpy(s, np.float32) for role, s in scores.items()}
    first = next(iter(arrays.values()))
    if first.ndim != 2:
        raise ValueError(f"role scores must have shape (L, H); got {tuple(first.shape)}")
    for role, a in arrays.items():
        c.check_shape(f"scores[{role!r}]", a, first.shape, "(L, H) like the other roles")
    n_layers, n_heads = first.shape
    cols = min(3, len(arrays))
    rows = math.ceil(len(arrays) / cols)
    row_px, gap_px, top, bottom = 34 * n_layers + 20, 62, 100, 60  # a panel, the room between two rows
    height = rows * row_px + (rows - 1) * gap_px + top + bottom
    plot = height - top - bottom
    xs, ys = _domains(cols, 0.08), _domains(rows, gap_px / plot)[::-1]  # row 0 on top
    heads, layers = [f"H{h}" for h in range(n_heads)], [f"L{l}" for l in range(n_layers)]
    traces, axes, notes = [], {}, []
    for k, (role, a) in enumerate(arrays.items(), start=1):
        x, y = xs[(k - 1) % cols], ys[(k - 1) // cols]
        name = c.escape(ROLE_TITLES.get(role, role))
        enc = encode(a, 0.0, 1.0, exact=True, name=f"scores[{role!r}]")
        extra: dict[str, Any] = dict(xaxis=axis_ref("x", k), yaxis=axis_ref("y", k), xgap=1, ygap=1)
        if n_heads <= 16:
            extra.update(text=[[f"{v:.2f}" for v in row] for row in a], texttemplate="%{text}", textfont=dict(size=10))
        traces.append(enc.trace(heads, layers, c.WEIGHT_SCALE, "score" if k == 1 else None,
                                f"{name} · %{{y}} %{{x}}: {{value}}", **extra))
        axes.update(_head_axes(k, x, y, n_heads, n_layers, titles=False))
        if (k - 1) // cols == rows - 1:
            axes[axis_key("x", k)]["title"] = dict(text="head")
        if (k - 1) % cols == 0:
            axes[axis_key("y", k)]["title"] = dict(text="layer")
        best = np.unravel_index(int(np.argmax(a)), a.shape)
        notes.append(_panel_title(f"{name} (best L{best[0]} H{best[1]}: {a[best]:.2f})", x, y[1] + 4 / plot))
    subtitle = "<br><sup>mean attention weight on the keys each role predicts: 1 = all of it, 0 = none</sup>"
    return c.figure(traces, dict(**c.base_layout(title + subtitle, height, width, l=60, r=90, t=top, b=bottom),
                                 **axes, annotations=notes))


def patching_figure(p: Any, labels: Sequence[str], title: str = "Activation patching", *,
                    answer_labels: tuple[str, str] | None = None, width: int | None = None) -> go.Figure:
    """Share of the clean-minus-corrupted logit difference each patch restores (1 = all, 0 = none).

    Top: decoder heads (and cross-attention heads of an encoder-decoder), layer x head; bottom: the
    residual stream, (layer input | output) x position. One diverging scale centred at 0 for all panels.
    """
    heads = c.to_numpy(p.heads, np.float32)
    residual = c.to_numpy(p.residual, np.float32)
    cross = None if getattr(p, "cross", None) is None else c.to_numpy(p.cross, np.float32)
    n_layers, n_heads = heads.shape
    c.check_shape("residual", residual, (n_layers + 1, len(labels)), "(L + 1, T) with T = len(labels)")
    m = max(1.0, float(np.abs(residual).max()), float(np.abs(heads).max()),
            0.0 if cross is None else float(np.abs(cross).max()))
    panels = [("decoder self-attention heads" if cross is not None else "heads", heads)]
    if cross is not None:
        panels.append(("cross-attention heads", cross))
    xs = _domains(len(panels), 0.12, 0.0, 0.62 if len(panels) == 1 else 1.0)
    toks = c.unique_labels(labels)
    head_px, gap_px, res_px = max(90, 34 * n_layers + 20), 90, max(90, 24 * (n_layers + 1) + 20)
    top, bottom = 110, c.label_margin(toks) + 50
    height = top + head_px + gap_px + res_px + bottom
    plot = height - top - bottom
    head_y, res_y = (1.0 - head_px / plot, 1.0), (0.0, res_px / plot)
    names = c.display_labels(labels)
    layer_names, head_names = [f"L{l}" for l in range(n_layers)], [f"H{h}" for h in range(n_heads)]
    traces, axes, notes = [], {}, []
    for k, (name, values) in enumerate(panels, start=1):
        enc = encode(values, -m, m, exact=True, name=name)
        extra: dict[str, Any] = dict(xaxis=axis_ref("x", k), yaxis=axis_ref("y", k), xgap=1, ygap=1)
        if n_heads <= 16:
            extra.update(text=[[f"{v:+.2f}" for v in row] for row in values], texttemplate="%{text}",
                         textfont=dict(size=10))
        traces.append(_without_zmid(enc.trace(head_names, layer_names, c.DIVERGING_SCALE,
                                              "restored share" if k == 1 else None,
                                              f"{name}: %{{y}} %{{x}} patched restores {{value}}", fmt="+.3f",
                                              **extra)))
        axes.update(_head_axes(k, xs[k - 1], head_y, n_heads, n_layers))
        notes.append(_panel_title(name + " (z, before W_o)", xs[k - 1], head_y[1] + 4 / plot))
    k = len(panels) + 1
    rows = [f"L{l} in" if l else "L0 in (embeddings)" for l in range(n_layers)] + ["output"]
    enc = encode(residual, -m, m, name="residual")
    traces.append(_without_zmid(enc.trace(names, rows, c.DIVERGING_SCALE, None,
                                          "residual at %{y}, position %{x}: patched restores {value}", fmt="+.3f",
                                          xaxis=axis_ref("x", k), yaxis=axis_ref("y", k))))
    room = (width or c.DEFAULT_WIDTH) - 160
    axes[axis_key("x", k)] = dict(anchor=axis_ref("y", k), domain=[0.0, 1.0], **c.category_ticks(names, toks, room),
                              title=dict(text="position (token of the corrupted run)"))
    axes[axis_key("y", k)] = dict(anchor=axis_ref("x", k), domain=list(res_y), type="category", autorange="reversed",
                              tickfont=dict(size=c.TICK_FONT_SIZE))
    notes.append(_panel_title("residual stream patched at (layer, position)", (0.0, 1.0), res_y[1] + 4 / plot))
    a, b = answer_labels if answer_labels is not None else (f"#{p.answers[0]}", f"#{p.answers[1]}")
    metric = (f"metric: logit[{c.escape(a)}] − logit[{c.escape(b)}] at the last position; clean {p.clean:+.3f}, "
              f"corrupted {p.corrupted:+.3f}; 1 = patch restores the clean value, 0 = no effect")
    return c.figure(traces, dict(**c.base_layout(title, height, width, l=130, r=90, t=top, b=bottom), **axes,
                                 annotations=[*notes, dict(c.caption(metric), y=1.0 + 34 / plot)]))


def lens_figure(lens: Any, labels: Sequence[str], title: str = "Logit lens", *,
                token_text: Callable[[int], str] | Sequence[str] | None = None, row: int = 0,
                width: int | None = None) -> go.Figure:
    """Top: each layer's top next-token guess at each position (text) and its probability (colour).
    Below, on the same positions: the rank of the model's final prediction in each layer's guesses
    (0 = already the top). Stacked, so both panels get the full width and the cells their text.

    token_text: id -> text (a tokenizer's id_to_token, or a vocabulary list); None shows "#id".
    row: which sequence of a batched lens.
    """
    top_ids = c.to_numpy(lens.top_ids)[:, row]  # (L+1, T)
    probs = c.to_numpy(lens.top_probs, np.float32)[:, row]
    ranks = c.to_numpy(lens.final_rank)[:, row]
    final_ids = c.to_numpy(lens.final_ids)[row]  # (T,)
    n_rows, T = top_ids.shape
    c.check_shape("labels", np.empty(len(labels)), (T,), "(T,) one label per position")

    def text_of(i: int) -> str:
        if token_text is None:
            return f"#{i}"
        return str(token_text(i) if callable(token_text) else token_text[i])

    raw = {int(i): visible(text_of(int(i))) or "∅" for i in np.unique(np.concatenate([top_ids.ravel(), final_ids]))}
    cell_text = [[c.escape(raw[int(i)]) for i in layer] for layer in top_ids]  # (L+1, T) escaped token text
    final_text = [c.escape(raw[int(i)]) for i in final_ids]  # (T,)
    names, toks = c.display_labels(labels), c.unique_labels(labels)
    rows = ["embeddings"] + [f"after L{l}" for l in range(n_rows - 1)]
    ys = [(0.5, 0.94), (0.0, 0.36)]  # top: lens grid; bottom: ranks, sharing the position axis
    enc = encode(probs, 0.0, 1.0, name="top_probs")
    room = (width or c.DEFAULT_WIDTH) - 200  # pixels of the position axis
    show_text = T <= TEXT_CELLS  # cells span the full width now, so up to TEXT_CELLS positions have room for text
    lens_trace = enc.trace(names, rows, c.WEIGHT_SCALE, "probability",
                           "%{y}, position %{x}: top token %{customdata} with p = {value}",
                           customdata=cell_text, xaxis="x", yaxis="y", xgap=1, ygap=1,
                           meta={"word_rows": True})  # its rows: words, said in a language (app.i18n.result_words)
    if show_text:
        lens_trace.update(text=[[c.escape(c.short(raw[int(i)], 8)) for i in layer] for layer in top_ids],
                          texttemplate="%{text}", textfont=dict(size=10))
    rank_values = np.log10(ranks.astype(np.float64) + 1).astype(np.float32)  # 0 = rank 0
    top = max(1.0, float(rank_values.max()))
    rank_trace = dict(type="heatmap", x=names, y=rows, z=rank_values, zmin=0.0, zmax=top, colorscale=RANK_SCALE,
                      customdata=[[[int(r), t] for r, t in zip(layer, final_text)] for layer in ranks],
                      xaxis="x2", yaxis="y2", xgap=1, ygap=1, showscale=False, meta={"word_rows": True},
                      hovertemplate="%{y}, position %{x}: the final prediction %{customdata[1]} has rank "
                                    "%{customdata[0]}<extra></extra>")
    if show_text:
        rank_trace.update(text=ranks.astype(np.int64).tolist(), texttemplate="%{text}", textfont=dict(size=10))
    axes = {"xaxis": dict(anchor="y", domain=[0.0, 1.0], matches="x2", showticklabels=False,
                          **{k: v for k, v in c.category_ticks(names, toks, room).items() if k not in ("tickfont", "ticktext")}),
            "yaxis": dict(anchor="x", domain=list(ys[0]), type="category", autorange="reversed"),
            "xaxis2": dict(anchor="y2", domain=[0.0, 1.0], **c.category_ticks(names, toks, room),
                           title=dict(text="position (input token)")),
            "yaxis2": dict(anchor="x2", domain=list(ys[1]), type="category", autorange="reversed")}
    notes = [_panel_title("top next token per layer (colour: its probability)", (0.0, 1.0), ys[0][1] + 0.005),
             _panel_title("rank of the final prediction in each layer (0 = top; colour: log scale)", (0.0, 1.0),
                          ys[1][1] + 0.02)]
    height = c.clamp(240 + 2 * 30 * n_rows, 380, 1100)
    return c.figure([lens_trace, rank_trace], dict(
        **c.base_layout(title, height, width, l=100, r=40, t=90, b=c.label_margin(toks) + 40), **axes,
        annotations=notes))

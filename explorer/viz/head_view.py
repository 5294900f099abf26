"""The head view as lines (BertViz's head view): queries in a column on the left, keys on the right, a line from
each query to each key it attends to, its opacity the weight; several heads at once, one colour each.

Shapes: values (H, Tq, Tk) for H chosen heads (at most len(PALETTE)); query labels (Tq,), key labels (Tk,),
head names (H,). The values are attention weights (`name=WEIGHT`, opacity relative to 1) or weight x |value
written| (`VALUE_WEIGHTED`, relative to the largest shown); nothing here runs a model.

Readable at 1,024 tokens: per head and query only the strongest lines are drawn, until they hold `mass` of the
row's total, at most `top_k`, none fainter than the faintest opacity bin; the figure says how many lines are
hidden. Plotly gives a trace one opacity, so the lines are binned: one trace per head and opacity bin, segments
separated by None (H x len(BINS) traces, whatever the length).

Keeping one query's lines, in a static HTML file too: the slider under the plot has a step per query token (step
0: every query). A step is a `Plotly.update` of the focus traces (one per head and bin, holding that query's lines;
their x is set once, long enough for any step and holding the gaps, so a step sends only y, as int16) and moves the x
range of the other lines out of view: each query's lines are sent twice (drawn, and in its step), never a third time
to restore them. Lines travel as typed arrays (numpy): y float32 with a NaN gap after each line, x int8. A page can
make a click or hover on a token do the same: the query markers' customdata is the query position and
`FOCUS_ON_CLICK_JS` applies the step of the query clicked (the slider's `steps[i + 1].args`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from explorer.viz import common as c

# Okabe & Ito's colour-blind-safe palette; yellow last (faint on white)
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000", "#F0E442")
BINS = (0.02, 0.1, 0.25, 0.5, 0.75)  # lower bounds of the opacity bins, as shares of the scale's top
OPACITY = (0.15, 0.3, 0.5, 0.7, 0.9)
LINE_WIDTH = (1.0, 1.3, 1.7, 2.2, 2.8)
SHOWN = (-0.04, 1.04)  # x range of the lines' axis while every query's lines are shown
AWAY = (10.0, 11.0)  # ... and while one query's are: the other lines are out of view
WORD_TEXT = {"word_text": True}  # the markers' hover texts are words around a token: said in a page's language
ROW_PX = 18  # room per token row (labels thinned when there is less: tick_step)
EXPLAIN = ("Each line: a query token (left) attends to a key (right); opacity = {what}.<br>The slider (in the app, "
           "a click on a query too) keeps that token's lines. The legend shows or hides a head.")


def _selected(v: np.ndarray, top: float, top_k: int, mass: float) -> np.ndarray:
    """(H, Tq, Tk) bool: the lines drawn. Per row, by decreasing value: the first top_k, while the values before
    hold less than `mass` of the row's total, and none below BINS[0] * top."""
    H, Tq, Tk = v.shape
    k = min(top_k, Tk)
    idx = np.argpartition(-v, k - 1, axis=-1)[..., :k] if k < Tk else np.broadcast_to(np.arange(Tk), v.shape)
    part = np.take_along_axis(v, idx, axis=-1)
    order = np.argsort(-part, axis=-1, kind="stable")
    idx, part = np.take_along_axis(idx, order, axis=-1), np.take_along_axis(part, order, axis=-1)  # (H, Tq, k)
    before = np.cumsum(part, axis=-1) - part
    keep = (before < mass * v.sum(-1, keepdims=True)) & (part >= BINS[0] * top) & (part > 0)
    chosen = np.zeros(v.shape, bool)
    h, q, r = np.nonzero(keep)
    chosen[h, q, idx[h, q, r]] = True
    return chosen


def _columns(n: int) -> np.ndarray:
    """x of n lines: [0, 1, 0] per line (the third point is the gap: its y is NaN), int8, sent as a typed array."""
    return np.tile(np.array([0, 1, 0], np.int8), n)


def _rows(queries: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """y of the lines query -> key with a NaN gap after each, float32 (a numpy array: plotly copies a list of a
    long trace point by point when it builds the figure, and sends it no shorter)."""
    out = np.full((len(queries), 3), np.nan, np.float32)
    out[:, 0], out[:, 1] = queries, keys
    return out.ravel()


def head_lines(values: Any, query_labels: Sequence[Any], key_labels: Sequence[Any], head_names: Sequence[str], *,
               name: str = c.WEIGHT, top_k: int = 8, mass: float = 0.9, title: str = "Heads as lines",
               width: int | None = None, height: int | None = None) -> go.Figure:
    """Lines from queries to keys for H heads at once: values (H, Tq, Tk) >= 0 (see the module docstring)."""
    v = c.to_numpy(values, np.float32)
    if v.ndim == 2:
        v = v[None]
    c.check_shape("values", v, (None, len(query_labels), len(key_labels)), "(heads, queries, keys)")
    H, Tq, Tk = v.shape
    if not 1 <= H <= len(PALETTE):
        raise ValueError(f"head_lines draws 1 to {len(PALETTE)} heads at once (colours a colour-blind reader can tell "
                         f"apart); got {H}")
    if len(head_names) != H:
        raise ValueError(f"{len(head_names)} head names for {H} heads")
    if not np.isfinite(v).all() or (v < 0).any():
        raise ValueError("values must be finite and >= 0 (attention weights, or weight x |value written|)")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be a positive number of lines per query, got {top_k!r}")
    if not 0 < mass <= 1:
        raise ValueError(f"mass must be in (0, 1], got {mass!r}")
    top = c.value_range(v, name)
    chosen = _selected(v, top, top_k, mass)
    heads = [c.escape(n) for n in head_names]
    q_names, k_names = c.unique_labels(query_labels), c.unique_labels(key_labels)

    # The drawn lines, grouped by trace (head, opacity bin), then query, then key.
    line_h, line_q, line_k = np.nonzero(chosen)
    level = np.searchsorted(BINS, v[line_h, line_q, line_k] / top, side="right") - 1  # >= 0: chosen lines are not
    trace = line_h * len(BINS) + level                                                  # fainter than BINS[0]
    order = np.lexsort((line_k, line_q, trace))
    trace, line_q, line_k = trace[order], line_q[order], line_k[order]
    bounds = np.searchsorted(trace, np.arange(H * len(BINS) + 1))
    wide = np.int16 if max(Tq, Tk) < 2**15 else np.int32
    main: list[dict[str, Any]] = []
    focus: list[dict[str, Any]] = []  # their twins, empty until a step fills them with one query's lines
    steps_y: list[list[Any]] = [[] for _ in range(Tq)]  # per query: the y of each focus trace
    for t in range(H * len(BINS)):
        h, b = divmod(t, len(BINS))
        qs, ks = line_q[bounds[t]:bounds[t + 1]], line_k[bounds[t]:bounds[t + 1]]
        style = dict(type="scatter", mode="lines", hoverinfo="skip", legendgroup=f"h{h}", name=heads[h],
                     line=dict(color=PALETTE[h], width=LINE_WIDTH[b]), opacity=OPACITY[b], showlegend=False)
        main.append(dict(style, x=_columns(len(qs)), y=_rows(qs, ks), xaxis="x", yaxis="y"))
        # A step's y of this trace: [q, k, 0] per line, the gap in x (NaN every third point); numpy views (plotly
        # copies a list number by number when it builds the figure, an array as one object), [] for none.
        rows = np.zeros((len(qs), 3), wide)
        rows[:, 0], rows[:, 1] = qs, ks
        starts = np.searchsorted(qs, np.arange(Tq + 1))
        for i, (a, z) in enumerate(zip(starts[:-1].tolist(), starts[1:].tolist())):
            steps_y[i].append(rows[a:z].ravel() if z > a else [])
        most = int(np.diff(starts).max(initial=0))
        focus.append(dict(style, x=np.tile(np.array([0, 1, np.nan], np.float32), most), y=[], xaxis="x2", yaxis="y"))
    # The legend: one entry per head, styled as its strongest bin, toggling its whole group; a trace of its own, since
    # a head's line traces may be empty (plotly hides an empty trace, and its legend entry with it).
    legend = [dict(type="scatter", mode="lines", x=[None], y=[None], hoverinfo="skip", legendgroup=f"h{h}",
                   name=heads[h], line=dict(color=PALETTE[h], width=LINE_WIDTH[-1]), opacity=OPACITY[-1],
                   showlegend=True, xaxis="x2", yaxis="y") for h in range(H)]

    # Token markers: hover names the token (and each head's strongest key); customdata is the position.
    strongest = v.argmax(-1)  # (H, Tq)
    hover = []
    for i in range(Tq):
        lines = [f"{heads[h]}: → {c.escape(c.short(k_names[strongest[h, i]], 24))} {v[h, i, strongest[h, i]]:.3f}"
                 for h in range(H) if v[h, i].max() > 0]
        hover.append(f"query {c.escape(q_names[i])} ({i})<br>" + "<br>".join(lines))
    markers = [
        dict(type="scatter", mode="markers", x=[0] * Tq, y=list(range(Tq)), xaxis="x2", yaxis="y", name="queries",
             marker=dict(color="#555", size=6), customdata=list(range(Tq)), text=hover, meta=WORD_TEXT,
             hovertemplate="%{text}<extra></extra>", showlegend=False),
        dict(type="scatter", mode="markers", x=[1] * Tk, y=list(range(Tk)), xaxis="x2", yaxis="y2", name="keys",
             marker=dict(color="#555", size=6, symbol="diamond"), customdata=list(range(Tk)),
             text=[f"key {c.escape(k)} ({j})" for j, k in enumerate(k_names)], hovertemplate="%{text}<extra></extra>",
             meta=WORD_TEXT, showlegend=False),
    ]
    # the text alternative's words (describe_points): each query's strongest key over the heads, each key
    best = v.max(-1).argmax(0).tolist()  # (Tq,) the head whose strongest key is the query's strongest
    markers[0]["meta"] = {**markers[0].get("meta", {}), "point_words": "query_head_most", "points": [
        {"token": c.escape(q), "position": i, "head": heads[h], "strongest": c.escape(k_names[strongest[h, i]]),
         "weight": round(float(v[h, i, strongest[h, i]]), 4)} if v[h, i].max() > 0 else
        {"words": "query", "token": c.escape(q), "position": i} for i, (q, h) in enumerate(zip(q_names, best))]}
    markers[1]["meta"] = {**markers[1].get("meta", {}), "point_words": "key",
                          "points": [{"token": c.escape(k), "position": j} for j, k in enumerate(k_names)]}
    traces = main + focus + legend + markers
    focus_ids = list(range(len(main), len(main) + len(focus)))

    drawn, nonzero = int(chosen.sum()), int((v > 0).sum())
    n = max(Tq, Tk)
    fig_height = height or c.clamp(230 + ROW_PX * n, 400, 1400)
    room = fig_height - 230
    what = "weight" if name == c.WEIGHT else f"{c.escape(name)} (relative to the largest, {top:.3g})"
    note = (f"{drawn:,} of {nonzero:,} lines drawn, {nonzero - drawn:,} hidden: per query and head, the strongest<br>"
            f"holding {mass:.0%} of its row, at most {top_k}, none below {BINS[0] * top:.3g}")
    steps = [dict(label="every query", method="update",
                  args=[{"y": [[] for _ in focus]}, {"xaxis.range": list(SHOWN)}, focus_ids])]
    steps += [dict(label=f"{c.escape(c.short(q_names[i], 24))} ({i})", method="update",
                   args=[{"y": steps_y[i]}, {"xaxis.range": list(AWAY)}, focus_ids]) for i in range(Tq)]
    longest = max(map(len, q_names + k_names), default=1)
    side = c.clamp(24 + 6.5 * min(longest, c.MAX_TICK_CHARS), 50, 160)
    layout = dict(
        **c.base_layout(c.escape(title), fig_height, width, l=side, r=side, t=120, b=110),
        xaxis=dict(range=list(SHOWN), visible=False, fixedrange=True),
        xaxis2=dict(range=list(SHOWN), visible=False, fixedrange=True, overlaying="x"),
        yaxis=dict(_ticks(q_names, room), range=[n - 0.5, -0.5], zeroline=False, showgrid=False,
                   title=dict(text="query (attends from)")),
        yaxis2=dict(_ticks(k_names, room), matches="y", overlaying="y", side="right", zeroline=False,
                    showgrid=False, title=dict(text="key (attended to)")),
        legend=dict(orientation="h", x=0, xanchor="left", y=1.0, yanchor="bottom", font=dict(size=11),
                    itemclick="toggle", itemdoubleclick="toggleothers"),
        annotations=[dict(c.caption(EXPLAIN.format(what=what)), yshift=30, align="left"),
                     dict(c.caption(note), y=0, yanchor="top", yshift=-4, align="left",
                          font=dict(size=11, color="#666"))],
        sliders=[dict(active=0, steps=steps, x=0, len=1, y=0, yanchor="top", pad=dict(t=36, b=0),
                      currentvalue=dict(prefix="query: ", font=dict(size=12, color="#333")),
                      font=dict(color="rgba(0,0,0,0)"), ticklen=2, minorticklen=0)],
        hovermode="closest",
    )
    return c.figure(traces, layout)


def _ticks(names: Sequence[str], room_px: float) -> dict[str, Any]:
    """A numeric axis of token rows labelled with the (cut, escaped) names, thinned to fit `room_px`."""
    step = c.tick_step(len(names), room_px)
    rows = list(range(0, len(names), step))
    return dict(tickmode="array", tickvals=rows, ticktext=[c.escape(c.short(names[i])) for i in rows],
                tickfont=dict(size=c.TICK_FONT_SIZE))


# For a page (not needed in a static file, where the slider does it): a click on a query marker of a head_lines
# figure (its name "queries", or its meta's en_name where the name is said in another language) applies that query's
# slider step; a click on the same query again shows every query. `plot` is the figure's
# div (the element with class js-plotly-plot).
FOCUS_ON_CLICK_JS = """
(plot) => {
  plot.on('plotly_click', (event) => {
    const point = event && event.points && event.points[0];
    const slider = plot.layout.sliders && plot.layout.sliders[0];
    const meta = point && point.data.meta;  // a page in another language keeps the English name there
    if (!point || !slider || ((meta && meta.en_name) || point.data.name) !== 'queries') return;
    const step = slider.active === point.customdata + 1 ? 0 : point.customdata + 1;
    window.Plotly.update(plot, ...slider.steps[step].args);
    window.Plotly.relayout(plot, {'sliders[0].active': step});
  });
}
"""

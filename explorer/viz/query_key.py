"""One head's queries and keys in one picture (AttentionViz's joint view), from an explorer.interpret.QueryKeyMap:
queries as filled circles, keys as open diamonds, both coloured by position; the hover names the token, its
position (and sequence) and, for a query, the keys it attends to most. With `query` chosen, lines from it to its
strongest keys. Nothing here runs a model.

Shapes: Nq queries, Nk keys (over the sequences of the map); labels per sequence: query_labels[s][position].
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from explorer.viz import common as c

QUERY_SYMBOL, KEY_SYMBOL = "circle", "diamond-open"
WORD_TEXT = {"word_text": True}  # the hover texts are words around a token: said in a page's language
FOCUS_COLOR = "#D55E00"  # Okabe-Ito vermilion: the chosen query and its lines, apart from Viridis


def _per_sequence(labels: Sequence[Any] | Sequence[Sequence[Any]]) -> list[list[str]]:
    """A flat list of one sequence's labels, or one list per sequence -> unique labels per sequence."""
    if labels and isinstance(labels[0], str):
        labels = [labels]
    return [c.unique_labels(list(seq)) for seq in labels]


def _names(labels: list[list[str]], sequence: np.ndarray, position: np.ndarray, what: str) -> list[str]:
    out = []
    for s, p in zip(sequence.tolist(), position.tolist()):
        if s >= len(labels) or p >= len(labels[s]):
            raise ValueError(f"no {what} label for sequence {s}, position {p}: give one list of labels per sequence")
        out.append(labels[s][p])
    return out


def query_key_figure(qk: Any, query_labels: Sequence[Any] | Sequence[Sequence[Any]],
                     key_labels: Sequence[Any] | Sequence[Sequence[Any]] | None = None, *,
                     query: int | None = None, title: str | None = None, width: int | None = None,
                     height: int = 560) -> go.Figure:
    """The joint picture of a QueryKeyMap. key_labels: None for self-attention (the query labels); `query`: a query
    (an index into the map's queries) whose strongest keys get lines."""
    q_labels = _per_sequence(query_labels)
    k_labels = q_labels if key_labels is None else _per_sequence(key_labels)
    q_names = _names(q_labels, qk.query_sequence, qk.query_position, "query")
    k_names = _names(k_labels, qk.key_sequence, qk.key_position, "key")
    several = len(set(qk.query_sequence.tolist()) | set(qk.key_sequence.tolist())) > 1

    def where(s: int, p: int) -> str:
        return f"position {p}" + (f", sequence {s + 1}" if several else "")

    q_hover = []
    for i, name in enumerate(q_names):
        strongest = [f"{c.escape(c.short(k_names[j], 24))} {w:.2f}"
                     for j, w in zip(qk.top_keys[i].tolist(), qk.top_weights[i].tolist()) if j >= 0]
        q_hover.append(f"query {c.escape(name)} ({where(qk.query_sequence[i], qk.query_position[i])})"
                       + ("<br>attends most to " + ", ".join(strongest) if strongest else ""))
    k_hover = [f"key {c.escape(name)} ({where(qk.key_sequence[j], qk.key_position[j])})"
               for j, name in enumerate(k_names)]
    top = float(max(qk.query_position.max(initial=0), qk.key_position.max(initial=0), 1))
    colour = dict(colorscale=c.WEIGHT_SCALE, cmin=0.0, cmax=top)
    traces: list[dict[str, Any]] = [
        dict(type="scatter", mode="markers", name="keys", x=qk.keys[:, 0], y=qk.keys[:, 1], text=k_hover,
             hovertemplate="%{text}<extra></extra>", customdata=np.stack([qk.key_sequence, qk.key_position], 1),
             meta=WORD_TEXT,
             marker=dict(symbol=KEY_SYMBOL, size=9, color=qk.key_position.astype(np.float32),
                         line=dict(width=1.6), **colour)),
        dict(type="scatter", mode="markers", name="queries", x=qk.queries[:, 0], y=qk.queries[:, 1], text=q_hover,
             hovertemplate="%{text}<extra></extra>", meta=WORD_TEXT,
             customdata=np.stack([qk.query_sequence, qk.query_position], 1),
             marker=dict(symbol=QUERY_SYMBOL, size=7, color=qk.query_position.astype(np.float32),
                         line=dict(width=0.5, color="white"),
                         colorbar=dict(title=dict(text="position"), thickness=12, len=0.8), **colour)),
    ]
    # the text alternative's words (describe_points): each point's token and position, a query's strongest key
    traces[0]["meta"] = {**traces[0].get("meta", {}), "point_words": "key", "points": [
        {"token": c.escape(name), "position": int(p)} for name, p in zip(k_names, qk.key_position.tolist())]}
    traces[1]["meta"] = {**traces[1].get("meta", {}), "point_words": "query_most", "points": [
        {"token": c.escape(name), "position": int(p), "strongest": c.escape(k_names[int(top[0])]),
         "weight": float(w[0])}
        if int(top[0]) >= 0 else {"words": "query", "token": c.escape(name), "position": int(p)}
        for name, p, top, w in zip(q_names, qk.query_position.tolist(), qk.top_keys, qk.top_weights)]}
    if query is not None:
        if isinstance(query, bool) or not isinstance(query, (int, np.integer)) or not 0 <= query < len(q_names):
            raise ValueError(f"query {query!r} is outside the map's {len(q_names)} queries: use 0..{len(q_names) - 1}")
        x0, y0 = qk.queries[query]
        for j, w in zip(qk.top_keys[query].tolist(), qk.top_weights[query].tolist()):
            if j < 0:
                continue
            traces.append(dict(type="scatter", mode="lines", x=[float(x0), float(qk.keys[j, 0])],
                               y=[float(y0), float(qk.keys[j, 1])], hoverinfo="skip", showlegend=False,
                               line=dict(color=FOCUS_COLOR, width=round(1 + 5 * w, 2)), opacity=0.8))
        traces.append(dict(type="scatter", mode="markers", x=[float(x0)], y=[float(y0)], name="chosen query",
                           hoverinfo="skip", marker=dict(symbol="circle-open", size=16, color=FOCUS_COLOR,
                                                         line=dict(width=2.5))))
    head = f"{qk.kind} L{qk.layer} H{qk.head}" + (f" (K/V head {qk.kv_head})" if qk.kv_head != qk.head else "")
    title = title or f"Queries and keys of {head}"
    pc = [f"PC {i + 1} ({share:.0%} of the variance)" for i, share in enumerate(qk.explained.tolist())]
    note = ("Queries ● and keys ◇ projected together (PCA). Keys scaled and shifted as AttentionViz does, which "
            "changes no weight:<br>near a query are keys it scores high. Hover a query for the keys it attends to most.")
    axis = dict(showticklabels=False, zeroline=False, showgrid=True, gridcolor="#eee")
    return c.figure(traces, dict(
        **c.base_layout(c.escape(title), height, width, l=40, r=20, t=110, b=50),
        xaxis=dict(axis, title=dict(text=pc[0])),
        yaxis=dict(axis, title=dict(text=pc[1]), scaleanchor="x", scaleratio=1),
        legend=dict(orientation="h", x=1, xanchor="right", y=1.0, yanchor="bottom"),
        annotations=[dict(c.caption(note), yshift=24, align="left")], hovermode="closest",
    ))

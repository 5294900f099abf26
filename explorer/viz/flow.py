"""The contribution graph of Information Flow Routes (explorer.interpret.contribution_graph) as a Plotly figure.

Drawing only: the graph comes computed (any object with its attributes: root, nodes, edges, layers, lengths,
parallel, cross, threshold); nothing here runs a model. Tokens go along x (an encoder-decoder's source tokens to
the left of its target tokens), layers up y: the embeddings at 0, layer l's state after self-attention at
l + 0.5 (l + 0.35, and after cross-attention l + 0.7, with cross-attention), its output at l + 1. A marker per
kept node; an edge per kept part, coloured by kind (self-attention head, cross-attention head, MLP, residual),
its width growing with the share. MLP edges bend right of the residual one they run beside; several heads
between the same two nodes fan out. Each edge's midpoint is a marker whose hover names the part (head, layer,
tokens, share) and whose customdata is [kind, layer, head, attention, share] (head and attention None for MLP
and residual edges), so an app can open the head that was clicked.

    flow_figure(graph, labels (T,), source_labels (S,) | None)          one graph
    flow_pair_figure(baseline, toggled, labels, source_labels)          two graphs side by side, same axes
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from explorer.labels import unique_labels
from explorer.viz import common as c

COLORS = {"head": "#0072B2", "cross": "#CC79A7", "mlp": "#E69F00", "residual": "#777777"}  # Okabe-Ito; a grey apart from them (colour_vision)
ROOT_COLOR, NODE_COLOR = "#d62728", "#222222"  # the chosen token's node, the others
NAMES = {"head": "self-attention head", "cross": "cross-attention head", "mlp": "MLP", "residual": "residual"}
WORD_TEXT = {"word_text": True}  # the hover texts are words around a token: said in a page's language
WORD_TICKS = {"word_ticks": ["yaxis", "yaxis2"]}  # the rows' ticks are words ("embeddings", "layer 0"), not tokens
WIDTH_BINS = (0.1, 0.2, 0.4, 0.7, 1.01)  # shares below each bound share one line width
SUBLAYER_NAMES = {"embed": "embeddings", "attn": "after self-attention", "cross": "after cross-attention",
                  "out": "layer output"}
EXPLAIN = ("Routes to the chosen token: each edge is a part of a residual update with share >= {t:g} "
           "(proximity, Ferrando & Voita 2024); width = share. Click a head's edge midpoint to open it.")


def _y(node: Any, graph: Any) -> float:
    if node.sublayer == "embed":
        return 0.0
    if node.sublayer == "out":
        return node.layer + 1.0
    if node.sublayer == "cross":
        return node.layer + 0.7
    return node.layer + (0.35 if graph.cross and node.stack == "decoder" else 0.5)


def _x(node: Any, graph: Any) -> float:
    """Positions along x: an encoder-decoder's encoder tokens first, a gap of one, then the decoder's."""
    if graph.cross and node.stack == "decoder":
        return graph.lengths.get("encoder", 0) + 1 + node.position
    return float(node.position)


def _kind(edge: Any) -> str:
    return "cross" if edge.kind == "head" and edge.attention == "cross" else edge.kind


def _token(node: Any, labels: Sequence[str], source: Sequence[str] | None) -> str:
    names = source if node.stack == "encoder" and source is not None else labels
    text = names[node.position] if node.position < len(names) else f"#{node.position}"
    return f"{c.escape(c.short(text, 24))} ({node.position})"


def _point(edge: Any, kind: str, labels: Sequence[str], source: Sequence[str] | None) -> dict[str, Any]:
    """An edge's midpoint in a text alternative's words (describe_points: "edge_head", ...), from the edge's data."""
    def token(node: Any) -> str:
        names = source if node.stack == "encoder" and source is not None else labels
        return c.escape(c.short(names[node.position], 24)) if node.position < len(names) else f"#{node.position}"

    return {"layer": edge.layer, **({"head": edge.head} if kind in ("head", "cross") else {}),
            "source": token(edge.source), "source_at": edge.source.position, "target": token(edge.target),
            "target_at": edge.target.position, "share": round(float(edge.share), 4)}


def _where(node: Any) -> str:
    name = SUBLAYER_NAMES[node.sublayer]
    return name if node.sublayer == "embed" else f"layer {node.layer}, {name}"


def _check(graph: Any, labels: Sequence[str], source_labels: Sequence[str] | None) -> None:
    length = graph.lengths.get(graph.root.stack, 0)
    if len(labels) != length:
        raise ValueError(f"{len(labels)} labels for a graph over {length} tokens")
    if graph.cross and (source_labels is None or len(source_labels) != graph.lengths.get("encoder", 0)):
        raise ValueError(f"an encoder-decoder's graph needs its {graph.lengths.get('encoder', 0)} source labels")


def _traces(graph: Any, labels: Sequence[str], source_labels: Sequence[str] | None, axes: tuple[str, str],
            shown: set[str]) -> list[dict[str, Any]]:
    """Edge lines (one trace per kind and width bin), edge midpoints (hover, click) and node markers; `shown`: the
    kinds already in the legend (updated), so a pair of graphs lists each kind once."""
    xa, ya = axes
    lines: dict[tuple[str, int], tuple[list, list]] = {}
    mids: dict[str, dict[str, list]] = {}
    fan: dict[tuple[Any, Any], int] = {}
    points: dict[str, list[dict[str, Any]]] = {}  # each kind's midpoints in words (describe_points)
    H = max(1, graph.n_heads)
    for e in graph.edges:
        kind = _kind(e)
        x0, y0, x1, y1 = _x(e.source, graph), _y(e.source, graph), _x(e.target, graph), _y(e.target, graph)
        mx, my = (x0 + x1) / 2, (y0 + y1) / 2
        if kind == "mlp":
            mx += 0.25
        elif kind in ("head", "cross"):
            n = fan[(e.source, e.target)] = fan.get((e.source, e.target), -1) + 1
            if n or x0 == x1:  # heads between the same nodes, or along the residual line: spread apart
                mx += (0.3 if x0 == x1 else 0.0) + 0.12 * (e.head - (H - 1) / 2) / max(1, H / 4)
        width_bin = next(i for i, bound in enumerate(WIDTH_BINS) if e.share < bound)
        xs, ys = lines.setdefault((kind, width_bin), ([], []))
        xs += [x0, mx, x1, None]
        ys += [y0, my, y1, None]
        points.setdefault(kind, []).append(_point(e, kind, labels, source_labels))
        m = mids.setdefault(kind, {"x": [], "y": [], "text": [], "customdata": []})
        m["x"].append(mx)
        m["y"].append(my)
        what = (f"L{e.layer} H{e.head} ({'cross' if kind == 'cross' else 'self'}-attention)"
                if kind in ("head", "cross") else f"L{e.layer} {NAMES[kind]}")
        m["text"].append(f"{what}<br>from {_token(e.source, labels, source_labels)}, "
                         f"{SUBLAYER_NAMES[e.source.sublayer]}<br>to {_token(e.target, labels, source_labels)}, "
                         f"{SUBLAYER_NAMES[e.target.sublayer]}<br>share {e.share:.3f} (renormalised {e.weight:.3f})")
        m["customdata"].append([e.kind, e.layer, e.head, e.attention, round(e.share, 4)])
    traces: list[dict[str, Any]] = []
    for (kind, width_bin), (xs, ys) in sorted(lines.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        width = 1.0 + 7.0 * (WIDTH_BINS[width_bin - 1] if width_bin else 0.05)
        traces.append(dict(type="scatter", mode="lines", x=xs, y=ys, xaxis=xa, yaxis=ya, hoverinfo="skip",
                           line=dict(color=COLORS[kind], width=round(width, 2)), opacity=0.75,
                           name=NAMES[kind], legendgroup=kind, showlegend=kind not in shown))
        shown.add(kind)
    for kind, m in mids.items():
        traces.append(dict(type="scatter", mode="markers", x=m["x"], y=m["y"], xaxis=xa, yaxis=ya,
                           marker=dict(color=COLORS[kind], size=7, line=dict(color="white", width=1)),
                           text=m["text"], customdata=m["customdata"], hovertemplate="%{text}<extra></extra>",
                           meta=WORD_TEXT,
                           name=NAMES[kind], legendgroup=kind, showlegend=False))
    for trace, kind in zip(traces[len(traces) - len(mids):], mids):  # the midpoints' words for the text alternative
        words = "edge_head" if kind in ("head", "cross") else f"edge_{kind}"
        trace["meta"] = {**trace.get("meta", {}), "point_words": words, "points": points[kind], "points_by": "share"}
    nodes = [n for n in graph.nodes]
    traces.append(dict(
        type="scatter", mode="markers", xaxis=xa, yaxis=ya, showlegend=False, name="nodes",
        x=[_x(n, graph) for n in nodes], y=[_y(n, graph) for n in nodes],
        marker=dict(color=[ROOT_COLOR if n == graph.root else NODE_COLOR for n in nodes],
                    size=[13 if n == graph.root else 8 for n in nodes], symbol="circle"),
        text=[f"{n.stack} {_token(n, labels, source_labels)}<br>" + _where(n) for n in nodes],
        hovertemplate="%{text}<extra></extra>", meta=WORD_TEXT))
    return traces


def _axes(graph: Any, labels: Sequence[str], source_labels: Sequence[str] | None, room_px: float
          ) -> tuple[dict[str, Any], dict[str, Any]]:
    top = graph.layers.get(graph.root.stack, 0)
    if graph.cross:
        top = max(top, graph.layers.get("encoder", 0))
    names = list(unique_labels(labels))
    positions = list(range(len(names)))
    if graph.cross:
        src = list(unique_labels(source_labels))
        offset = len(src) + 1
        names, positions = src + names, list(range(len(src))) + [offset + p for p in positions]
    step = c.tick_step(len(names), room_px)
    idx = list(range(0, len(names), step))
    xaxis = dict(tickmode="array", tickvals=[positions[i] for i in idx],
                 ticktext=[c.escape(c.short(names[i])) for i in idx], tickangle=-60 if len(names) > 12 else 0,
                 tickfont=dict(size=c.TICK_FONT_SIZE), range=[-0.7, max(positions) + 0.9], showgrid=False,
                 zeroline=False, automargin=True)
    yaxis = dict(tickmode="array", tickvals=[0] + [l + 1 for l in range(top)],
                 ticktext=["embeddings"] + [f"layer {l}" for l in range(top)], range=[-0.35, top + 0.35],
                 gridcolor="#eee", zeroline=False, automargin=True)
    return xaxis, yaxis


def _height(graph: Any) -> int:
    top = max(graph.layers.values()) if graph.layers else 1
    return c.clamp(260 + 130 * top, 500, 900)


def flow_figure(graph: Any, labels: Sequence[str], source_labels: Sequence[str] | None = None,
                title: str = "Information flow routes", *, width: int | None = None) -> go.Figure:
    """One contribution graph: labels are the traced stack's tokens (T,); source_labels an encoder-decoder's
    source tokens (S,)."""
    _check(graph, labels, source_labels)
    height = _height(graph)
    layout = c.base_layout(c.escape(title), height, width, b=90, t=110)
    xaxis, yaxis = _axes(graph, labels, source_labels, (width or c.DEFAULT_WIDTH) - 120)
    layout.update(xaxis=xaxis, yaxis=yaxis, hovermode="closest", meta=WORD_TICKS,
                  legend=dict(orientation="h", x=0.0, xanchor="left", y=1.07, yanchor="bottom"),
                  annotations=[c.caption(EXPLAIN.format(t=graph.threshold))])
    if not graph.edges:
        layout["annotations"].append(dict(text="No part passes the threshold", x=0.5, y=0.5, xref="paper",
                                          yref="paper", showarrow=False))
    return c.figure(_traces(graph, labels, source_labels, ("x", "y"), set()), layout)


def flow_pair_figure(baseline: Any, toggled: Any, labels: Sequence[str], source_labels: Sequence[str] | None = None,
                     titles: tuple[str, str] = ("Baseline", "With your toggles"), *,
                     width: int | None = None) -> go.Figure:
    """Two graphs of the same input side by side (e.g. all heads on vs some switched off), same scales."""
    for g in (baseline, toggled):
        _check(g, labels, source_labels)
    height = _height(baseline)
    layout = c.base_layout("Information flow routes", height, width, b=90, t=130)
    room = ((width or c.DEFAULT_WIDTH) - 160) / 2
    gap = 0.06
    traces: list[dict[str, Any]] = []
    shown: set[str] = set()
    annotations = [c.caption(EXPLAIN.format(t=baseline.threshold))]
    for k, (g, title) in enumerate(((baseline, titles[0]), (toggled, titles[1]))):
        xaxis, yaxis = _axes(g, labels, source_labels, room)
        suffix = "" if k == 0 else "2"
        lo, hi = (0.0, 0.5 - gap / 2) if k == 0 else (0.5 + gap / 2, 1.0)
        layout[f"xaxis{suffix}"] = dict(xaxis, domain=[lo, hi], anchor=f"y{suffix}")
        layout[f"yaxis{suffix}"] = dict(yaxis, anchor=f"x{suffix}", showticklabels=k == 0)
        traces += _traces(g, labels, source_labels, (f"x{suffix}", f"y{suffix}"), shown)
        annotations.append(dict(text=f"<b>{c.escape(title)}</b>", x=(lo + hi) / 2, xanchor="center", y=1.005,
                                yanchor="bottom", xref="paper", yref="paper", showarrow=False,
                                font=dict(size=13)))
    annotations[0]["y"] = 1.07
    layout.update(hovermode="closest", annotations=annotations, meta=WORD_TICKS,
                  legend=dict(orientation="h", x=0.0, xanchor="left", y=1.13, yanchor="bottom"))
    return c.figure(traces, layout)

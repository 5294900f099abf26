"""A circuit (explorer.interpret.circuits) as Plotly figures: its graph drawn by layer, and its faithfulness curve.

Drawing only: names and numbers come computed; nothing here runs a model. Node names are the core's
(`embed` / `{stream}.embed`, `{kind}.L{l}.H{h}`, `{stack}.L{l}.mlp`, `logits`), receivers a node's name plus `.q`,
`.k`, `.v` (a head's query, key and value inputs) or `.in` (an MLP's input), or `logits`.

    circuit_figure(nodes, edges, kept, title)     nodes: every node of the graph; edges: (upstream, receiver, score,
                                                  exact | None) of the circuit, strongest first; kept: its nodes
    curve_figure(sizes, kept, found, held_out, chosen, chosen_value, title)

The graph: left to right in forward order (an encoder's columns, then the decoder's: each layer's self-attention
heads, its cross-attention heads, its MLP; the logits last), heads stacked by index. Each edge runs from its
upstream node to its receiver; the input it feeds is told by its dash and by the marker where it arrives (query:
solid, circle above the node; key: dashed, diamond level; value: dotted, square below; MLP input and logits:
solid, triangle). Width and colour grow with |score| (blue < 0 < red, the scale beside it); the marker at an edge's
middle holds its hover: the edge, its score and its exact patch when it was patched alone.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import plotly.colors as pc
import plotly.graph_objects as go

from explorer.viz import common as c

WORD_TEXT = {"word_text": "hovertext"}  # the hover texts (not the nodes' drawn names): said in a page's language
WORD_TICKS = {"word_ticks": ["xaxis"]}  # the columns' ticks are words ("dec L1 heads"), not tokens
MAX_DRAWN = 300  # edges drawn at most (the strongest); the caption says when more are in the circuit
ROLES = {  # receiver role -> (legend name, dash, arrival marker, y offset at the receiver)
    "q": ("into a query (solid line, ●)", "solid", "circle", 0.28),
    "k": ("into a key (dashed line, ◆)", "dash", "diamond", 0.0),
    "v": ("into a value (dotted line, ■)", "dot", "square", -0.28),
    "in": ("into an MLP (▶)", "solid", "triangle-right", 0.0),
    "logits": ("into the logits (▶)", "solid", "triangle-right", 0.0),
}
_HEAD = re.compile(r"(encoder|decoder|cross)\.L(\d+)\.H(\d+)")
_MLP = re.compile(r"(encoder|decoder)\.L(\d+)\.mlp")
NODE_COLORS = {"embed": "#555555", "encoder": "#0072B2", "decoder": "#0072B2", "cross": "#CC79A7", "mlp": "#E69F00",
               "logits": "#000000"}


def parse_node(name: str) -> tuple[str, str, int, int]:
    """-> (stream, kind, layer, head): kind "embed", "encoder" / "decoder" / "cross" (a head), "mlp" or "logits"."""
    if name == "logits":
        return "decoder", "logits", 10**6, -1
    if name.endswith("embed"):
        return (name.split(".")[0] if "." in name else "decoder"), "embed", -1, -1
    m = _HEAD.fullmatch(name)
    if m:
        kind = m.group(1)
        return ("encoder" if kind == "encoder" else "decoder"), kind, int(m.group(2)), int(m.group(3))
    m = _MLP.fullmatch(name)
    if m:
        return m.group(1), "mlp", int(m.group(2)), -1
    raise ValueError(f"not a circuit node: {name!r}")


def receiver_node(receiver: str) -> tuple[str, str]:
    """A receiver's name -> (its node's name, its role: q, k, v, in or logits)."""
    if receiver == "logits":
        return "logits", "logits"
    node, _, role = receiver.rpartition(".")
    if role not in ROLES or not node:
        raise ValueError(f"not a circuit receiver: {receiver!r}")
    return node, role


def _column(name: str) -> tuple:
    stream, kind, layer, _ = parse_node(name)
    order = {"embed": 0, "encoder": 1, "decoder": 1, "cross": 2, "mlp": 3, "logits": 4}[kind]
    return (stream != "encoder", layer, order)


def positions(nodes: Sequence[str]) -> dict[str, tuple[float, float]]:
    """Each node's (x, y): x its column in forward order, y minus its head index (heads top-down), other nodes in the
    middle of the heads."""
    columns = sorted({_column(n) for n in nodes})
    x_of = {col: i for i, col in enumerate(columns)}
    heads = max((parse_node(n)[3] for n in nodes), default=0) + 1
    middle = -(heads - 1) / 2
    out = {}
    for n in nodes:
        head = parse_node(n)[3]
        out[n] = (float(x_of[_column(n)]), -float(head) if head >= 0 else middle)
    return out


def short_name(name: str) -> str:
    """A node's label on the graph: "L0 H1", "L1 MLP", "embed", "logits" (cross heads "×L0 H1")."""
    _, kind, layer, head = parse_node(name)
    if kind == "embed":
        return "enc embed" if name.startswith("encoder") else "dec embed" if name.startswith("decoder") else "embed"
    if kind == "logits":
        return "logits"
    if kind == "mlp":
        return f"L{layer} MLP"
    return f"{'×' if kind == 'cross' else ''}L{layer} H{head}"


def _score_color(score: float, top: float) -> str:
    """Blue below 0, red above, darker with |score|; never the scale's white middle (a weak edge stays visible)."""
    share = min(1.0, abs(score) / top)
    t = 0.5 + (0.25 + 0.25 * share) * (1 if score > 0 else -1)
    return pc.sample_colorscale(c.DIVERGING_SCALE, [t])[0]


def _exact_text(exact: float | None) -> str:
    return "not patched alone (only the strongest edges are)" if exact is None else f"{exact:+.4g}"


def circuit_figure(nodes: Sequence[str], edges: Sequence[tuple[str, str, float, float | None]],
                   kept: Sequence[str], title: str = "The circuit", *, score_name: str = "score",
                   height: int | None = None) -> go.Figure:
    """See the module docstring."""
    if not edges:
        return c.message_figure("The circuit has no edges: every edge is patched from the corrupted run.")
    nodes = [*nodes, *(["logits"] if "logits" not in nodes else [])]  # the core's nodes write; the logits read
    where = positions(nodes)
    drawn = list(edges[:MAX_DRAWN])
    top = max(abs(e[2]) for e in drawn) or 1.0
    traces: list[dict[str, Any]] = []
    for up, receiver, score, _exact in drawn:
        node, role = receiver_node(receiver)
        (x0, y0), (x1, y1) = where[up], where[node]
        _, dash, _, dy = ROLES[role]
        traces.append(dict(type="scatter", mode="lines", x=[x0 + 0.12, x1 - 0.14], y=[y0, y1 + dy],
                           line=dict(color=_score_color(score, top), width=1 + 5 * abs(score) / top, dash=dash),
                           hoverinfo="skip", showlegend=False, legendgroup=role))
    for role, (label, dash, symbol, dy) in ROLES.items():  # arrivals, one trace (and legend entry) per input kind
        mine = [receiver_node(r)[0] for _, r, _, _ in drawn if receiver_node(r)[1] == role]
        if not mine:
            continue
        traces.append(dict(type="scatter", mode="markers", name=label, legendgroup=role,
                           x=[where[n][0] - 0.14 for n in mine], y=[where[n][1] + dy for n in mine],
                           marker=dict(symbol=symbol, size=8, color="#555", line=dict(color="#222", width=0.8)),
                           hoverinfo="skip"))
    mids = []
    for up, receiver, score, exact in drawn:
        node, role = receiver_node(receiver)
        (x0, y0), (x1, y1) = where[up], where[node]
        mids.append(((x0 + x1) / 2, (y0 + y1 + ROLES[role][3]) / 2,
                     (f"{c.escape(up)} → {c.escape(receiver)}<br>{c.escape(score_name)}: {score:+.4g}<br>exact "
                      f"patch (this edge alone from the corrupted run): {_exact_text(exact)}"), score))
    traces.append(dict(type="scatter", mode="markers", x=[m[0] for m in mids], y=[m[1] for m in mids],
                       hovertext=[m[2] for m in mids], hoverinfo="text", showlegend=False, name="edges",
                       meta=WORD_TEXT,
                       marker=dict(size=7, color=[m[3] for m in mids], colorscale=c.DIVERGING_SCALE, cmin=-top,
                                   cmax=top, opacity=0.9, line=dict(color="#333", width=0.5),
                                   colorbar=dict(title=dict(text=score_name, side="right"), thickness=12, len=0.7)),
                       customdata=[[e[0], e[1]] for e in drawn]))
    inside = {*kept, "logits"}
    for members, style in (([n for n in nodes if n not in inside], dict(size=9, color="#d9d9d9")),
                           ([n for n in nodes if n in inside], None)):
        if not members:
            continue
        marker = style or dict(size=16, color=[NODE_COLORS[parse_node(n)[1]] for n in members],
                               line=dict(color="#222", width=1))
        traces.append(dict(type="scatter", mode="markers+text" if style is None else "markers",
                           x=[where[n][0] for n in members], y=[where[n][1] for n in members],
                           text=[short_name(n) for n in members] if style is None else None,
                           textposition="top center", textfont=dict(size=10, color="#111"),
                           hovertext=[c.escape(n) + ("" if style is None else " (not in the circuit)") for n in members],
                           hoverinfo="text", marker=marker, showlegend=False, meta=WORD_TEXT,
                           name="circuit nodes" if style is None else "other nodes"))
    columns = sorted({_column(n) for n in nodes})
    ticks = []
    for col in columns:
        stream, layer, _ = col
        first = next(n for n in nodes if _column(n) == col)
        kind = parse_node(first)[1]
        part = {"mlp": "MLP", "cross": "cross"}.get(kind, "heads")
        ticks.append(short_name(first) if kind in ("embed", "logits") else
                     f"{'enc' if not stream else 'dec'} L{layer} {part}")
    heads = max((parse_node(n)[3] for n in nodes), default=0) + 1
    caption = (f"{len(edges)} edges, {len(inside) - 1} nodes and the logits; grey nodes are outside the circuit"
               + (f"; the strongest {MAX_DRAWN} edges drawn" if len(edges) > MAX_DRAWN else ""))
    layout = c.base_layout(title, height or c.clamp(160 + 46 * heads, 340, 760), t=80, b=90, l=40, r=30)
    layout.update(
        xaxis=dict(tickmode="array", tickvals=list(range(len(columns))), ticktext=ticks, tickangle=-35,
                   showgrid=False, zeroline=False, range=[-0.6, len(columns) - 0.4]),
        yaxis=dict(visible=False, range=[-(heads - 1) - 0.7, 0.9]),
        legend=dict(orientation="h", x=0, y=-0.28, yanchor="top", font=dict(size=11)),
        annotations=[c.caption(c.escape(caption))], hovermode="closest", meta=WORD_TICKS)
    return c.figure(traces, layout)


def curve_figure(sizes: Sequence[int], kept: Sequence[int], found: Sequence[float],
                 held_out: Sequence[float] | None, chosen: int, chosen_value: float,
                 title: str = "Faithfulness against the circuit's size", *, held_value: float | None = None
                 ) -> go.Figure:
    """Faithfulness (1: the circuit does all the work, 0: none) against the edges kept, on the pairs that found the
    circuit and on the held-out pairs; the circuit shown marked."""
    def hover(values: Sequence[float], where: str) -> list[str]:
        return [f"{n} edges asked, {k} after pruning<br>faithfulness ({where}): {v:.3f}"
                for n, k, v in zip(sizes, kept, values)]

    traces = [dict(type="scatter", mode="lines+markers", x=list(sizes), y=list(found), name="pairs that found it",
                   line=dict(color="#0072B2", width=2), marker=dict(size=6), hovertext=hover(found, "found"),
                   hoverinfo="text", meta=WORD_TEXT)]
    if held_out is not None:
        traces.append(dict(type="scatter", mode="lines+markers", x=list(sizes), y=list(held_out),
                           name="held-out pairs", line=dict(color="#D55E00", width=2, dash="dash"),
                           marker=dict(size=6, symbol="diamond"), hovertext=hover(held_out, "held out"),
                           hoverinfo="text", meta=WORD_TEXT))
    marks = [(chosen_value, "the circuit shown", "#000000")]
    if held_value is not None and not math.isnan(held_value):
        marks.append((held_value, "the circuit shown, held out", "#D55E00"))
    for value, name, color in marks:
        if not math.isnan(value):
            traces.append(dict(type="scatter", mode="markers", x=[chosen], y=[value], name=name,
                               marker=dict(size=13, symbol="star", color=color), hoverinfo="text", meta=WORD_TEXT,
                               hovertext=[f"{name}: {chosen} edges, faithfulness {value:.3f}"]))
    values = [v for v in [*found, *(held_out or []), chosen_value] if not math.isnan(v)]
    low, high = min([0.0, *values]), max([1.0, *values])
    layout = c.base_layout(title, 340, t=60, b=60, l=60, r=30)
    layout.update(xaxis=dict(type="log", title=dict(text="edges in the circuit (log scale)"), gridcolor="#eee"),
                  yaxis=dict(title=dict(text="faithfulness"), range=[low - 0.05, high + 0.05], gridcolor="#eee",
                             zeroline=True, zerolinecolor="#999"),
                  legend=dict(orientation="h", x=0, y=1.02, yanchor="bottom"),
                  shapes=[dict(type="line", xref="paper", x0=0, x1=1, y0=1, y1=1, line=dict(color="#999", dash="dot",
                                                                                             width=1))])
    return c.figure(traces, layout)

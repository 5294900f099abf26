"""The contribution-graph figure (explorer.viz.flow): a marker per kept node and per kept edge, edges coloured by
kind with customdata (kind, layer, head, attention, share) the app can open a head from, hover naming the head and
the share, labels escaped, the side-by-side pair on two axes; a valid Plotly figure; bad labels refused. The
graphs are made by hand (ContributionGraph of FlowNode / FlowEdge): drawing runs no model."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest
import torch

from explorer.interpret import ContributionGraph, FlowEdge, FlowNode, NodeShares
from explorer.viz.flow import COLORS, flow_figure, flow_pair_figure
from tests.viz.strings import containing

TOKS = ["<b>a</b>", "cat", "$x$", "cat"]


def node(layer, position, sub, stack="decoder"):
    return FlowNode(stack, layer, position, sub)


def sample_graph(cross: bool = False) -> ContributionGraph:
    """Two layers, root at position 3: layer 1's heads 0 and 2 read position 1, layer 0's MLP and residual."""
    root = node(1, 3, "out")
    a1 = node(1, 3, "attn")
    o0_3, o0_1 = node(0, 3, "out"), node(0, 1, "out")
    a0 = node(0, 3, "attn")
    edges = [FlowEdge(a1, root, "residual", 1, None, None, 0.7, 0.7),
             FlowEdge(a1, root, "mlp", 1, None, None, 0.3, 0.3),
             FlowEdge(o0_1, a1, "head", 1, 0, "decoder", 0.5, 0.625),
             FlowEdge(o0_1, a1, "head", 1, 2, "decoder", 0.2, 0.25),
             FlowEdge(o0_3, a1, "residual", 1, None, None, 0.1, 0.125),
             FlowEdge(a0, o0_3, "mlp", 0, None, None, 0.6, 0.6),
             FlowEdge(a0, o0_3, "residual", 0, None, None, 0.4, 0.4),
             FlowEdge(node(0, 3, "embed"), a0, "residual", 0, None, None, 1.0, 1.0)]
    lengths = {"decoder": 4}
    layers = {"decoder": 2}
    if cross:
        enc = FlowNode("encoder", 1, 0, "out")
        edges.append(FlowEdge(enc, a1, "head", 1, 1, "cross", 0.05, 0.05))
        lengths["encoder"], layers["encoder"] = 2, 2
    nodes = list(dict.fromkeys([root] + [e.source for e in edges]))
    shares = {root: NodeShares(0.7, mlp=0.3), a1: NodeShares(0.1, torch.zeros(4, 4), "decoder")}
    return ContributionGraph(root=root, threshold=0.04, nodes=nodes, edges=edges, shares=shares, n_heads=4,
                             layers=layers, lengths=lengths, parallel=False, cross=cross, arch="decoder")


def edge_markers(fig):
    return [t for t in fig.data if t.mode == "markers" and t.customdata is not None]


def test_every_edge_has_a_midpoint_with_what_the_app_needs():
    g = sample_graph()
    fig = flow_figure(g, TOKS)
    go.Figure(fig.to_dict())  # a valid figure
    markers = edge_markers(fig)
    data = [list(d) for t in markers for d in t.customdata]
    assert len(data) == len(g.edges)
    assert sorted(map(tuple, data), key=str) == sorted(
        [(e.kind, e.layer, e.head, e.attention, round(e.share, 4)) for e in g.edges], key=str)
    heads = next(t for t in markers if t.customdata[0][0] == "head")
    assert heads.marker.color == COLORS["head"]
    assert any("L1 H0 (self-attention)" in s and "share 0.500" in s for s in heads.text)
    mlp = next(t for t in markers if t.customdata[0][0] == "mlp")
    assert mlp.marker.color == COLORS["mlp"] and {tuple(d)[:3] for d in mlp.customdata} == {("mlp", 1, None),
                                                                                          ("mlp", 0, None)}
    lines = [t for t in fig.data if t.mode == "lines"]
    assert {t.line.color for t in lines} == {COLORS["head"], COLORS["mlp"], COLORS["residual"]}
    widths = {t.line.width for t in lines}
    assert len(widths) >= 3  # width follows the share
    nodes = next(t for t in fig.data if t.name == "nodes")
    assert len(nodes.x) == len(g.nodes)
    assert max(nodes.y) == 2.0 and min(nodes.y) == 0.0  # layers up y: embeddings at 0, last output at L


def test_labels_are_escaped():
    fig = flow_figure(sample_graph(), TOKS, title="<i>t</i>")
    assert containing(fig, "&lt;b&gt;a&lt;/b&gt;") and containing(fig, "&#36;x&#36;")
    assert not containing(fig, "<b>a</b>") and not containing(fig, "$x$") and not containing(fig, "<i>t</i>")


def test_cross_edges_come_from_the_encoder_tokens_on_the_left():
    g = sample_graph(cross=True)
    fig = flow_figure(g, TOKS, ["src<0>", "src1"])
    cross = next(t for t in edge_markers(fig) if t.customdata[0][3] == "cross")
    assert cross.marker.color == COLORS["cross"] and "cross-attention" in cross.text[0]
    assert containing(fig, "src&lt;0&gt;")
    nodes = next(t for t in fig.data if t.name == "nodes")
    enc_x = [x for x, text in zip(nodes.x, nodes.text) if text.startswith("encoder")]
    assert enc_x and max(enc_x) < min(x for x, text in zip(nodes.x, nodes.text) if text.startswith("decoder"))
    with pytest.raises(ValueError, match="source labels"):
        flow_figure(g, TOKS)


def test_pair_figure_draws_both_graphs_on_their_own_axes():
    a, b = sample_graph(), sample_graph()
    b.edges = b.edges[:2]
    fig = flow_pair_figure(a, b, TOKS, titles=("Baseline", "<off>"))
    go.Figure(fig.to_dict())
    left = [t for t in edge_markers(fig) if t.xaxis == "x"]
    right = [t for t in edge_markers(fig) if t.xaxis == "x2"]
    assert sum(len(t.customdata) for t in left) == len(a.edges) and sum(len(t.customdata) for t in right) == 2
    assert fig.layout.xaxis.domain[1] < fig.layout.xaxis2.domain[0]
    assert containing(fig, "&lt;off&gt;")


def test_wrong_labels_are_refused():
    with pytest.raises(ValueError, match="3 labels for a graph over 4 tokens"):
        flow_figure(sample_graph(), TOKS[:3])

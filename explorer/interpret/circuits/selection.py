"""Which edges make a circuit: the order edges are taken in (by score, or greedy from the logits), and the circuit
cleaned of what cannot matter (hannamw/EAP-IG's prune).

    edge_order(graph, scores, "top" | "greedy") -> (E,) flat indices into (U, R), the circuit of n edges = the first n
    prune(graph, circuit (U, R)) -> (circuit, nodes (U,) bool)
    off_heads(graph, nodes) -> {kind: (L, H) bool}, True = the head is in no edge of the circuit

- top: the edges by |score|, largest first (ties: graph order).
- greedy (EAP-IG's apply_greedy): start from the edges into the logits; repeatedly take the candidate of largest
  |score|; when its upstream node joins the circuit, the edges into that node's receivers become candidates. A node
  enters only through a path to the logits. Greedy's circuit of n edges is the first n of one order.
- prune: repeatedly drop the nodes with no edge out or no edge in (the embeddings always have their input), and the
  edges whose upstream node or receiving node left. It changes no run: a node whose every input edge is patched
  computes its corrupted output, exactly what its patched out-edges would carry; a node none of whose out-edges is
  kept is read by no one.

Shapes: U nodes, R receivers, E edges.
"""

from __future__ import annotations

import heapq

import torch
from torch import Tensor

from .graph import CircuitGraph

SELECTIONS = ("top", "greedy")


def edge_order(graph: CircuitGraph, scores: Tensor, select: str = "top") -> Tensor:
    if select not in SELECTIONS:
        raise ValueError(f"select must be one of {', '.join(SELECTIONS)}, got {select!r}")
    strength = scores.abs().double().masked_fill(~graph.real, -1.0)
    if select == "top":
        order = torch.sort(strength.flatten(), descending=True, stable=True).indices
        return order[: graph.n_edges]
    R = graph.n_receivers
    into: dict[int, list[int]] = {}  # node -> its receivers
    for r, node in enumerate(graph.receiver_node.tolist()):
        into.setdefault(node, []).append(r)
    real = graph.real
    flat = strength.flatten().tolist()

    def candidates(receivers: list[int]) -> list[tuple[float, int]]:
        if not receivers:  # the embeddings: no receiver feeds them
            return []
        cols = torch.tensor(receivers, dtype=torch.long)
        us, rs = torch.nonzero(real[:, cols], as_tuple=True)
        return [(-flat[u * R + r], u * R + r) for u, r in zip(us.tolist(), cols[rs].tolist())]

    heap = candidates(into[-1])  # the edges into the logits
    heapq.heapify(heap)
    joined: set[int] = set()
    order: list[int] = []
    while heap:
        _, index = heapq.heappop(heap)
        order.append(index)
        u = index // R
        if u not in joined:
            joined.add(u)
            for item in candidates(into.get(u, [])):
                heapq.heappush(heap, item)
    return torch.tensor(order, dtype=torch.long)


def circuit_of(graph: CircuitGraph, order: Tensor, n: int) -> Tensor:
    """(U, R) bool: the first n edges of an order."""
    mask = torch.zeros(graph.n_nodes * graph.n_receivers, dtype=torch.bool)
    mask[order[:n]] = True
    return mask.view(graph.n_nodes, graph.n_receivers)


def prune(graph: CircuitGraph, circuit: Tensor) -> tuple[Tensor, Tensor]:
    """-> (the circuit without dangling edges (U, R), the nodes in it (U,) bool); see the module docstring."""
    circuit = circuit & graph.real
    feeds = graph.receiver_node  # (R,) node each receiver feeds, -1 logits
    embeds = torch.zeros(graph.n_nodes, dtype=torch.bool)
    embeds[graph.embed_nodes()] = True
    while True:
        out_edge = circuit.any(1)  # (U,)
        received = circuit.any(0)  # (R,)
        has_in = embeds.clone()
        has_in[feeds[(feeds >= 0) & received]] = True
        nodes = out_edge & has_in
        keep_receiver = (feeds < 0) | nodes[feeds.clamp(min=0)]
        pruned = circuit & nodes[:, None] & keep_receiver[None, :]
        if torch.equal(pruned, circuit):
            return circuit, nodes
        circuit = pruned


def off_heads(graph: CircuitGraph, nodes: Tensor) -> dict[str, Tensor]:
    """{attention kind: (L, H) bool} True where the head is not in the circuit (no edge left)."""
    config = graph.config
    off = {kind: torch.ones(layers, heads, dtype=torch.bool) for kind, (layers, heads) in
           config.attention_kinds().items() if kind != "encoder" or config.arch == "encoder-decoder"}
    for i, node in enumerate(graph.nodes):
        if node.head >= 0 and bool(nodes[i]):
            off[node.kind][node.layer, node.head] = False
    return off

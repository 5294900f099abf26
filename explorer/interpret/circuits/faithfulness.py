"""How much of the behaviour a circuit keeps, and how well the scores predict what patching one edge does.

    faithfulness = (m(circuit) - m(corrupted)) / (m(clean) - m(corrupted))     1: the circuit does all the work, 0: none

m(circuit) is the model with every edge outside the circuit patched from the corrupted run (edge_patching.py). `value` is the ratio of the metrics averaged over the pairs (hannamw/EAP-IG's way: a pair whose
clean and corrupted metrics nearly agree cannot blow it up); `per_pair` is each pair's own ratio (NaN where its
|m(clean) - m(corrupted)| is under 1e-6).

    circuit_metrics(model, graph, prepared, circuits (V, U, R)) -> (V, N)      V circuits over every pair, batched
    curve_sizes(n_edges, points) -> sizes from 1 to every edge, about evenly on a log scale
    exact_effects(model, graph, prepared, edges [(u, r)]) -> (k,) mean m(that edge patched) - m(clean)

Shapes: V circuits, N pairs, U nodes, R receivers, k edges.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from ...model import Transformer
from .graph import CircuitGraph
from .metrics import metric_values
from .edge_patching import corrupted_outputs, patched_logits
from .runner import rows_per_run
from .scores import Prepared

FLAT = 1e-6  # a pair whose clean and corrupted metrics differ by less has no per-pair faithfulness (NaN)


@dataclass
class Faithfulness:
    value: float  # (mean m(circuit) - mean m(corrupted)) / (mean m(clean) - mean m(corrupted))
    per_pair: Tensor  # (N,) float64, NaN where the pair's clean and corrupted metrics agree within 1e-6
    circuit: Tensor  # (N,) float64 the metric with the circuit
    clean: Tensor  # (N,)
    corrupted: Tensor  # (N,)
    edges: int  # edges in the circuit

    def __float__(self) -> float:
        return self.value


def faithfulness_of(circuit: Tensor, clean: Tensor, corrupted: Tensor, edges: int) -> Faithfulness:
    span = clean - corrupted
    value = float((circuit.mean() - corrupted.mean()) / span.mean()) if float(span.mean()) != 0 else math.nan
    per_pair = torch.where(span.abs() < FLAT, torch.full_like(span, math.nan), (circuit - corrupted) / span)
    return Faithfulness(value, per_pair, circuit, clean, corrupted, edges)


@torch.no_grad()
def circuit_metrics(model: Transformer, graph: CircuitGraph, prepared: list[Prepared], circuits: Tensor,
                    metric: str, rows: int | None = None) -> Tensor:
    """(V, N) float64: each pair's metric with each circuit kept (everything else patched). A circuit equal to an
    earlier one is run once; one of no edge is the corrupted run and one of every edge the clean run (when the batch
    has it): their metrics are read off those runs, not patched again."""
    V = circuits.shape[0]
    circuits = circuits & graph.real[None]
    distinct, which = torch.unique(circuits.flatten(1), dim=0, return_inverse=True)  # (W, U R), (V,)
    empty, full = ~distinct.any(1), (distinct == graph.real.flatten()[None]).all(1)
    n = sum(b.inputs.size for b in prepared)
    values = torch.empty(distinct.shape[0], n, dtype=torch.float64)
    for batch in prepared:
        inputs, P = batch.inputs, batch.inputs.size
        reference = None if batch.clean is None else batch.clean.logits.log_softmax(-1)

        def metrics_of(logits: Tensor) -> Tensor:  # (v P, vocab) -> (v, P)
            v = logits.shape[0] // P
            return metric_values(metric, logits, inputs.answers.repeat(v), inputs.wrongs.repeat(v),
                                 None if reference is None else reference.repeat(v, 1)).view(v, P).double().cpu()

        known = empty | (full & (batch.clean is not None))
        values[torch.nonzero(empty).flatten()[:, None], inputs.index] = metrics_of(batch.corrupted.logits)
        if batch.clean is not None:
            values[torch.nonzero(full).flatten()[:, None], inputs.index] = metrics_of(batch.clean.logits)
        todo = torch.nonzero(~known).flatten()
        if not len(todo):
            continue
        patched = graph.real[None] & ~distinct[todo].view(-1, *graph.real.shape)  # (W', U, R)
        corr = corrupted_outputs(model, graph, batch.corrupted)  # once per batch: every run reads them
        per_run = max(1, (rows or rows_per_run(graph, inputs, backward=False)) // P)
        for s in range(0, len(todo), per_run):
            logits = patched_logits(model, graph, inputs, patched[s:s + per_run], batch.corrupted, corr)
            values[todo[s:s + per_run, None], inputs.index] = metrics_of(logits.reshape(-1, logits.shape[-1]))
    return values[which]


def curve_sizes(n_edges: int, points: int = 20) -> list[int]:
    """About `points` sizes from 1 to n_edges, evenly on a log scale (fewer when the graph is small)."""
    if points < 2:
        raise ValueError(f"a curve needs at least 2 points, got {points}")
    sizes = sorted({max(1, min(n_edges, round(n_edges ** (i / (points - 1))))) for i in range(points)})
    return sizes


def exact_effects(model: Transformer, graph: CircuitGraph, prepared: list[Prepared], edges: list[tuple[int, int]],
                  metric: str, clean: Tensor, rows: int | None = None) -> Tensor:
    """(k,) float64: for each edge, the mean over the pairs of m(only that edge patched) - m(clean)."""
    circuits = graph.real.repeat(len(edges), 1, 1)
    for i, (u, r) in enumerate(edges):
        circuits[i, u, r] = False
    return (circuit_metrics(model, graph, prepared, circuits, metric, rows) - clean[None]).mean(1)

"""The Python API: find a task's circuit, and judge any circuit's faithfulness.

    find_circuit(model, clean_ids, corrupted_ids, answer_ids, wrong_ids=None, method="eap-ig", metric="logit_diff",
                 edges=None) -> Circuit
    circuit_faithfulness(model, pairs, edges) -> Faithfulness

find_circuit scores every edge (EAP or EAP-IG, explorer.interpret.circuits.scores), then keeps a circuit: the
`edges` strongest edges (by |score|), or, when `edges` is None, the greedy circuit from the logits (EAP-IG's
apply_greedy) with the fewest edges whose faithfulness reaches `keep` (0.9) over the given pairs (the largest on the
curve when none does). `select` chooses the order the edges are taken in: "top" (by |score|), "greedy", or "exact":
the `exact_top` strongest edges by estimate, each patched alone, ordered by the size of that exact effect, then the
others by |score| (where the estimate misorders the strongest edges: on the shipped induction-gpt it finds a 10-edge
circuit where greedy needs 21). It runs the model with the circuit alone (every other edge patched from the
corrupted run) over every pair, draws the curve of faithfulness against the number of edges (`curve_points` sizes
from 1 to every edge, batched), checks the `exact_top` strongest edges by patching each alone (the rank correlation
of estimate and exact effect), and checks the circuit on held-out pairs apart (`held_out`: a Task, or a number of
the given pairs kept out of the search). Nodes the circuit left without an edge are off: `off` / `head_mask()` give
them as the page's head switches (1 = on).

Pairs: `clean_ids` / `corrupted_ids` (N, T) tensors or lists of sequences (a pair whose two prompts differ in length
is dropped, and `notice` says so), `answer_ids` (N,) (None entries: the clean run's top token), `wrong_ids` (N,) or
None (the corrupted run's top token, its second where that is the answer); an encoder-decoder takes `tgt` (N, T'),
the decoder's input. `clean_ids` may also be a Task (parse_pairs, generated_task), the other three then None.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
from torch import Tensor

from ...model import Transformer
from .faithfulness import Faithfulness, circuit_metrics, curve_sizes, exact_effects, faithfulness_of
from .graph import CircuitGraph
from .metrics import check_metric, metric_values
from .runner import plain_run
from .scores import MAX_POINTS, TARGET, EdgeScores, edge_scores, prepare
from .selection import circuit_of, edge_order, off_heads, prune
from .pairs import Task, make_task

KEEP = 0.9  # the faithfulness the greedy circuit must reach when no size is given
REFINE = 8  # sizes tried between the two curve points around `keep`
SELECT = ("top", "greedy", "exact")  # the orders a circuit's edges are taken in (module docstring)


class Edge(NamedTuple):
    upstream: str
    downstream: str
    score: float


@dataclass
class Curve:
    sizes: list[int]  # edges asked for (the circuit after pruning may hold fewer: see `kept`)
    kept: list[int]  # edges left after pruning
    faithfulness: list[float]  # over the given pairs
    held_out: list[float] | None = None  # over the held-out pairs


@dataclass
class ExactCheck:
    edges: list[Edge]  # the strongest edges, with their estimated score
    exact: list[float]  # mean m(that edge alone patched) - m(clean), what the score estimates
    spearman: float  # rank correlation of the estimates and the exact effects


@dataclass
class Circuit:
    edges: tuple[Edge, ...]  # the circuit's edges, strongest (|score|) first
    faithfulness: float  # over the given pairs
    per_pair: Tensor  # (N,) each pair's faithfulness (NaN where its clean and corrupted metrics agree)
    all_edges: tuple[Edge, ...]  # every edge of the graph with its score, strongest first
    nodes: tuple[str, ...]  # the nodes the circuit keeps
    off: dict[str, Tensor]  # attention kind -> (L, H) bool, True = the head is in no edge of the circuit
    scores: EdgeScores  # the method, metric, points, completeness gap, clean / corrupted metrics
    curve: Curve
    exact: ExactCheck | None
    held_out: Faithfulness | None
    select: str  # "top", "greedy" or "exact"
    n_edges: int  # edges of the whole graph
    notice: str | None = None  # pairs dropped (lengths differ), in words
    notes: list[str] = field(default_factory=list)  # the graph's family traits (parallel residual, GQA, cross
    # attention), and the scores' message when EAP-IG's points stopped above the 2% target

    def head_mask(self) -> dict[str, Tensor]:
        """The head switches that keep only the circuit's heads: {kind: (L, H) float}, 1 = on."""
        return {kind: (~off).float() for kind, off in self.off.items()}


def as_task(model: Transformer, clean_ids: Any, corrupted_ids: Any, answer_ids: Any, wrong_ids: Any,
            tgt: Any) -> Task:
    if isinstance(clean_ids, Task):
        if any(v is not None for v in (corrupted_ids, answer_ids, wrong_ids, tgt)):
            raise ValueError("give the pairs either as a Task or as ids, not both")
        return clean_ids
    if model.config.arch == "encoder-decoder" and tgt is None:
        raise ValueError("an encoder-decoder needs tgt: the decoder's input of each pair")
    return make_task(clean_ids, corrupted_ids, answer_ids, wrong_ids, tgt)


def _edges(graph: CircuitGraph, scores: Tensor, mask: Tensor | None = None) -> tuple[Edge, ...]:
    real = graph.real if mask is None else mask & graph.real
    us, rs = torch.nonzero(real, as_tuple=True)
    values = scores[us, rs]
    order = torch.sort(values.abs(), descending=True, stable=True).indices
    return tuple(Edge(graph.nodes[int(us[i])].name, graph.receivers[int(rs[i])], float(values[i])) for i in order)


def find_circuit(model: Transformer, clean_ids: Any, corrupted_ids: Any = None, answer_ids: Any = None,
                 wrong_ids: Any = None, method: str = "eap-ig", metric: str = "logit_diff", edges: int | None = None, *,
                 tgt: Any = None, held_out: Task | int | None = None, select: str | None = None, keep: float = KEEP,
                 curve_points: int = 20, exact_top: int = 32, target: float = TARGET, max_points: int = MAX_POINTS,
                 rows: int | None = None) -> Circuit:
    """See the module docstring."""
    graph = CircuitGraph(model.config)
    task = as_task(model, clean_ids, corrupted_ids, answer_ids, wrong_ids, tgt)
    if isinstance(held_out, int) and not isinstance(held_out, bool):
        task, held_out = task.split(held_out)
    if edges is not None and (isinstance(edges, bool) or not isinstance(edges, int) or not 1 <= edges <= graph.n_edges):
        raise ValueError(f"edges must be a number of edges from 1 to {graph.n_edges} (this model's), got {edges!r}")
    select = select or ("top" if edges is not None else "greedy")
    if select not in SELECT:
        raise ValueError(f"select must be one of {', '.join(SELECT)}, got {select!r}")
    pairs = list(task.pairs)
    prepared = prepare(model, graph, pairs, metric, rows)
    scored = edge_scores(model, graph, pairs, method, metric, target=target, max_points=max_points, rows=rows,
                         prepared=prepared)
    exact = _exact_check(model, graph, prepared, scored, metric, exact_top, rows) if exact_top else None
    if select == "exact":  # the edges patched alone first, by their exact effect; then the rest by |score|
        if exact is None:
            raise ValueError("select='exact' orders the edges by their exact effect: exact_top must be at least 1")
        order = _exact_first(graph, scored, exact)
    else:
        order = edge_order(graph, scored.scores, select)
    sizes = [n for n in curve_sizes(graph.n_edges, curve_points) if n < graph.n_edges]
    circuits = torch.stack([prune(graph, circuit_of(graph, order, n))[0] for n in sizes])
    metrics = circuit_metrics(model, graph, prepared, circuits, metric, rows)
    curve = Curve(sizes + [graph.n_edges], [int(c.sum()) for c in circuits] + [graph.n_edges],
                  [faithfulness_of(m, scored.clean, scored.corrupted, 0).value for m in metrics] + [1.0])
    if edges is None:  # the fewest edges reaching `keep`: the curve's bracket, then REFINE sizes inside it
        edges = _smallest(model, graph, prepared, scored, order, metric, curve, keep, rows)
    circuit, nodes = prune(graph, circuit_of(graph, order, edges))
    kept = int(circuit.sum())
    faith = faithfulness_of(circuit_metrics(model, graph, prepared, circuit[None], metric, rows)[0], scored.clean,
                            scored.corrupted, kept)
    held = None
    if held_out is not None:
        if not isinstance(held_out, Task):
            raise ValueError("held_out must be a Task or a number of pairs to keep out of the search")
        held_prep, held_clean, held_corrupted = _runs(model, graph, list(held_out.pairs), metric, rows)
        held_metrics = circuit_metrics(model, graph, held_prep, torch.cat([circuit[None], circuits]), metric, rows)
        held = faithfulness_of(held_metrics[0], held_clean, held_corrupted, kept)
        curve.held_out = [faithfulness_of(m, held_clean, held_corrupted, 0).value for m in held_metrics[1:]] + [1.0]
    notes = graph.notes + ([] if scored.message is None else [scored.message])
    return Circuit(_edges(graph, scored.scores, circuit), faith.value, faith.per_pair, _edges(graph, scored.scores),
                   tuple(graph.nodes[i].name for i in torch.nonzero(nodes).flatten().tolist()), off_heads(graph, nodes),
                   scored, curve, exact, held, select, graph.n_edges, task.notice, notes)


def _exact_check(model, graph, prepared, scored, metric, exact_top: int, rows) -> ExactCheck:
    """The `exact_top` strongest edges by estimate, each patched alone (its exact effect on the metric)."""
    top = [(u, r) for u, r in (divmod(int(i), graph.n_receivers) for i in edge_order(graph, scored.scores))]
    top = top[:min(exact_top, graph.n_edges)]
    effects = exact_effects(model, graph, prepared, top, metric, scored.clean, rows)
    estimates = [float(scored.scores[u, r]) for u, r in top]
    return ExactCheck([Edge(graph.nodes[u].name, graph.receivers[r], s) for (u, r), s in zip(top, estimates)],
                      effects.tolist(), _spearman(estimates, effects.tolist()))


def _exact_first(graph: CircuitGraph, scored, exact: ExactCheck) -> Tensor:
    """(E,) flat edge indices: the exactly checked edges by |exact effect| (ties: by estimate), then the others by
    |score|. An estimate can misorder edges (EAP-IG's gradients at a saturated softmax); the exact effects do not."""
    checked = [graph.node_index[e.upstream] * graph.n_receivers + graph.receiver_index[e.downstream]
               for e in exact.edges]
    ranked = [checked[i] for i in sorted(range(len(checked)), key=lambda i: -abs(exact.exact[i]))]
    seen = set(ranked)
    rest = [int(i) for i in edge_order(graph, scored.scores, "top") if int(i) not in seen]
    return torch.tensor(ranked + rest, dtype=torch.long)


def _smallest(model, graph, prepared, scored, order, metric, curve: Curve, keep: float, rows) -> int:
    above = [n for n, f in zip(curve.sizes, curve.faithfulness) if f >= keep]
    if not above:
        return curve.sizes[-2] if len(curve.sizes) > 1 else curve.sizes[-1]
    high = above[0]
    low = max([n for n in curve.sizes if n < high], default=0)
    inside = sorted({round(low + (high - low) * i / (REFINE + 1)) for i in range(1, REFINE + 1)} - {low, high})
    if not inside:
        return high
    circuits = torch.stack([prune(graph, circuit_of(graph, order, n))[0] for n in inside])
    metrics = circuit_metrics(model, graph, prepared, circuits, metric, rows)
    for n, m in zip(inside, metrics):
        if faithfulness_of(m, scored.clean, scored.corrupted, 0).value >= keep:
            return n
    return high


def _spearman(a: list[float], b: list[float]) -> float:
    """Spearman's rank correlation (ties take their average rank, as scipy.stats.spearmanr): the Pearson correlation
    of the ranks. Here, not from scipy: the app's requirements do not hold scipy (the Circuit tab failed with
    ModuleNotFoundError in a venv made from requirements.txt). NaN for fewer than two values or a constant side."""
    if len(a) < 2:
        return float("nan")
    ra, rb = (torch.tensor(_average_ranks(v), dtype=torch.float64) for v in (a, b))
    ra, rb = ra - ra.mean(), rb - rb.mean()
    norm = float(ra.norm() * rb.norm())
    return float(ra @ rb) / norm if norm > 0 else float("nan")


def _average_ranks(values: list[float]) -> list[float]:
    """1-based ranks, equal values sharing the average of their ranks."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            ranks[order[k]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def _runs(model: Transformer, graph: CircuitGraph, pairs, metric: str, rows: int | None):
    """The pairs' batches with their clean and corrupted runs, and each pair's metric on both: (prepared, clean (N,),
    corrupted (N,)) float64 in task order."""
    prepared = prepare(model, graph, pairs, metric, rows)
    clean, corrupted = torch.empty(len(pairs), dtype=torch.float64), torch.empty(len(pairs), dtype=torch.float64)
    for b in prepared:
        if b.clean is None:
            b.clean = plain_run(model, b.inputs, False)
        reference = b.clean.logits.log_softmax(-1)
        for out, snap in ((clean, b.clean), (corrupted, b.corrupted)):
            out[b.inputs.index] = metric_values(metric, snap.logits, b.inputs.answers, b.inputs.wrongs,
                                                reference).double().cpu()
    return prepared, clean, corrupted


def circuit_faithfulness(model: Transformer, pairs: Task | tuple, edges, *, metric: str = "logit_diff",
                         rows: int | None = None) -> Faithfulness:
    """The faithfulness of the circuit of `edges` ((upstream, downstream[, score]) names, as Circuit.edges gives
    them) over `pairs` (a Task, or a tuple (clean_ids, corrupted_ids, answer_ids[, wrong_ids[, tgt]]))."""
    if model.training:
        raise ValueError("the model is in training mode (dropout would change every run): call model.eval() first")
    check_metric(metric)
    graph = CircuitGraph(model.config)
    task = pairs if isinstance(pairs, Task) else as_task(model, *(tuple(pairs) + (None,) * (5 - len(pairs))))
    circuit = graph.mask_of(edges)
    prepared, clean, corrupted = _runs(model, graph, list(task.pairs), metric, rows)
    values = circuit_metrics(model, graph, prepared, circuit[None], metric, rows)[0]
    return faithfulness_of(values, clean, corrupted, int((circuit & graph.real).sum()))

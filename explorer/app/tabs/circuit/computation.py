"""The Circuit tab's computation: a request's task read or generated, its circuit found (the core's find_circuit,
explorer.interpret.circuits), and the result as plain data (picklable: on ZeroGPU it comes back from a worker,
explorer.app.serving.compute).

    circuit(loaded, request, max_tokens) -> CircuitResult

Shapes: N pairs, E edges of the graph; every edge is a (upstream, receiver, score) of names (graph.py's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ....checkpoints import LoadedModel
from ....interpret.circuits import CircuitGraph, find_circuit, generated_task, task_from_text
from ....interpret.circuits.pairs import Task
from ...serving.errors import AppError
from .forms import MAX_PAIRS, MAX_TEXT, MAX_TOKENS, CircuitRequest

EXACT_TOP = 8  # the strongest edges patched alone beside their estimate (each is a run over every pair)
CURVE_POINTS = 20  # sizes on the faithfulness curve
SEED = 0  # a generated task's seed (the link reopens the same pairs)
# Token-parameters one request computes at most (the task's tokens x the model's parameters): about 1,000 tokens on
# GPT-2 small (124M), where EAP-IG, the curve and the exact patches take tens of seconds on a CPU; the shipped models
# (under a million parameters) reach the task's own bounds first (forms.MAX_PAIRS, MAX_TOKENS).
MAX_WORK = 1.3e11

Edge = tuple[str, str, float]


@dataclass(frozen=True)
class CircuitResult:
    """What the tab shows of one circuit (no tensors)."""

    task_name: str
    found: int  # pairs that found the circuit
    held: int  # pairs checked apart
    method: str
    metric: str
    points: int  # EAP-IG's integration points (EAP: 1)
    gap: float  # how far the scores' sum is from the metric's change (a share)
    faithfulness: float  # over the pairs that found it
    held_faithfulness: float | None
    clean: float  # the metric's mean on the clean runs (found pairs)
    corrupted: float  # and on the corrupted runs
    select: str  # "top" or "greedy"
    n_edges: int  # edges of the whole graph
    edges: tuple[Edge, ...]  # the circuit's, strongest first
    all_edges: tuple[Edge, ...]  # every edge of the graph, strongest first
    exact: dict[tuple[str, str], float]  # the strongest edges' exact effect: m(that edge patched) - m(clean)
    spearman: float  # rank correlation of the estimates and the exact effects (NaN: fewer than 2)
    sizes: tuple[int, ...]  # the curve: edges asked
    kept: tuple[int, ...]  # edges left after pruning
    curve: tuple[float, ...]  # faithfulness on the found pairs
    curve_held: tuple[float, ...] | None
    nodes: tuple[str, ...]  # every node of the graph, in forward order
    circuit_nodes: tuple[str, ...]
    heads: dict[str, tuple[int, int]]  # attention kind -> (layers, heads) of the model
    off: dict[str, tuple[tuple[int, int], ...]]  # kind -> heads in no edge of the circuit
    notes: tuple[str, ...] = ()  # the graph's family traits, the scores' message
    notice: str | None = None  # pairs dropped (lengths differ)
    asked_edges: int | None = None  # the edges asked for (None: the greedy circuit keeping 0.9)

    @property
    def exact_edges(self) -> list[tuple[str, str, float, float | None]]:
        """The circuit's edges with their exact patch (None where not patched alone)."""
        return [(u, r, s, self.exact.get((u, r))) for u, r, s in self.edges]


def task_of(loaded: LoadedModel, request: CircuitRequest) -> Task:
    """The request's pairs as a Task of `loaded`'s ids; AppError in words (bad rows by line, a bound passed)."""
    try:
        if request.task == "generated":
            return generated_task(loaded, request.generated, SEED, half=request.fresh)  # half: induction only
        return task_from_text(loaded, request.pairs, max_chars=MAX_TEXT, max_pairs=MAX_PAIRS, max_tokens=MAX_TOKENS)
    except ValueError as err:
        raise AppError(f"The task could not be read: {err}") from None


def circuit(loaded: LoadedModel, request: CircuitRequest, max_tokens: int) -> CircuitResult:
    """See the module docstring."""
    model = loaded.model
    try:
        graph = CircuitGraph(model.config)
    except ValueError as err:
        raise AppError(f"Circuits need a language model read as a sum of its parts: {err}.") from None
    task = task_of(loaded, request)
    tokens = sum(len(p.clean) + len(p.tgt or ()) for p in task.pairs)
    parameters = sum(t.numel() for t in model.parameters())
    if tokens * parameters > MAX_WORK:
        most = max(1, int(MAX_WORK // parameters))
        raise AppError(f"This task holds {tokens:,} tokens; on a model of {parameters:,} parameters one request "
                       f"takes at most {most:,}: use fewer or shorter pairs (nothing was computed).")
    if request.held_out >= len(task):
        raise AppError(f"The task has {len(task)} pairs and {request.held_out} are to be held out: keep at least one "
                       "to find the circuit (fewer held-out pairs, or more pairs).")
    if request.edges is not None and request.edges > graph.n_edges:
        raise AppError(f"This model's graph has {graph.n_edges:,} edges; ask for at most that many (or 0 for the "
                       "smallest circuit keeping 0.9).")
    try:
        with torch.inference_mode(False):  # the scores need gradients
            found = find_circuit(model, task, method=request.method, metric=request.metric, edges=request.edges,
                                 held_out=request.held_out or None, curve_points=CURVE_POINTS, exact_top=EXACT_TOP)
    except ValueError as err:
        raise AppError(f"No circuit: {err}.") from None
    exact = {} if found.exact is None else {(e.upstream, e.downstream): float(x)
                                            for e, x in zip(found.exact.edges, found.exact.exact)}
    kinds = {kind: tuple(size) for kind, size in model.config.attention_kinds().items() if kind in found.off}
    off = {kind: tuple((int(la), int(h)) for la, h in torch.nonzero(mask).tolist()) for kind, mask in found.off.items()}
    s = found.scores
    return CircuitResult(
        task.name, len(task) - request.held_out, request.held_out, s.method, s.metric, int(s.points), float(s.gap),
        float(found.faithfulness), None if found.held_out is None else float(found.held_out.value),
        float(s.clean.mean()), float(s.corrupted.mean()), found.select, found.n_edges,
        tuple((e.upstream, e.downstream, float(e.score)) for e in found.edges),
        tuple((e.upstream, e.downstream, float(e.score)) for e in found.all_edges), exact,
        math.nan if found.exact is None else float(found.exact.spearman), tuple(found.curve.sizes),
        tuple(found.curve.kept), tuple(float(v) for v in found.curve.faithfulness),
        None if found.curve.held_out is None else tuple(float(v) for v in found.curve.held_out),
        tuple(n.name for n in graph.nodes), tuple(found.nodes), kinds, off, tuple(found.notes), found.notice,
        request.edges)


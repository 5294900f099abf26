"""Edge scores over a task: EAP (Syed et al. 2023) and EAP-IG (Hanna et al. 2024), averaged over the pairs.

    EAP     score(u -> r) = (a_u(corrupted) - a_u(clean)) . d m / d input_r at the clean run: one corrupted forward,
            one clean forward and backward
    EAP-IG  the same with the gradient averaged along the straight path of the embeddings from the corrupted run's
            to the clean run's (hannamw/EAP-IG's "EAP-IG-inputs": every node downstream computes from them)

A score estimates m(that edge patched) - m(clean): negative for an edge the clean behaviour needs (with a metric that
is high on the clean run). The scores are summed over positions and width, and averaged over the pairs.

Completeness, and how many points: summed over the edges that leave the embeddings, EAP-IG's scores are integrated
gradients of m with respect to the embeddings, so they add up to m(corrupted) - m(clean) as the points grow (every
receiver reads the embeddings directly: their gradient is the sum of the receivers'). The sum over *all* edges is no
such total: a path through k edges is counted k times. The points are chosen per request as the Contributions tab's
token attribution chooses them (explorer.interpret.attribution): Simpson's rule on nested levels of 5, 9, 17, ...
points, each reusing the points before, until the gap sum_p |embeddings' sum_p - (m_p(corrupted) - m_p(clean))| /
sum_p |m_p(corrupted) - m_p(clean)| is under `target` (2%), or at `max_points`, where `message` says in words that it
was not reached. EAP reports the same gap (one point: it promises nothing).

    edge_scores(model, graph, pairs, method, metric, ...) -> EdgeScores(scores (U, R), clean (N,), corrupted (N,), ...)

Shapes: N pairs, U nodes, R receivers, P pairs of one batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from ...model import Transformer
from ..attribution import FIRST_LEVEL, simpson_rule
from .graph import CircuitGraph
from .gradients import gradient_pass
from .batches import Inputs, batches, check_pairs
from .metrics import check_metric, default_wrongs, metric_values
from .runner import Snapshot, plain_run, rows_per_run
from .pairs import Pair

METHODS = ("eap", "eap-ig")
TARGET = 0.02
MAX_POINTS = 33  # 2^5 + 1: the last level of the automatic rule by default
FLAT = 1e-6  # metrics closer than this on the clean and corrupted runs of every pair: nothing to attribute


@dataclass
class Prepared:
    """A batch of pairs with its corrupted and clean runs (answers and wrong answers filled in)."""

    inputs: Inputs
    corrupted: Snapshot
    clean: Snapshot | None = None


@dataclass
class EdgeScores:
    scores: Tensor  # (U, R) float64: mean over pairs; 0 where there is no edge
    method: str
    metric: str
    clean: Tensor  # (N,) float64 metric of each pair on the clean run (task order)
    corrupted: Tensor  # (N,) on the corrupted run
    answers: Tensor  # (N,) long: the answers used (given, or the clean run's top token)
    wrongs: Tensor  # (N,) long: the wrong answers used (given, or the corrupted run's top token)
    points: int  # integration points (EAP: 1)
    gap: float  # sum_p |embeddings' edges - (m_corrupted - m_clean)| / sum_p |m_corrupted - m_clean|
    reached: bool | None  # gap < target (None for EAP, which promises nothing)
    message: str | None  # in words, when EAP-IG stopped at max_points above the target
    target: float = TARGET


def prepare(model: Transformer, graph: CircuitGraph, pairs: list[Pair], metric: str,
            rows: int | None = None) -> list[Prepared]:
    """The pairs in batches, each with its corrupted run; answers default to the clean run's top token (a clean run
    is made then), wrong answers to the corrupted run's top token (second where that is the answer)."""
    check_pairs(model, pairs)
    longest = max(pairs, key=lambda p: max(len(p.clean), len(p.tgt or ())))
    size = rows or rows_per_run(graph, batches(model, [longest], 1)[0])
    prepared = []
    for inputs in batches(model, pairs, max(1, size)):
        corrupted = plain_run(model, inputs, True)
        clean = None
        answers = inputs.answers
        if (answers < 0).any():
            clean = plain_run(model, inputs, False)
            answers = torch.where(answers < 0, clean.logits.argmax(-1), answers)
        wrongs = torch.where(inputs.wrongs < 0, default_wrongs(answers, corrupted.logits), inputs.wrongs)
        if metric == "logit_diff" and (wrongs == answers).any():
            raise ValueError("a pair's wrong answer is its answer: the logit difference would be 0")
        prepared.append(Prepared(inputs.with_answers(answers, wrongs), corrupted, clean))
    return prepared


def _in_task_order(prepared: list[Prepared], per_batch: list[Tensor], n: int) -> Tensor:
    out = torch.empty(n, dtype=per_batch[0].dtype)
    for batch, values in zip(prepared, per_batch):
        out[batch.inputs.index] = values.cpu()
    return out


def _message(points: int, gap: float, target: float) -> str:
    miss = "never" if math.isinf(gap) else f"by {gap:.1%}"
    return (f"The edge scores do not add up to within {target:.0%}: at the limit of {points} integration points the "
            f"embeddings' edges still miss m(corrupted) − m(clean) {miss}. Read them as approximate.")


def edge_scores(model: Transformer, graph: CircuitGraph, pairs: list[Pair], method: str = "eap-ig",
                metric: str = "logit_diff", *, target: float = TARGET, max_points: int = MAX_POINTS,
                rows: int | None = None, prepared: list[Prepared] | None = None) -> EdgeScores:
    """Every edge's score over the pairs (see the module docstring). `rows`: rows per run (default: a memory
    budget); `prepared`: the batches made already (prepare)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    check_metric(metric)
    if method == "eap" and metric == "kl":
        raise ValueError("EAP takes the gradient at the clean run, where the KL divergence to the clean output has "
                         "its minimum (gradient 0): every score would be 0. Use EAP-IG for the KL metric")
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target < 1:
        raise ValueError(f"target must be a share between 0 and 1, got {target!r}")
    if isinstance(max_points, bool) or not isinstance(max_points, int) or max_points < 2 ** FIRST_LEVEL + 1:
        raise ValueError(f"max_points must be an int of at least {2 ** FIRST_LEVEL + 1}, got {max_points!r}")
    if model.training:
        raise ValueError("the model is in training mode (dropout would change every run): call model.eval() first")
    prepared = prepared or prepare(model, graph, pairs, metric, rows)
    n = len(pairs)
    # alpha -> (scores (U, R) summed over pairs, embeddings' sums (N,), metric (N,))
    at: dict[float, tuple[Tensor, Tensor, Tensor]] = {}

    def run_points(alphas: list[float]) -> None:
        if not alphas:
            return
        sums = torch.zeros(len(alphas), graph.n_nodes, graph.n_receivers, dtype=torch.float64)
        embeds, metrics = [], []
        for batch in prepared:
            per_run = max(1, (rows or rows_per_run(graph, batch.inputs)) // batch.inputs.size)
            parts, deltas = [], None  # the batch's node differences, shared by its passes at this level
            for s in range(0, len(alphas), per_run):
                chunk = alphas[s:s + per_run]
                done = gradient_pass(model, graph, batch.inputs, chunk, batch.corrupted, batch.clean, metric,
                                     None if batch.clean is None else batch.clean.logits.log_softmax(-1), deltas)
                if done.clean is not None:
                    batch.clean = done.clean
                deltas = done.deltas
                parts.append(done)
            sums += torch.cat([p.scores for p in parts]).cpu()
            embeds.append(torch.cat([p.embed for p in parts], 0))  # (K, P)
            metrics.append(torch.cat([p.metric for p in parts], 0))
        for k, alpha in enumerate(alphas):
            at[alpha] = (sums[k], _in_task_order(prepared, [e[k] for e in embeds], n),
                         _in_task_order(prepared, [m[k] for m in metrics], n))

    # the clean run first (its outputs are every later point's reference), with EAP-IG's first level in the same run
    first = [] if method == "eap" else [float(a) for a in simpson_rule(2 ** FIRST_LEVEL + 1)[0] if float(a) != 1.0]
    run_points([1.0] + first)
    corrupted = at[0.0][2] if 0.0 in at else _in_task_order(
        prepared, [_metric_of(b, metric) for b in prepared], n)
    clean = at[1.0][2]
    change = corrupted - clean
    scale = float(change.abs().sum())
    if float(change.abs().max()) < FLAT:
        raise ValueError("the metric is the same on the clean and the corrupted run of every pair: there is no "
                         "difference to attribute")

    def combine(alphas: list[float], weights: Tensor) -> tuple[Tensor, float]:
        scores = sum(w * at[a][0] for a, w in zip(alphas, weights.tolist())) / n
        embed = sum(w * at[a][1] for a, w in zip(alphas, weights.tolist()))
        return scores, float((embed - change).abs().sum()) / scale

    if method == "eap":
        scores, gap = combine([1.0], torch.ones(1, dtype=torch.float64))
        return EdgeScores(scores * graph.real, method, metric, clean, corrupted, _answers(prepared, n, "answers"),
                          _answers(prepared, n, "wrongs"), 1, gap, None, None, target)
    level = FIRST_LEVEL
    while True:
        count = 2 ** level + 1
        alphas, weights = simpson_rule(count)
        alphas = [float(a) for a in alphas]
        run_points([a for a in alphas if a not in at])
        scores, gap = combine(alphas, weights)
        if gap < target or 2 ** (level + 1) + 1 > max_points:
            break
        level += 1
    reached = gap < target
    return EdgeScores(scores * graph.real, method, metric, clean, corrupted, _answers(prepared, n, "answers"),
                      _answers(prepared, n, "wrongs"), count, gap, reached,
                      None if reached else _message(count, gap, target), target)


def _metric_of(batch: Prepared, metric: str) -> Tensor:
    ref = None if batch.clean is None else batch.clean.logits.log_softmax(-1)
    return metric_values(metric, batch.corrupted.logits, batch.inputs.answers, batch.inputs.wrongs, ref).double()


def _answers(prepared: list[Prepared], n: int, field: str) -> Tensor:
    return _in_task_order(prepared, [getattr(b.inputs, field) for b in prepared], n)

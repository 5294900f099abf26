"""One head's attention worked through, step by step, for a few keys a learner picks (the "plain steps" of the Inside
a head tab): every number is read from a HeadComputation (explorer.interpret.head_computation: the model's own run),
or is one arithmetic step between two of its numbers, and the steps end on the model's own weights and output.

For query i and each picked key j:

    q·k_j          the dot product (None for a blocked key: the model gives it no score, only -inf)
    score_j        q·k_j x scale (+ the position term T5 adds)
    e_j            exp(score_j - shift): shift is 0, or the largest allowed score when the scores are large (then
                   every e_j stays readable; the weights do not change, since the same factor divides them all)
    sum            e_j summed over EVERY allowed key: the picked ones plus the `others` (their count and their part)
    weight_j       e_j / sum: the weight the model returns (tests check the two agree)
    weight_j v_j   the key's share of z; the other keys' shares summed into `others_value`
    z              the model's own weighted sum; written = gate x z W_O^h.T (what the head adds to the token)

Shapes: S keys, Dh head width, D model width; n picked keys (at most MAX_KEYS).

    default_keys(comp, top=3) -> tuple of key positions: the `top` strongest, the query itself, the first blocked key
    worked_example(comp, keys=None) -> WorkedExample
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

DEFAULT_TOP = 3  # the strongest keys picked when the learner picks none
MAX_KEYS = 8  # rows a learner can follow at once
LARGE_SCORE = 20.0  # above this, exp(score) has 9+ digits: shift by the largest score instead


@dataclass(frozen=True)
class KeyStep:
    """One picked key through the steps (floats are float64 arithmetic on the model's float32 numbers)."""

    key: int  # its position
    blocked_by: str  # "" if the query may see it, else why not ("causal", "padding", ...)
    dot: float | None  # q·k_j; None for a blocked key (no score: the model never uses one)
    position: float | None  # the position term added to the score (T5's relative bias), else None
    score: float | None  # dot x scale (+ position); None for a blocked key
    exp: float  # exp(score - shift); 0 for a blocked key
    weight: float  # the model's own weight for this key
    value: np.ndarray  # (Dh,) v_j
    weighted_value: np.ndarray  # (Dh,) weight x v_j


@dataclass(frozen=True)
class WorkedExample:
    """The steps of one head at one query over the picked keys, the rest of the keys counted in `others_*`."""

    query: int
    x: np.ndarray  # (D,) what the head reads at the query token
    q: np.ndarray  # (Dh,) the query (after rotary, as the scores read it)
    q_unrotated: np.ndarray | None  # (Dh,) x W_Q (+ b) before rotary (rotary models), else None
    scale: float  # what q·k is multiplied by (1/sqrt(Dh); T5: 1)
    shift: float  # subtracted from every score before exp (0 unless the largest allowed score > LARGE_SCORE)
    keys: tuple[KeyStep, ...]  # the picked keys, in position order
    n_keys: int  # S
    n_allowed: int  # keys the query may see
    others_allowed: int  # allowed keys not picked
    others_blocked: int  # blocked keys not picked
    others_exp: float  # the sum of exp over the allowed keys not picked
    exp_sum: float  # the sum of exp over every allowed key (0: every key blocked)
    others_weight: float  # the model's weights of the keys not picked, summed
    others_value: np.ndarray  # (Dh,) sum over the keys not picked of weight x v
    z: np.ndarray  # (Dh,) the model's own weighted sum of values
    gate: float  # the head switch (1 on, 0 off)
    written: np.ndarray  # (D,) gate x z W_O^h.T: what the head adds to the token's numbers

    @property
    def weight_total(self) -> float:
        """The picked weights plus the others': 1 (0 when every key is blocked)."""
        return sum(k.weight for k in self.keys) + self.others_weight


def default_keys(comp: Any, top: int = DEFAULT_TOP) -> tuple[int, ...]:
    """The keys worked through when none are picked: the `top` with the largest weight, the query's own position (a
    self-attention key) and the first blocked key (so that the mask shows), in position order."""
    weights = np.asarray(comp.weights)
    S = len(weights)
    order = [int(j) for j in np.argsort(-weights, kind="stable") if comp.allowed[j]]
    picked = set(order[:top])
    if comp.kind != "cross" and comp.query < S:
        picked.add(int(comp.query))
    blocked = [j for j in range(S) if not comp.allowed[j]]
    if blocked:
        after = [j for j in blocked if j > comp.query]
        picked.add(after[0] if after else blocked[0])
    return tuple(sorted(picked)[:MAX_KEYS])


def check_keys(keys: Any, n_keys: int) -> tuple[int, ...]:
    """Picked key positions, checked: whole numbers in 0..S-1, at most MAX_KEYS (ValueError naming the value)."""
    if isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence) and not isinstance(keys, (set, frozenset)):
        keys = [keys]
    out = []
    for key in keys:
        if isinstance(key, bool):
            raise ValueError(f"key {key!r} is not a key position")
        try:
            j = int(key)
        except (TypeError, ValueError):
            raise ValueError(f"key {str(key)[:20]!r} is not a key position (a whole number)") from None
        if j != key and not isinstance(key, str):
            raise ValueError(f"key {key!r} is not a whole number")
        if not 0 <= j < n_keys:
            raise ValueError(f"key {j} is outside the {n_keys} keys: use 0..{n_keys - 1}")
        out.append(j)
    out = sorted(set(out))
    if len(out) > MAX_KEYS:
        raise ValueError(f"at most {MAX_KEYS} keys are worked through at once; {len(out)} were picked")
    return tuple(out)


def worked_example(comp: Any, keys: Any = None) -> WorkedExample:
    """The steps of `comp` (a HeadComputation) over `keys` (positions; None or empty: `default_keys`)."""
    S = len(comp.weights)
    picked = check_keys(keys, S) if keys not in (None, "", [], ()) else default_keys(comp)
    allowed = np.asarray(comp.allowed, dtype=bool)
    scores = np.asarray(comp.scores, dtype=np.float64)
    top = float(scores[allowed].max()) if allowed.any() else 0.0
    shift = top if top > LARGE_SCORE else 0.0
    exps = np.where(allowed, np.exp(np.where(allowed, scores, 0.0) - shift), 0.0)  # (S,)
    weights = np.asarray(comp.weights, dtype=np.float64)
    values = np.asarray(comp.values, dtype=np.float64)  # (S, Dh)
    steps = []
    for j in picked:
        ok = bool(allowed[j])
        position = None if comp.position is None or not ok else float(comp.position[j])
        steps.append(KeyStep(key=j, blocked_by=comp.blocked_by[j], dot=float(comp.dots[j]) if ok else None,
                             position=position, score=float(scores[j]) if ok else None, exp=float(exps[j]),
                             weight=float(weights[j]), value=values[j], weighted_value=weights[j] * values[j]))
    rest = np.ones(S, dtype=bool)
    rest[list(picked)] = False
    return WorkedExample(
        query=int(comp.query), x=np.asarray(comp.x, dtype=np.float64), q=np.asarray(comp.q, dtype=np.float64),
        q_unrotated=None if comp.q_unrotated is None else np.asarray(comp.q_unrotated, dtype=np.float64),
        scale=float(comp.scale), shift=shift, keys=tuple(steps), n_keys=S, n_allowed=int(allowed.sum()),
        others_allowed=int((rest & allowed).sum()), others_blocked=int((rest & ~allowed).sum()),
        others_exp=float(exps[rest].sum()), exp_sum=float(exps.sum()), others_weight=float(weights[rest].sum()),
        others_value=weights[rest] @ values[rest] if rest.any() else np.zeros(values.shape[1]),
        z=np.asarray(comp.weighted_sum, dtype=np.float64), gate=float(comp.gate),
        written=np.asarray(comp.written, dtype=np.float64))


def example_json(example: WorkedExample) -> dict[str, Any]:
    """The worked example as JSON-able data (lists; a blocked key's missing score as None)."""

    def plain(value: Any) -> Any:
        return value.tolist() if isinstance(value, np.ndarray) else value

    out = {name: plain(value) for name, value in vars(example).items() if name != "keys"}
    out["keys"] = [{name: plain(value) for name, value in vars(k).items()} for k in example.keys]
    out["weight_total"] = example.weight_total
    return out


"""Sampling the next token, Transformer Explainer's way: the logits divided by the temperature, then top-k, then top-p,
renormalised, then one draw from a seeded random generator.

Shapes: B batch, V vocabulary.

    Sampling(temperature, top_k, top_p, seed)      validated settings; greedy decoding is no Sampling at all (None)
    sampling_probs(log_probs (B, V), sampling)     -> SampledDistribution: probs (B, V) drawn from, order (B, V)
    draw(dist, uniforms (B,))                      -> (B,) ids: inverse CDF over the kept tokens, most probable first
    next_token_distribution(logits (V,), sampling) -> NextTokenDistribution: before / after temperature, the cut-offs

The steps, in this order (those of Transformer Explainer and of transformers' temperature, top-k and top-p warpers):
1. temperature: scores = logits / T (T > 0; T < 1 sharpens, T > 1 flattens); p_T = softmax(scores). Computed as
   (logits - their maximum) / T: the same p_T, without overflow however small T is.
2. top-k (k > 0): keep the k tokens of highest score, and every token tied with the k-th (ties are never split, so
   the kept set does not depend on token order); renormalise. k = 0, or k >= V, keeps every token.
3. top-p (p < 1): over the distribution after top-k, sorted most probable first, keep the smallest set whose
   probability reaches p: the token that crosses p is kept, and so is every token tied with it; renormalise.
   "Reaches" allows 1e-9 of rounding, so that 0.5 + 0.3 reaches 0.8. p = 1 keeps every token.
4. draw: one uniform number u in [0, 1) per row and step from a `torch.Generator` seeded with `seed` (on the CPU,
   so every device draws the same numbers); the token is the first, most probable first, whose cumulative
   probability exceeds u.

Greedy decoding is not temperature 0: it is the absence of sampling (``sampling=None``, the default everywhere), and
a temperature of 0 (or below, or not finite) is refused with a ValueError that says so. Tokens the caller suppresses
(``suppress_ids``, log-probability -inf) have probability 0 at every step and are never drawn.

A seed is an int in 0..MAX_SEED (2**31 - 1): it fits in a link's query string, a JSON number and an int32.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Sequence

import torch
from torch import Tensor

MAX_SEED = 2**31 - 1  # seeds are 0..MAX_SEED: exact in a link, a JSON number and an int32
TOP_P_ROUNDING = 1e-9  # a cumulative probability this close below p reaches p (0.5 + 0.3 reaches 0.8)


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = float(value)  # numpy and 0-d tensor numbers
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a number, got {value!r}") from None
    return float(value)


def _whole(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):  # numpy integers are Integral too
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class Sampling:
    """How to draw each next token instead of taking the most probable one (greedy decoding is ``None``)."""

    temperature: float = 1.0  # > 0 and finite: logits / temperature
    top_k: int = 0  # 0 = off; else keep the k most probable tokens (and ties with the k-th)
    top_p: float = 1.0  # in (0, 1]; 1 = off; else the smallest set whose probability reaches top_p
    seed: int = 0  # 0..MAX_SEED: the same seed draws the same numbers

    def __post_init__(self) -> None:
        temperature = _number(self.temperature, "temperature")
        if not math.isfinite(temperature) or temperature <= 0:
            raise ValueError(f"temperature must be a finite number above 0, got {self.temperature!r} (for greedy "
                             "decoding, the most probable token at each step, pass no sampling: sampling=None)")
        top_k = _whole(self.top_k, "top_k")
        if top_k < 0:
            raise ValueError(f"top_k must be 0 (off) or a positive whole number, got {self.top_k!r}")
        top_p = _number(self.top_p, "top_p")
        if not 0 < top_p <= 1:  # NaN fails this too
            raise ValueError(f"top_p must be above 0 and at most 1 (1 = off), got {self.top_p!r}")
        seed = _whole(self.seed, "seed")
        if not 0 <= seed <= MAX_SEED:
            raise ValueError(f"seed must be a whole number from 0 to {MAX_SEED}, got {self.seed!r}")
        for name, value in (("temperature", temperature), ("top_k", top_k), ("top_p", top_p), ("seed", seed)):
            object.__setattr__(self, name, value)  # plain Python numbers, whatever was given

    def generator(self) -> torch.Generator:
        """A new CPU generator seeded with `seed`: one per generation call, never shared between calls."""
        return torch.Generator(device="cpu").manual_seed(self.seed)

    def uniforms(self, generator: torch.Generator, rows: int) -> Tensor:
        """(rows,) float64 uniforms in [0, 1): the numbers one step draws, one per row."""
        return torch.rand(rows, generator=generator, dtype=torch.float64)

    def describe(self) -> str:
        parts = [f"temperature {self.temperature:g}"]
        parts.append(f"top-k {self.top_k}" if self.top_k else "no top-k")
        parts.append(f"top-p {self.top_p:g}" if self.top_p < 1 else "no top-p")
        return ", ".join(parts) + f", seed {self.seed}"


@dataclass(frozen=True)
class SampledDistribution:
    """The distribution one step draws from, for B rows."""

    probs: Tensor  # (B, V) float64: after temperature, top-k and top-p, renormalised; 0 outside the kept set
    order: Tensor  # (B, V) token ids, highest score first (ties: lower id first)
    tempered: Tensor  # (B, V) float64: softmax(logits / T) before the cut-offs
    after_top_k: Tensor  # (B, V) float64: after top-k, renormalised (tempered when top-k is off)
    top_k_kept: Tensor  # (B,) tokens top-k keeps (k, more with ties; every token of nonzero probability when off)
    kept: Tensor  # (B,) tokens left after top-p (the first `kept` of `order`)
    top_p_mass: Tensor  # (B,) float64: probability of the kept set in `after_top_k` (>= top_p)


def _renormalised(probs: Tensor, keep: Tensor) -> Tensor:
    kept = torch.where(keep, probs, torch.zeros_like(probs))
    return kept / kept.sum(-1, keepdim=True)


def sampling_probs(log_probs: Tensor, sampling: Sampling) -> SampledDistribution:
    """(B, V) logits or log-probabilities (the same after the softmax; -inf = never chosen) -> the distribution
    `sampling` draws from. Computed in float64: the cut-offs then do not depend on float32 rounding."""
    if log_probs.dim() != 2:
        raise ValueError(f"sampling_probs takes (B, V) scores, got shape {tuple(log_probs.shape)}")
    raw = log_probs.double()
    # Shifted so each row's top score is 0 before dividing: the same softmax, and a tiny T (2e-308) cannot overflow
    # every score to -inf. (B, V); -inf stays -inf
    scores = (raw - raw.max(-1, keepdim=True).values) / sampling.temperature
    if not bool(torch.isfinite(scores).any(-1).all()):
        raise ValueError("every token of a row has probability 0 (all suppressed): nothing can be drawn")
    order = scores.argsort(dim=-1, descending=True, stable=True)  # (B, V) most probable first, ties by id
    ranked = scores.gather(-1, order)  # (B, V) descending
    tempered = scores.softmax(-1)
    finite = torch.isfinite(scores)
    V = scores.shape[-1]
    if 0 < sampling.top_k < V:
        kth = ranked[:, sampling.top_k - 1:sampling.top_k]  # (B, 1) the k-th highest score
        keep = finite & (scores >= kth)  # ties with the k-th are kept
        after_k = _renormalised(tempered, keep)
    else:
        keep, after_k = finite, tempered
    top_k_kept = keep.sum(-1)
    if sampling.top_p < 1:
        cumulative = after_k.gather(-1, order).cumsum(-1)  # (B, V) most probable first
        before = (cumulative < sampling.top_p - TOP_P_ROUNDING).sum(-1, keepdim=True)  # tokens before the crossing
        crossing = ranked.gather(-1, before.clamp(max=V - 1))  # (B, 1) the score of the token that reaches p
        keep = keep & (scores >= crossing)  # ties with it are kept
        probs = _renormalised(after_k, keep)
    else:
        probs = after_k
    kept = keep.sum(-1)
    mass = torch.where(keep, after_k, torch.zeros_like(after_k)).sum(-1)
    return SampledDistribution(probs, order, tempered, after_k, top_k_kept, kept, mass)


def draw(dist: SampledDistribution, uniforms: Tensor) -> Tensor:
    """(B,) token ids: for each row the first token, most probable first, whose cumulative probability exceeds u."""
    ranked = dist.probs.gather(-1, dist.order)  # (B, V) descending
    cumulative = ranked.cumsum(-1)
    index = (cumulative <= uniforms.to(cumulative.device, torch.float64)[:, None]).sum(-1, keepdim=True)
    last = (ranked > 0).sum(-1, keepdim=True) - 1  # the kept tokens come first; some may have underflowed to 0
    index = torch.minimum(index, last)  # u above the rounded total: the last token of nonzero probability
    return dist.order.gather(-1, index)[:, 0]


@dataclass(frozen=True)
class NextTokenDistribution:
    """One position's next-token distribution at each stage of sampling, for drawing it (vocabulary order, V)."""

    sampling: Sampling
    order: Tensor  # (V,) token ids, most probable first (ties: lower id first)
    probs: Tensor  # (V,) float64: the model's probabilities (temperature 1; suppressed tokens 0)
    tempered: Tensor  # (V,) after the temperature
    after_top_k: Tensor  # (V,) after top-k, renormalised
    final: Tensor  # (V,) after top-p, renormalised: what a draw picks from
    top_k_kept: int  # how many tokens top-k keeps: the first top_k_kept of `order`
    top_p_kept: int  # how many are left after top-p: the first top_p_kept of `order`
    top_p_mass: float  # their probability after top-k (reaches top_p)

    def top(self, n: int) -> Tensor:
        """(min(n, V),) the ids of the n most probable tokens."""
        return self.order[:n]


def next_token_distribution(logits: Tensor, sampling: Sampling, suppress_ids: Sequence[int] = ()
                            ) -> NextTokenDistribution:
    """One position's logits (V,) -> its distribution before and after the temperature and after each cut-off."""
    if logits.dim() != 1:
        raise ValueError(f"next_token_distribution takes one position's logits (V,), got {tuple(logits.shape)}")
    scores = logits.detach().double().clone()[None]  # (1, V)
    if suppress_ids:
        scores[:, list(suppress_ids)] = -math.inf
    dist = sampling_probs(scores, sampling)
    return NextTokenDistribution(sampling, dist.order[0].cpu(), scores.softmax(-1)[0].cpu(), dist.tempered[0].cpu(),
                                 dist.after_top_k[0].cpu(), dist.probs[0].cpu(), int(dist.top_k_kept[0]),
                                 int(dist.kept[0]), float(dist.top_p_mass[0]))

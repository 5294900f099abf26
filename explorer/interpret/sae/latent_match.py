"""Which latents are plainly one thing: each latent's activations measured against named properties of the tokens
(true or false at every token: "the month name", "the third digit of the year", "a token that occurred earlier"), as
precision (of the tokens it is active on, the share with the property), recall (of the tokens with the property, the
share it is active on), and the share of its strongest activations that have the property (what a dashboard's top
examples show).

"Active" means above `threshold` times the latent's largest activation over the tokens given (0: any activation > 0,
SAELens's firing). A TopK SAE fills k latents at every token, so besides the tokens a latent is about it has weak
activations elsewhere; a quarter of its maximum separates the two (the weak ones stay visible as `precision_any`, the
precision of any activation > 0). A latent's match is the property with the best F1 (2 P R / (P + R)) among those
that hold on at least `min_count` tokens. Properties are given per token as tuples of names, so a token may have many
(its character, the field it is in, the month it names); the counts are accumulated as sparse (token, property)
pairs, never an (N, properties) matrix.

Shapes: N tokens, F = d_sae, P properties, k top activations.
    match_latents(activations (N, F), properties [N tuples of names], threshold, min_count, top) -> [LatentMatch] (one
    per latent active on some token, best F1 first)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

PAIRS = 8_192  # (token, property) pairs accumulated at a time: (PAIRS, F) floats


@dataclass(frozen=True)
class LatentMatch:
    latent: int
    property: str  # the property it matches best
    precision: float  # P(property | active)
    recall: float  # P(active | property)
    top_share: float  # share of its `top` strongest activations on tokens with the property
    fires: int  # tokens it is active on
    holds: int  # tokens with the property
    precision_any: float  # P(property | activation > 0), its weak activations counted too

    @property
    def f1(self) -> float:
        total = self.precision + self.recall
        return 2 * self.precision * self.recall / total if total else 0.0


def _counts(active: Tensor, token_of: Tensor, prop_of: Tensor, n_props: int) -> Tensor:
    """(P, F): tokens with each property on which each latent is active."""
    both = torch.zeros(n_props, active.shape[1])
    for start in range(0, len(token_of), PAIRS):
        both.index_add_(0, prop_of[start:start + PAIRS], active[token_of[start:start + PAIRS]].float())
    return both


def match_latents(activations: Tensor, properties: Sequence[Sequence[str]], *, threshold: float = 0.25,
                  min_count: int = 20, top: int = 20) -> list[LatentMatch]:
    """Each latent active on at least one token, with the property it matches best (see the module docstring), best
    F1 first. activations (N, F): latents of N tokens; properties: N tuples of property names."""
    if activations.dim() != 2 or activations.shape[0] != len(properties):
        raise ValueError(f"activations must be (N, F) for the N={len(properties)} tokens given properties, got shape "
                         f"{tuple(activations.shape)}")
    if not 0 <= threshold < 1:
        raise ValueError(f"threshold must be a share of each latent's largest activation in [0, 1), got {threshold!r}")
    fired = activations > 0  # (N, F)
    active = fired & (activations > threshold * activations.max(0).values)  # (N, F)
    names = sorted({name for props in properties for name in props})
    index = {name: i for i, name in enumerate(names)}
    token_of = torch.tensor([t for t, props in enumerate(properties) for _ in props], dtype=torch.long)
    prop_of = torch.tensor([index[name] for props in properties for name in props], dtype=torch.long)
    holds = torch.bincount(prop_of, minlength=len(names))  # (P,)
    both = _counts(active, token_of, prop_of, len(names))  # (P, F)
    fires = active.sum(0)  # (F,)
    precision = both / fires.clamp(min=1)  # (P, F)
    recall = both / holds.clamp(min=1)[:, None]
    f1 = 2 * precision * recall / (precision + recall).clamp(min=1e-12)
    f1[holds < min_count] = -1.0
    best = f1.argmax(0)  # (F,)
    both_any = _counts(fired, token_of, prop_of, len(names))
    fired_any = fired.sum(0)
    kk = min(top, activations.shape[0])
    top_tokens = activations.topk(kk, dim=0).indices.T  # (F, k)
    sets = [set(props) for props in properties]
    out = []
    for latent in fires.nonzero()[:, 0].tolist():
        p = int(best[latent])
        strongest = [t for t in top_tokens[latent].tolist() if fired[t, latent]]
        share = sum(names[p] in sets[t] for t in strongest) / max(1, len(strongest))
        out.append(LatentMatch(latent, names[p], float(precision[p, latent]), float(recall[p, latent]), share,
                               int(fires[latent]), int(holds[p]),
                               float(both_any[p, latent] / fired_any[latent].clamp(min=1))))
    return sorted(out, key=lambda m: (-m.f1, m.latent))

"""Which latents are plainly one thing: each latent's firing measured against named properties of the tokens (true or
false at every token: "the month name", "the third digit of the year", "a token that occurred earlier"), as precision
(of the tokens it fires on, the share with the property), recall (of the tokens with the property, the share it fires
on), and the share of its strongest activations that have the property (what a dashboard's top examples show).

A latent's match is the property with the best F1 (2 P R / (P + R)) among those that hold on at least `min_count`
tokens. Properties are given per token as tuples of names, so a token may have many (its character, the field it is
in, the month it names); the counts are accumulated as sparse (token, property) pairs, never an (N, properties) matrix.

Shapes: N tokens, F = d_sae, P properties, k top activations.
    match_latents(activations (N, F), properties [N tuples of names], min_count, top) -> [LatentMatch] (one per latent
    that fired, best F1 first)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class LatentMatch:
    latent: int
    property: str  # the property it matches best
    precision: float  # P(property | latent fires)
    recall: float  # P(latent fires | property)
    top_share: float  # share of its `top` strongest activations on tokens with the property
    fires: int  # tokens it fires on
    holds: int  # tokens with the property

    @property
    def f1(self) -> float:
        total = self.precision + self.recall
        return 2 * self.precision * self.recall / total if total else 0.0


def match_latents(activations: Tensor, properties: Sequence[Sequence[str]], *, min_count: int = 20,
                  top: int = 20) -> list[LatentMatch]:
    """Each latent that fires on at least one token, with the property it matches best (see the module docstring),
    best F1 first. activations (N, F): latents of N tokens; properties: N tuples of property names."""
    if activations.dim() != 2 or activations.shape[0] != len(properties):
        raise ValueError(f"activations must be (N, F) for the N={len(properties)} tokens given properties, got shape "
                         f"{tuple(activations.shape)}")
    fired = activations > 0  # (N, F)
    names = sorted({name for props in properties for name in props})
    index = {name: i for i, name in enumerate(names)}
    token_of = torch.tensor([t for t, props in enumerate(properties) for _ in props], dtype=torch.long)
    prop_of = torch.tensor([index[name] for props in properties for name in props], dtype=torch.long)
    holds = torch.bincount(prop_of, minlength=len(names))  # (P,)
    both = torch.zeros(len(names), fired.shape[1])  # (P, F) tokens with the property the latent fires on
    for start in range(0, len(token_of), 8_192):  # pairs in chunks: (c, F) at a time
        both.index_add_(0, prop_of[start:start + 8_192], fired[token_of[start:start + 8_192]].float())
    fires = fired.sum(0)  # (F,)
    precision = both / fires.clamp(min=1)  # (P, F)
    recall = both / holds.clamp(min=1)[:, None]
    f1 = 2 * precision * recall / (precision + recall).clamp(min=1e-12)
    f1[holds < min_count] = -1.0
    best = f1.argmax(0)  # (F,)
    kk = min(top, activations.shape[0])
    top_tokens = activations.topk(kk, dim=0).indices.T  # (F, k)
    sets = [set(props) for props in properties]
    out = []
    for latent in fires.nonzero()[:, 0].tolist():
        p = int(best[latent])
        strongest = [t for t in top_tokens[latent].tolist() if fired[t, latent]]
        share = sum(names[p] in sets[t] for t in strongest) / max(1, len(strongest))
        out.append(LatentMatch(latent, names[p], float(precision[p, latent]), float(recall[p, latent]), share,
                               int(fires[latent]), int(holds[p])))
    return sorted(out, key=lambda m: (-m.f1, m.latent))

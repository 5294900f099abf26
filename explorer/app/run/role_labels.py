"""The role labels of the All heads tiles: what kind of head each one is (explorer.interpret.roles) on the sentence
the page's Run read, scored from the attention the Run returned (no model run); and which roles a stack scores (the
Roles tab scores the same ones on the typed text and its probe).

Shapes: L layers, H heads, T tokens. Scores are {role: (L, H)} in [0, 1], NaN where the text defines the role on no
query (induction and duplicate need a repeated token). Induction is scored only on causal stacks (a decoder): it is
the left-to-right mechanism that predicts the next token from what followed the token's earlier copy; an encoder sees
both directions, so "the key after an earlier copy" is one position among many it may read.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ...interpret import ROLES, role_scores
from .model_run import Run

ROLE_SHORT = {"previous": "prev", "duplicate": "dup", "induction": "ind", "first": "first", "self": "self",
              "local": "local"}
LABEL_THRESHOLD = 0.5  # a tile is labelled with a role whose score reaches this
NARROW = tuple(r for r in ROLES if r != "local")  # "local" contains "self" and "previous": it labels only alone


def stack_roles(causal: bool) -> tuple[str, ...]:
    """The roles scored on a stack: induction only where attention is causal (module docstring)."""
    return ROLES if causal else tuple(r for r in ROLES if r != "induction")


def text_scores(run: Run, kind: str, row: int) -> dict[str, Tensor] | None:
    """{role: (L, H)} of one sentence's self-attention in a run with the default masks (the baseline); None for
    cross-attention. No model run: the scores come from the attention the run returned."""
    if kind not in run.ids:
        return None
    ids = torch.tensor(run.ids[kind][row], dtype=torch.long)
    n = len(ids)
    attn = [a[row:row + 1, :, :n, :n] for a in run.attentions[kind]]  # per layer (1, H, T, T) unpadded, not copied
    causal = kind == "decoder"
    return role_scores(attn, ids, causal=causal, roles=stack_roles(causal))


def tile_notes(scores: dict[str, Tensor] | None, threshold: float = LABEL_THRESHOLD) -> list[list[str]] | None:
    """(L, H) labels like "ind .92": each head's strongest role among those reaching `threshold` ("local" only
    when no narrower role does; "" for none)."""
    if not scores:
        return None
    L, H = next(iter(scores.values())).shape
    notes = [["" for _ in range(H)] for _ in range(L)]
    for layer in range(L):
        for head in range(H):
            for group in (NARROW, ("local",)):
                found = [(float(scores[r][layer, head]), r) for r in group if r in scores]
                found = [(s, r) for s, r in found if not math.isnan(s) and s >= threshold]
                if found:
                    score, role = max(found, key=lambda f: f[0])
                    notes[layer][head] = f"{ROLE_SHORT[role]} {score:.2f}".replace(" 0.", " .")
                    break
    return notes

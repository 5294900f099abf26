"""A language model's next-token predictions in two steps: first the vocabulary head at the chosen position of each
sentence (what the output table, its summary and the output chips read), then at every position (the top tokens
after each position, the surprisal of each token) when something reads them (`model_run.Run.every_position`).

At 1,024 tokens on GPT-2 small the head over every position is 79 GFLOP (0.5 s on 2 cores) of a Run's outputs, while
the chosen positions read the head's weights once (~15 ms): so a Run shows its outputs without waiting for it, and
the rest is made after they are sent (`result.Reductions.complete`).

Shapes: B sentences, T tokens (padded), n one sentence's tokens, D model width, k tokens listed per position.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ...model.heads import Generator
from ...outputs import causal_lm
from .sentence_outputs import GeneratedText, NextTokens
from .view import View


@dataclass(frozen=True)
class Chosen:
    """The head's predictions at one position per sentence."""

    positions: list[int]  # per sentence, the position whose next token is listed (the view's, clamped into it)
    top_ids: Tensor  # (B, k)
    top_probs: Tensor  # (B, k)
    favourite_probs: Tensor | None  # (B,) the probability of the baseline's favourite there (a toggled run)


def chosen_predictions(generator: Generator, hidden: Tensor, ids: Tensor, rows: list[list[int]], view: View | None,
                       k: int, baseline: Any = None) -> Chosen:
    """The head on hidden (B, T, D) at each sentence's `view.position` (None: the last token); `baseline`: the finished
    baseline `Run` of a toggled run, whose favourite there is rated."""
    positions = [(view or View()).position_in(len(row)) for row in rows]
    at = torch.arange(len(rows)), torch.tensor(positions)
    favourites = None
    if baseline is not None:  # (B, 1) the baseline's top token at the same positions
        favourites = torch.tensor([[int(out.top_ids[p, 0])] for out, p in zip(baseline.outputs, positions)],
                                  device=ids.device)
    pred = causal_lm.head_predictions(generator, hidden[at][:, None], ids[at][:, None], None, k, favourites)  # T = 1
    return Chosen(positions, pred.top_ids[:, 0].cpu(), pred.top_probs[:, 0].cpu(),
                  None if favourites is None else pred.favourite_probs[:, 0].cpu())


def first_next_tokens(chosen: Chosen, b: int, n: int, continuation: GeneratedText) -> NextTokens:
    """Sentence b's NextTokens (n tokens) with its chosen position filled; every other position is NaN (id 0) until
    `every_position` replaces it."""
    p, k = chosen.positions[b], chosen.top_ids.shape[-1]
    top_ids, top_probs = torch.zeros(n, k, dtype=torch.long), torch.full((n, k), math.nan)
    top_ids[p], top_probs[p] = chosen.top_ids[b], chosen.top_probs[b]
    favourite = None
    if chosen.favourite_probs is not None:
        favourite = torch.full((n,), math.nan)
        favourite[p] = chosen.favourite_probs[b]
    return NextTokens(top_ids, top_probs, torch.full((max(n - 1, 0),), math.nan), favourite, continuation)


def every_position(generator: Generator, hidden: Tensor, ids: Tensor, key_mask: Tensor, first: list[NextTokens],
                   k: int, baseline: Any = None) -> list[NextTokens]:
    """The sentences' NextTokens at every position, from the head over hidden (B, T, D); the chosen positions keep
    the numbers `first` holds (the same head on fewer rows: equal to ~1e-9), so what the Run showed stays what it
    keeps. `baseline`: the baseline `Run` (every position predicted) of a toggled run."""
    favourites = None
    if baseline is not None:  # (B, T): sentences of different lengths are padded (the padding rates id 0)
        favourites = torch.zeros(ids.shape, dtype=torch.long, device=ids.device)
        for b, out in enumerate(baseline.outputs):
            favourites[b, : len(out.top_ids)] = out.top_ids[:, 0]
    pred = causal_lm.head_predictions(generator, hidden, ids, key_mask, k, favourites)  # no (B, T, V) logits
    outputs = []
    for b, out in enumerate(first):
        n = len(out.top_ids)
        shown = ~out.top_probs[:, 0].isnan()  # (n,) the positions the Run showed
        top_ids, top_probs = pred.top_ids[b, :n].cpu(), pred.top_probs[b, :n].cpu()
        top_ids[shown], top_probs[shown] = out.top_ids[shown], out.top_probs[shown]
        favourite = None
        if out.favourite_probs is not None:
            favourite = pred.favourite_probs[b, :n].cpu()
            favourite[shown] = out.favourite_probs[shown]
        outputs.append(NextTokens(top_ids, top_probs, pred.surprisal[b, : n - 1].cpu(), favourite, out.continuation))
    return outputs

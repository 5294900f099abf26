"""What a causal language model says, as plain functions the app (or a notebook) shows: the next
token's top-k at a chosen position, the same with heads toggled and how much the baseline's favourite
moved, the surprisal of each token of a text, and greedy continuation with attention per new token.

Shapes: B batch, T tokens, V vocabulary, N generated tokens.

    next_tokens(logits (T, V), tokenizer, position, k)            -> NextTokens (ids, labels, probs)
    compare_next_tokens(base (T, V), toggled (T, V), tokenizer, ...) -> NextTokenChange
    surprisal(logits (B, T, V), ids (B, T), key_mask (B, T))      -> (B, T-1) nats, entry t for token t+1
    continue_text(model, tokenizer, text, max_new_tokens, ...)    -> Continuation (ids, labels, text, steps)

Every number comes from the logits the model computed; labels come from `Tokenizer.labels`, so a
token reads the same here as on the heatmap axes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import torch
from torch import Tensor

from .generate import Generation, generate
from .model import Transformer
from .tokenizer import Tokenizer




@dataclass
class NextTokens:
    position: int  # the position whose next token is predicted (0-based, negative values resolved)
    ids: list[int]  # the k most probable next tokens, most probable first
    labels: list[str]
    probs: list[float]


@dataclass
class NextTokenChange:
    baseline: NextTokens  # every head on
    toggled: NextTokens  # with the heads switched off
    top_id: int  # the baseline's most probable next token
    top_label: str
    baseline_prob: float  # its probability with every head on
    toggled_prob: float  # its probability with the heads toggled
    change: float  # toggled_prob - baseline_prob


def resolve_position(position: int, length: int) -> int:
    resolved = position + length if position < 0 else position
    if not 0 <= resolved < length:
        raise ValueError(f"position {position} is outside a sequence of {length} tokens")
    return resolved


def next_tokens(logits: Tensor, tokenizer: Tokenizer, position: int = -1, k: int = 10) -> NextTokens:
    """Top-k next tokens after `position` of one sequence's logits (T, V)."""
    if logits.dim() != 2:
        raise ValueError(f"next_tokens takes one sequence's logits (T, V), got {tuple(logits.shape)}")
    pos = resolve_position(position, logits.shape[0])
    probs = logits[pos].float().softmax(dim=-1)  # (V,)
    top = probs.topk(min(k, probs.shape[0]))
    ids = top.indices.tolist()
    return NextTokens(pos, ids, tokenizer.labels(ids), top.values.tolist())


def compare_next_tokens(baseline_logits: Tensor, toggled_logits: Tensor, tokenizer: Tokenizer, position: int = -1,
                        k: int = 10) -> NextTokenChange:
    """Baseline vs toggled top-k at one position, and the change in the baseline favourite's probability."""
    base = next_tokens(baseline_logits, tokenizer, position, k)
    toggled = next_tokens(toggled_logits, tokenizer, position, k)
    top = base.ids[0]
    toggled_prob = toggled_logits[base.position].float().softmax(dim=-1)[top].item()
    return NextTokenChange(base, toggled, top, base.labels[0], base.probs[0], toggled_prob,
                           toggled_prob - base.probs[0])


def surprisal(logits: Tensor, ids: Tensor, key_mask: Tensor | None = None) -> Tensor:
    """-log p(token t+1 | tokens 0..t) in nats for t = 0..T-2 -> (B, T-1) (divide by ln 2 for bits).

    The first token has no prediction, so entry t belongs to token t+1. Where token t+1 is padding
    (key_mask False) or nothing real precedes it, the entry is NaN: there is no such prediction.
    """
    return surprisal_from_log_probs(logits[:, :-1].float().log_softmax(dim=-1), ids, key_mask)


def surprisal_from_log_probs(log_probs: Tensor, ids: Tensor, key_mask: Tensor | None = None) -> Tensor:
    """`surprisal` from log-probabilities (B, T-1 or T, V) already computed."""
    picked = -log_probs[:, : ids.shape[1] - 1].gather(-1, ids[:, 1:, None])[..., 0]  # (B, T-1)
    if key_mask is not None:
        picked = picked.masked_fill(~has_prediction(key_mask), math.nan)
    return picked


def has_prediction(key_mask: Tensor) -> Tensor:
    """(B, T) real tokens -> (B, T-1) True where token t+1 is real and something real precedes it."""
    return key_mask[:, 1:] & (key_mask.long().cumsum(dim=-1)[:, :-1] > 0)


@dataclass
class Predictions:
    """What a causal LM predicts after every position of a batch."""

    top_ids: Tensor  # (B, T, k) the k most probable next tokens after each position, most probable first
    top_probs: Tensor  # (B, T, k) their probabilities
    surprisal: Tensor  # (B, T-1) nats of each actual next token (see `surprisal`)
    favourite_probs: Tensor | None  # (B, T) probability of given ids after each position (e.g. another run's top)


def predictions(logits: Tensor, ids: Tensor, key_mask: Tensor | None = None, k: int = 10,
                favourites: Tensor | None = None, chunk: int = 128) -> Predictions:
    """Top-k and surprisal at every position from the logits (B, T, V); with `favourites` (B, T), also the
    probability each position gives those ids (how a toggled run rates the baseline's favourites).
    The softmax runs `chunk` positions at a time: a full (B, T, V) copy is 200 MB for GPT-2 at 1,024 tokens."""
    B, T, _ = logits.shape
    top_ids, top_probs, picked, favourite = [], [], [], []
    for start in range(0, T, chunk):
        log_probs = logits[:, start:start + chunk].float().log_softmax(dim=-1)  # (B, t, V)
        top = log_probs.topk(min(k, log_probs.shape[-1]), dim=-1)
        top_ids.append(top.indices)
        top_probs.append(top.values.exp())
        following = ids[:, start + 1:start + 1 + log_probs.shape[1]]  # the tokens these positions predict
        picked.append(-log_probs[:, : following.shape[1]].gather(-1, following[..., None])[..., 0])
        if favourites is not None:
            favourite.append(log_probs.gather(-1, favourites[:, start:start + chunk, None])[..., 0].exp())
    surprise = torch.cat(picked, dim=1)  # (B, T-1)
    if key_mask is not None:
        surprise = surprise.masked_fill(~has_prediction(key_mask), math.nan)
    return Predictions(torch.cat(top_ids, 1), torch.cat(top_probs, 1), surprise,
                       torch.cat(favourite, 1) if favourites is not None else None)


@dataclass
class Continuation:
    prompt_ids: list[int]
    ids: list[int]  # the generated tokens, up to and including EOS if it came
    labels: list[str]  # their labels (Tokenizer.labels)
    text: str  # the generated tokens decoded
    probs: list[float]  # probability of each chosen token
    generation: Generation  # attention of every step: generation.steps[n].decoder[layer] (1, H, K)


@torch.no_grad()
def continue_text(model: Transformer, tokenizer: Tokenizer, text: str, max_new_tokens: int = 20, *,
                  head_mask: Mapping[str, Any] | None = None, max_length: int | None = None) -> Continuation:
    """Greedy continuation of `text` (encoded with the model's special tokens, e.g. BOS)."""
    if model.config.arch != "decoder":
        raise ValueError("continue_text needs a decoder-only (causal) language model")
    prompt = tokenizer.encode(text, max_length=max_length or model.config.max_len).ids
    if not prompt:
        raise ValueError("the text gives no tokens")
    src = torch.tensor([prompt], device=model.device)
    gen = generate(model, src, eos_id=tokenizer.eos_id, max_new_tokens=max_new_tokens, head_mask=head_mask,
                   key_mask=torch.ones_like(src, dtype=torch.bool))
    ids = gen.tokens[0].tolist()
    if tokenizer.eos_id is not None and tokenizer.eos_id in ids:
        ids = ids[: ids.index(tokenizer.eos_id) + 1]
    probs = gen.log_probs[0, : len(ids)].exp().tolist()
    return Continuation(prompt, ids, tokenizer.labels(ids), tokenizer.decode(ids), probs, gen)

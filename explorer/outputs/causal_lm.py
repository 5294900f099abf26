"""What a causal language model says, as plain functions the app (or a notebook) shows: the next
token's top-k at a chosen position, the same with heads toggled and how much the baseline's favourite
moved, the surprisal of each token of a text, and continuation (greedy, or sampled) with attention per new token.

Shapes: B batch, T tokens, V vocabulary, N generated tokens.

    next_tokens(logits (T, V), tokenizer, position, k)            -> NextTokens (ids, labels, probs)
    compare_next_tokens(base (T, V), toggled (T, V), tokenizer, ...) -> NextTokenChange
    surprisal(logits (B, T, V), ids (B, T), key_mask (B, T))      -> (B, T-1) nats, entry t for token t+1
    predictions(logits (B, T, V), ids, key_mask, k, favourites)   -> Predictions: top-k, surprisal, favourites
    head_predictions(generator, hidden (B, T, D), ids, ...)        -> the same, the vocabulary head run in chunks
    continue_text(model, tokenizer, text, max_new_tokens, ..., sampling) -> Continuation (ids, labels, text, steps)

Every number comes from the logits the model computed; labels come from `Tokenizer.labels`, so a
token reads the same here as on the heatmap axes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import torch
import torch.nn.functional as F
from torch import Tensor

from .generate import Generation, generate
from ..model import Transformer
from ..model.heads import Generator
from ..model.stacks import ResidHook
from ..tokenizer import Tokenizer
from .sampling import Sampling


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
                favourites: Tensor | None = None, chunk: int = 4096) -> Predictions:
    """Top-k and surprisal at every position from the logits (B, T, V); with `favourites` (B, T), also the
    probability each position gives those ids (how a toggled run rates the baseline's favourites). The softmax
    runs over `chunk` tokens of the vocabulary at a time (`predictions_by_chunk`): no (B, T, V) copy."""
    V = logits.shape[-1]
    return predictions_by_chunk(lambda a, e: logits[..., a:e].to(torch.float32, copy=True), V, ids, key_mask, k,
                                favourites, chunk)  # a copy: the chunks are changed in place


def head_predictions(generator: Generator, hidden: Tensor, ids: Tensor, key_mask: Tensor | None = None,
                     k: int = 10, favourites: Tensor | None = None, chunk: int = 2048) -> Predictions:
    """`predictions(generator.logits(hidden), ...)` without the (B, T, V) logits: the vocabulary head itself runs
    `chunk` rows of its weight at a time (GPT-2 small at 1,024 tokens, 2 threads: 0.51 s instead of 0.73 s for the
    product and the softmax, measured; 0.53 s with 4,096 rows, 0.56 s with 8,192: the blocks stay in cache, and
    no 200 MB buffer is written and read again)."""
    x = hidden * generator.scale if generator.scale != 1.0 else hidden  # (B, T, D)
    weight, bias = generator.proj.weight, generator.proj.bias  # (V, D), (V,) | None

    def logits(a: int, e: int) -> Tensor:
        return F.linear(x, weight[a:e], None if bias is None else bias[a:e])  # (B, T, e - a)

    return predictions_by_chunk(logits, weight.shape[0], ids, key_mask, k, favourites, chunk)


def predictions_by_chunk(logits: Callable[[int, int], Tensor], V: int, ids: Tensor, key_mask: Tensor | None,
                         k: int, favourites: Tensor | None, chunk: int) -> Predictions:
    """`Predictions` from the logits of vocabulary tokens a..e-1, (B, T, e - a), asked for `chunk` tokens at a time:
    a running log-sum-exp (max and sum rescaled as each chunk comes), a running top-k, and the logits of the next
    ids and of the favourites picked from the chunk that holds them. Low-precision logits are read in float32."""
    B, T = ids.shape
    k = min(k, V)
    following = torch.cat([ids[:, 1:], ids[:, :1]], dim=1)  # (B, T) the token each position predicts (last: unused)
    wanted = [following] + ([favourites] if favourites is not None else [])
    picked = [None] * len(wanted)  # (B, T) their logits, filled chunk by chunk
    high = total = top_values = top_ids = None
    for a in range(0, V, chunk):
        block = logits(a, min(a + chunk, V))  # (B, T, c)
        if block.dtype in (torch.float16, torch.bfloat16):
            block = block.float()
        for n, which in enumerate(wanted):
            inside = (which >= a) & (which < a + block.shape[-1])
            value = block.gather(-1, (which - a).clamp(0, block.shape[-1] - 1)[..., None])[..., 0]
            picked[n] = torch.where(inside, value, picked[n] if picked[n] is not None else value)
        top = block.topk(min(k, block.shape[-1]), dim=-1)
        if top_values is None:
            top_values, top_ids = top.values, top.indices + a
        else:
            both = torch.cat([top_values, top.values], -1)
            merged = both.topk(min(k, both.shape[-1]), dim=-1)
            top_values = merged.values
            top_ids = torch.cat([top_ids, top.indices + a], -1).gather(-1, merged.indices)
        peak = block.amax(-1)  # (B, T)
        if high is None:
            high, total = peak, block.sub_(peak[..., None]).exp_().sum(-1)
        else:
            new_high = torch.maximum(high, peak)
            total = total * (high - new_high).exp() + block.sub_(new_high[..., None]).exp_().sum(-1)
            high = new_high
    log_total = high + total.log()  # (B, T) log of the softmax's denominator
    surprise = (log_total - picked[0])[:, : T - 1]  # (B, T-1)
    if key_mask is not None:
        surprise = surprise.masked_fill(~has_prediction(key_mask), math.nan)
    favourite = (picked[1] - log_total).exp() if favourites is not None else None
    return Predictions(top_ids, (top_values - log_total[..., None]).exp(), surprise, favourite)


@dataclass
class Continuation:
    prompt_ids: list[int]
    ids: list[int]  # the generated tokens, up to and including EOS if it came
    labels: list[str]  # their labels (Tokenizer.labels)
    text: str  # the generated tokens decoded
    probs: list[float]  # probability of each chosen token (the model's, at temperature 1, even when sampled)
    generation: Generation  # attention of every step: generation.steps[n].decoder[layer] (1, H, K)


@torch.no_grad()
def continue_text(model: Transformer, tokenizer: Tokenizer, text: str, max_new_tokens: int = 20, *,
                  head_mask: Mapping[str, Any] | None = None, max_length: int | None = None,
                  sampling: Sampling | None = None, resid_hook: ResidHook | None = None) -> Continuation:
    """Greedy continuation of `text` (encoded with the model's special tokens, e.g. BOS); with `sampling`, each token
    is drawn (explorer.outputs.sampling: temperature, top-k, top-p, seed), and the same seed gives the same
    continuation. `resid_hook` is the model's per-call residual-stream hook, applied at every step (a steering
    vector, an SAE splice)."""
    if model.config.arch != "decoder":
        raise ValueError("continue_text needs a decoder-only (causal) language model")
    prompt = tokenizer.encode(text, max_length=max_length or model.config.max_len).ids
    if not prompt:
        raise ValueError("the text gives no tokens")
    src = torch.tensor([prompt], device=model.device)
    gen = generate(model, src, eos_id=tokenizer.eos_id, max_new_tokens=max_new_tokens, head_mask=head_mask,
                   key_mask=torch.ones_like(src, dtype=torch.bool), sampling=sampling, resid_hook=resid_hook)
    ids = gen.tokens[0].tolist()
    if tokenizer.eos_id is not None and tokenizer.eos_id in ids:
        ids = ids[: ids.index(tokenizer.eos_id) + 1]
    probs = gen.log_probs[0, : len(ids)].exp().tolist()
    return Continuation(prompt, ids, tokenizer.labels(ids), tokenizer.decode(ids), probs, gen)

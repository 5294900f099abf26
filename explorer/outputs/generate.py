"""Decoding that shows its work: every generated token comes with the decoder self-attention and
cross-attention row it was computed with, in every layer and head. Greedy by default (the most probable token at each
step); with `sampling` (explorer.outputs.sampling.Sampling) each token is drawn after temperature, top-k and top-p, from one
generator seeded per call.

Shapes: B batch, H heads, L layers, S source length, P prompt length, N generated tokens.

    generate(model, src (B, S) | prompt (B, P), bos_id=..., eos_id=..., max_new_tokens=N, ...)
        -> Generation(tokens (B, N), log_probs (B, N), steps: N x StepAttention, uniforms (B, N) when sampling)
    StepAttention.decoder[l]: (B, H, K) self-attention of the new token over the K tokens so far
    StepAttention.cross[l]:   (B, H, S) its attention over the source (encoder-decoder only)

With a causal decoder (the default) the steps share a key/value cache (explorer.model.cache): the
prompt but its last token is run once without weights, and each step then runs one token over
the cached keys, returning the same row a full forward pass over the prefix computes (same masks,
positions, head toggles; tests hold both equal for every family). Without the causal mask earlier
tokens see later ones, so nothing can be cached and each step reruns the whole prefix.

Decoder-only prompts of different lengths are left-padded with a `key_mask` (B, P), True = real
token (the model then counts positions from each row's first real token, as an unpadded run does);
without one, prompts containing `config.pad_id` are refused. A generated token is always a real token, even
one equal to the padding id. An encoder-decoder's decoder input (the
start token, then the tokens generated) is all real tokens, even where the start token is the padding
id (T5, Marian). `suppress_ids` are never chosen (Marian's `bad_words_ids`: its padding token), sampled or not.

Sampling draws one uniform number per row at every step, finished rows included, from a generator made from the seed
for this call: step n of every call with the same seed and batch size reads the same number, so a baseline run and a
toggled run draw the same token wherever their distributions agree, and the cache (or its absence) changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import torch
from torch import Tensor

from ..model import Transformer
from ..model.cache import DecoderCache
from ..model.stacks import ResidHook
from .sampling import Sampling, draw, sampling_probs


@dataclass
class StepAttention:
    decoder: tuple[Tensor, ...]  # per layer (B, H, K): the new token's self-attention row
    cross: tuple[Tensor, ...]  # per layer (B, H, S); () for decoder-only models


@dataclass
class Generation:
    tokens: Tensor  # (B, N) generated ids; pad_id (or eos_id if the model has none) after a sequence finished
    log_probs: Tensor  # (B, N) log-probability of each chosen token (0 after finishing)
    steps: list[StepAttention]  # one per generated position
    prefix: Tensor  # (B, K) what the decoder was fed: start token / prompt + generated tokens
    finished: Tensor  # (B,) True where eos was produced
    sampling: Sampling | None = None  # how the tokens were drawn; None = greedy
    uniforms: Tensor | None = None  # (B, N) float64 sampling: the uniform number each step drew (also after finishing)
    sampled_probs: Tensor | None = None  # (B, N) float64 sampling: each chosen token's probability in the distribution
    #                                      it was drawn from (after temperature, top-k, top-p; 1 after finishing)

    def attention_matrix(self, kind: str, layer: int, batch_index: int = 0) -> Tensor:
        """(H, N, K_max) rows of every step for one layer, zero-padded on the right (self-attention)."""
        rows = [getattr(step, kind)[layer][batch_index] for step in self.steps]  # each (H, K_t)
        width = max(r.shape[-1] for r in rows)
        return torch.stack([torch.nn.functional.pad(r, (0, width - r.shape[-1])) for r in rows], dim=1)


@torch.no_grad()  # not inference_mode: results stay usable in autograd code
def generate(model: Transformer, src: Tensor, *, bos_id: int | None = None, eos_id: int | None = None,
             max_new_tokens: int = 32, padding: bool = True, causal: bool = True,
             attn_mask: Tensor | None = None, head_mask: Mapping[str, Any] | None = None,
             key_mask: Tensor | None = None, suppress_ids: Sequence[int] = (),
             weights_dtype: torch.dtype | None = None, cache: DecoderCache | None = None,
             sampling: Sampling | None = None, resid_hook: ResidHook | None = None) -> Generation:
    """Greedy (or, with `sampling`, sampled) decoding for encoder-decoder (src = source ids, decoding starts from
    `bos_id`) and decoder-only models (src = prompt ids, equal length or left-padded with `key_mask`, continued).
    `key_mask` (B, S|P), True = real token, marks padding explicitly (the source's, or the prompts').
    `weights_dtype`: each step's attention is cast to it layer by layer (float16 for long prefixes).
    `cache` (decoder-only, causal): the prompt's keys and values but the last token's, from a run already made
    with the same masks and head toggles (Transformer.forward(cache=...), then DecoderCache.select).
    `resid_hook` (site, x) -> x: the model's per-call residual-stream hook (explorer.model.stacks), applied in every
    step (to the encoder's run too): with the cache, each step's x holds the new token alone."""
    config = model.config
    if sampling is not None and not isinstance(sampling, Sampling):
        raise ValueError(f"sampling must be an explorer.outputs.sampling.Sampling or None (greedy), got {sampling!r}")
    if config.arch == "encoder":
        raise ValueError("an encoder-only model does not generate text")
    masks = model.head_masks(head_mask)
    B = src.shape[0]
    if config.arch == "encoder-decoder":
        if bos_id is None:
            raise ValueError("encoder-decoder generation needs bos_id (the decoder start token)")
        enc = model.encode(src, padding=padding, attn_mask=attn_mask, head_mask=masks.get("encoder"),
                           key_mask=key_mask, resid_hook=resid_hook)
        memory, memory_key_mask = enc.memory, enc.key_mask
        prefix = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)
        key_mask = torch.ones_like(prefix, dtype=torch.bool)  # the decoder's own tokens are all real
        self_mask = None
    else:
        check_prompt_padding(model, src, key_mask, padding)
        if key_mask is None:  # no padding in the prompts (checked): every token, generated ones too, is real
            key_mask = torch.ones_like(src, dtype=torch.bool)
        memory = memory_key_mask = None
        prefix = src
        self_mask = attn_mask
    max_new_tokens = min(max_new_tokens, config.max_len - prefix.shape[1])
    finished = torch.zeros(B, dtype=torch.bool, device=src.device)
    filler = config.pad_id if config.pad_id is not None else (eos_id if eos_id is not None else 0)
    tokens, log_probs, steps, uniforms, sampled_probs = [], [], [], [], []
    rng = sampling.generator() if sampling is not None else None  # this call's own: the seed replays it
    decode_args = dict(padding=padding, causal=causal, head_mask=masks.get("decoder"),
                       cross_head_mask=masks.get("cross"), resid_hook=resid_hook)
    if cache is not None and (config.arch != "decoder" or not causal or cache.length != prefix.shape[1] - 1):
        raise ValueError(f"a given cache must hold the prompt but its last token ({prefix.shape[1] - 1}), for a "
                         f"causal decoder-only model; it holds {cache.length}")
    if cache is None and causal and max_new_tokens > 0:
        cache = DecoderCache(len(model.decoder.layers))
    if cache is not None and cache.length < prefix.shape[1] - 1:  # every prompt token but the last: keys and values
        model.decode(prefix[:, :-1], memory, memory_key_mask, attn_mask=grow_mask(self_mask, prefix.shape[1] - 1),
                     key_mask=key_mask[:, :-1], need_weights=False, cache=cache, **decode_args)
    for _ in range(max(max_new_tokens, 0)):
        # A custom decoder-only mask is given for the prompt; extend it to the prefix so far.
        dec = model.decode(prefix, memory, memory_key_mask, attn_mask=grow_mask(self_mask, prefix.shape[1]),
                           key_mask=key_mask, weights_dtype=weights_dtype, cache=cache, **decode_args)
        step_log_probs = model.generator(dec.output[:, -1])  # (B, V)
        if suppress_ids:
            step_log_probs[:, list(suppress_ids)] = -torch.inf  # never chosen; the others keep their log-probability
        if sampling is None:
            best_log_prob, best = step_log_probs.max(dim=-1)
        else:
            # One uniform per row per step, drawn whatever happens (finished rows too), read by the inverse CDF: the
            # n-th step of every run with this seed uses the same number, so runs differ only where their
            # distributions do.
            u = sampling.uniforms(rng, B)
            dist = sampling_probs(step_log_probs, sampling)
            best = draw(dist, u)
            best_log_prob = step_log_probs.gather(-1, best[:, None])[:, 0]
            uniforms.append(u)
            sampled_probs.append(dist.probs.gather(-1, best[:, None])[:, 0].cpu().masked_fill(finished.cpu(), 1.0))
        best = best.masked_fill(finished, filler)
        best_log_prob = best_log_prob.masked_fill(finished, 0.0)
        # clone: a view of the last row would keep each step's whole (B, H, K, K) weights alive
        steps.append(StepAttention(tuple(w[:, :, -1].clone() for w in dec.self_attentions),
                                   tuple(w[:, :, -1].clone() for w in dec.cross_attentions)))
        del dec
        tokens.append(best)
        log_probs.append(best_log_prob)
        prefix = torch.cat([prefix, best[:, None]], dim=1)
        if key_mask is not None:  # generated tokens are real tokens
            key_mask = torch.cat([key_mask, key_mask.new_ones(B, 1)], dim=1)
        if eos_id is not None:
            finished |= best == eos_id
            if finished.all():
                break
    empty = torch.zeros(B, 0, dtype=torch.long, device=src.device)
    drawn = None if sampling is None else (torch.stack(uniforms, 1) if uniforms else torch.zeros(B, 0).double(),
                                           torch.stack(sampled_probs, 1) if sampled_probs else
                                           torch.zeros(B, 0).double())
    return Generation(torch.stack(tokens, 1) if tokens else empty,
                      torch.stack(log_probs, 1) if log_probs else empty.float(), steps, prefix, finished, sampling,
                      *(drawn or (None, None)))


def check_prompt_padding(model: Transformer, src: Tensor, key_mask: Tensor | None, padding: bool) -> None:
    """Decoder-only prompts: padding only on the left (the next token is read at the last position)."""
    if key_mask is not None:
        if key_mask.shape != src.shape or key_mask.dtype != torch.bool:
            raise ValueError(f"key_mask must be a boolean tensor shaped like the prompts {tuple(src.shape)}")
        if not bool(key_mask[:, -1].all()):
            raise ValueError("pad decoder-only prompts on the left: every prompt must end with a real token")
    elif padding and model.config.pad_id is not None and bool((src == model.config.pad_id).any()):
        raise ValueError("decoder-only prompts in one batch must have equal length (no padding), or pass "
                         "key_mask for left-padded prompts")


def grow_mask(mask: Tensor | None, size: int) -> Tensor | None:
    """Extend a (P, P) custom mask to (size, size); new positions keep full access (causal still applies)."""
    if mask is None:
        return None
    if mask.dim() != 2:
        raise ValueError("custom masks for generation must be (P, P)")
    grown = torch.ones(size, size, dtype=torch.bool, device=mask.device)
    n = min(size, mask.shape[0])
    grown[:n, :n] = mask[:n, :n]
    return grown

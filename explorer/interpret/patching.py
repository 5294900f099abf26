"""Activation patching: which heads, and which residual-stream positions, carry an answer.

Two runs of the same length: ``clean`` and ``corrupted``. The metric is the logit difference
``logit[a_clean] - logit[a_corrupted]`` at the last position. Patching copies one activation of the
clean run into the corrupted run and measures how much of the clean-minus-corrupted difference
comes back: share = (patched - corrupted) / (clean - corrupted), 1 = fully restored, 0 = no effect.

- heads: one head's output z (B, H, T, Dh, before W_o: what the head toggle zeroes), all positions,
  through the model's per-call ``head_hook``; one share per (layer, query head).
- residual: the residual stream at (layer l's input, position t); row L is the last layer's output
  (before a final norm).

Batched as the exact head sweep: the clean run's z and hidden states are captured once, the
corrupted run's hidden state at layer l is the shared prefix, and up to ``batch_size`` patched
variants run from layer l in one forward (``Decoder.run(first_layer=l)``).

Encoder-decoders: ``src=(clean_src, corrupted_src)`` are the two sources and clean / corrupted the
decoder inputs (often the same target prefix); the patched runs read the corrupted source's memory.
The decoder's self-attention heads go in ``heads``, its cross-attention heads in ``cross``.

Default answers: the clean run's top token and the corrupted run's top token. When both runs
predict the same token there is no difference to restore: ValueError (pass ``answers``).

Shapes: L decoder layers, H query heads, T decoder length, S source length, D model width.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..model import Transformer
from ..model.masks import causal_mask
from .sequence import as_row


@dataclass
class Patching:
    heads: Tensor  # (L, H) share of the clean-minus-corrupted metric restored by patching that head's z
    residual: Tensor  # (L + 1, T) same for the residual stream patched at (layer input l / final output, position t)
    clean: float  # metric on the clean run
    corrupted: float  # metric on the corrupted run
    answers: tuple[int, int]  # (clean answer token id, corrupted answer token id) the metric compares
    stack: str  # "decoder" (decoder-only, or the decoder of an encoder-decoder)
    cross: Tensor | None = None  # (L, H) the same for cross-attention heads (encoder-decoders), else None


@dataclass
class _Run:
    """One run of the decoder: what patched runs share or copy from it."""

    hidden: tuple[Tensor, ...]  # L+1 x (1, T, D): each layer's input, then the last layer's output
    z: dict[tuple[str, int], Tensor]  # (kind, layer) -> (1, H, T, Dh) head outputs
    memory: Tensor | None  # (1, S, D) encoder output
    src_key_mask: Tensor | None  # (1, S) True = real source token
    logits: Tensor  # (V,) at the last position, on the CPU


def _run(model: Transformer, tokens: Tensor, src: Tensor | None) -> _Run:
    """Forward with a head hook that keeps every decoder (and cross) head's z."""
    z: dict[tuple[str, int], Tensor] = {}

    def keep(kind: str, layer: int, heads: Tensor) -> Tensor:
        if kind != "encoder":
            z[(kind, layer)] = heads
        return heads

    if src is None:
        out = model(tokens, need_weights=False, head_hook=keep)
        return _Run(out.hidden_states.decoder, z, None, None, out.logits[0, -1].cpu())
    out = model(src, tokens, need_weights=False, head_hook=keep)
    src_key_mask = model.key_mask(src, True)
    return _Run(out.hidden_states.decoder, z, out.encoder_last_hidden_state, src_key_mask, out.logits[0, -1].cpu())


def _decoder_key_mask(model: Transformer, tokens: Tensor) -> Tensor | None:
    """The decoder's key mask as Transformer.forward builds it (an encoder-decoder's first column is the
    decoder start token, real even when it is the padding id)."""
    key_mask = model.key_mask(tokens, True)
    if key_mask is not None and model.config.arch == "encoder-decoder":
        key_mask = key_mask.clone()
        key_mask[:, 0] = True
    return key_mask


def _metric_from(model: Transformer, tokens: Tensor, base: _Run, layer: int, x: Tensor, answers: tuple[int, int],
                 hook=None) -> Tensor:
    """Run V variants x (V, T, D) from decoder layer ``layer`` on the corrupted context -> (V,) metrics."""
    V, T = x.shape[0], x.shape[1]
    key_mask = _decoder_key_mask(model, tokens)
    run = model.decoder.run(
        x, None if base.memory is None else base.memory.expand(V, -1, -1),
        key_mask=None if key_mask is None else key_mask.expand(V, -1),
        memory_key_mask=None if base.src_key_mask is None else base.src_key_mask.expand(V, -1),
        attn_mask=causal_mask(T, x.device), need_weights=False, first_layer=layer, head_hook=hook)
    logits = model.generator.logits(run.output[:, -1]).cpu()  # (V, vocab) at the last position
    return logits[:, answers[0]].double() - logits[:, answers[1]].double()  # float64 on the CPU (MPS has none)


def _chunks(n: int, size: int) -> list[range]:
    return [range(i, min(n, i + size)) for i in range(0, n, size)]


def _head_sweep(model: Transformer, tokens: Tensor, clean: _Run, corrupted: _Run, kind: str,
                answers: tuple[int, int], batch_size: int) -> Tensor:
    """(L, H) metrics with one head's z of ``kind`` taken from the clean run."""
    L, H = model.config.decoder_layers, model.config.n_heads
    out = torch.empty(L, H, dtype=torch.float64)
    for layer in range(L):
        for rows in _chunks(H, batch_size):
            heads = torch.tensor(list(rows))  # (V,) the head each variant patches

            def patch(k: str, i: int, z: Tensor, heads=heads, layer=layer) -> Tensor:
                if (k, i) != (kind, layer):
                    return z
                z = z.clone()
                variants = torch.arange(len(heads))
                z[variants, heads] = clean.z[(kind, layer)][0, heads]  # (V, T, Dh) clean z of each patched head
                return z

            x = corrupted.hidden[layer].expand(len(heads), -1, -1)  # (V, T, D) the shared corrupted prefix
            out[layer, heads] = _metric_from(model, tokens, corrupted, layer, x, answers, patch)
    return out


def _residual_sweep(model: Transformer, tokens: Tensor, clean: _Run, corrupted: _Run, answers: tuple[int, int],
                    batch_size: int) -> Tensor:
    """(L+1, T) metrics with the residual stream at (layer l input, position t) taken from the clean run."""
    L, T = model.config.decoder_layers, tokens.shape[1]
    out = torch.empty(L + 1, T, dtype=torch.float64)
    for layer in range(L + 1):
        for rows in _chunks(T, batch_size):
            positions = torch.tensor(list(rows))  # (V,) the position each variant patches
            x = corrupted.hidden[layer].repeat(len(positions), 1, 1)  # (V, T, D)
            x[torch.arange(len(positions)), positions] = clean.hidden[layer][0, positions]
            out[layer, positions] = _metric_from(model, tokens, corrupted, layer, x, answers)
    return out


def default_answers(clean_logits: Tensor, corrupted_logits: Tensor) -> tuple[int, int]:
    """(clean run's top token, corrupted run's top token); ValueError when they are the same token."""
    a, b = int(clean_logits.argmax()), int(corrupted_logits.argmax())
    if a == b:
        raise ValueError(f"both runs predict the same next token (id {a}), so there is no difference to restore; "
                         "pass answers=(clean answer id, corrupted answer id)")
    return a, b


@torch.no_grad()
def activation_patching(model: Transformer, clean: Tensor, corrupted: Tensor, *,
                        answers: tuple[int, int] | None = None, src: tuple[Tensor, Tensor] | None = None,
                        batch_size: int = 64) -> Patching:
    """Patch every decoder head's z and every residual (layer, position) from clean into corrupted."""
    clean_ids, corrupted_ids = as_row(clean, "clean"), as_row(corrupted, "corrupted")
    if clean_ids.shape[1] != corrupted_ids.shape[1]:
        raise ValueError(f"clean and corrupted must have the same number of tokens: clean has {clean_ids.shape[1]}, "
                         f"corrupted has {corrupted_ids.shape[1]}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    arch = model.config.arch
    if arch == "encoder" or model.generator is None:
        raise ValueError("activation patching needs a language model (a decoder with an LM head)")
    if (arch == "encoder-decoder") != (src is not None):
        raise ValueError("an encoder-decoder needs src=(clean source, corrupted source); a decoder-only model "
                         "takes no src")
    if src is not None:
        clean_src, corrupted_src = as_row(src[0], "clean source"), as_row(src[1], "corrupted source")
    device = model.device
    clean_run = _run(model, clean_ids.to(device), None if src is None else clean_src.to(device))
    corrupted_ids = corrupted_ids.to(device)
    corrupted_run = _run(model, corrupted_ids, None if src is None else corrupted_src.to(device))
    if answers is None:
        answers = default_answers(clean_run.logits, corrupted_run.logits)
    answers = (int(answers[0]), int(answers[1]))
    for a in answers:
        if not 0 <= a < clean_run.logits.shape[-1]:
            raise ValueError(f"answer token id {a} is outside the vocabulary (0..{clean_run.logits.shape[-1] - 1})")
    clean_metric = float(clean_run.logits[answers[0]].double() - clean_run.logits[answers[1]].double())
    corrupted_metric = float(corrupted_run.logits[answers[0]].double() - corrupted_run.logits[answers[1]].double())
    if abs(clean_metric - corrupted_metric) < 1e-6:
        raise ValueError(f"the metric is the same on both runs ({clean_metric:.4g}): nothing to restore")

    def share(metric: Tensor) -> Tensor:
        return ((metric - corrupted_metric) / (clean_metric - corrupted_metric)).float()  # divided in float64

    heads = share(_head_sweep(model, corrupted_ids, clean_run, corrupted_run, "decoder", answers, batch_size))
    cross = (share(_head_sweep(model, corrupted_ids, clean_run, corrupted_run, "cross", answers, batch_size))
             if arch == "encoder-decoder" else None)
    residual = share(_residual_sweep(model, corrupted_ids, clean_run, corrupted_run, answers, batch_size))
    return Patching(heads, residual, clean_metric, corrupted_metric, answers, "decoder", cross)

"""Logit lens: read every layer's residual stream through the model's own unembedding.

For a language model (decoder-only, or the decoder of an encoder-decoder) the forward pass returns
``hidden_states``: the embeddings, then each layer's output. The lens sends each of these L+1 states
through exactly what the model applies after its last layer (:func:`unembed`: the decoder's final
norm, if it has one, then the LM head), so the last layer's lens *is* the model's output and the
earlier ones show what the model would predict if it stopped there.

"Final norm" by architecture: a pre-norm stack ends with a LayerNorm that the lens applies to every
layer. A post-norm layer ends with its own LayerNorm, so every layer's output is already normalised
and the model applies nothing between the last layer and the LM head; neither does the lens (the
embeddings, layer 0, then go in un-normalised, as the model would hand them to its head).

Shapes: B batch, L layers, T length (decoder side), D model width, V vocabulary.

    unembed(model, (..., D)) -> (..., V)
    lens_logits(model, L+1 x (B, T, D)) -> (L+1, B, T, V)
    logit_lens(model, ids (B, T) | (T,), tgt=None) -> LogitLens of (L+1, B, T) tensors
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ..model import Transformer


def unembed(model: Transformer, hidden: Tensor) -> Tensor:
    """(..., D) residual stream -> (..., V) logits, as the model computes them after its last layer.

    The one place that knows the model's final norm and LM head: adapt it here when the core changes.
    """
    if model.decoder is None or model.generator is None:
        raise ValueError("the logit lens needs a language model (a decoder with an LM head); "
                         "this is an encoder-only model")
    norm = model.decoder.norm  # None for post-norm stacks (their layers end with a norm) unless final_norm
    return model.generator.logits(norm(hidden) if norm is not None else hidden)  # output_scale (T5) included


def lens_logits(model: Transformer, hidden_states: Sequence[Tensor]) -> Tensor:
    """L+1 hidden states (B, T, D) -> (L+1, B, T, V) logits. Holds them all: use on small vocabularies."""
    return torch.stack([unembed(model, h) for h in hidden_states])


@dataclass
class LogitLens:
    top_ids: Tensor  # (L+1, B, T) each layer's most likely next token
    top_probs: Tensor  # (L+1, B, T) its probability under that layer's lens
    final_ids: Tensor  # (B, T) the model's own prediction (argmax of its logits)
    final_probs: Tensor  # (L+1, B, T) probability each layer's lens gives the model's prediction
    final_rank: Tensor  # (L+1, B, T) rank of the model's prediction in each layer (0 = top)
    logits: Tensor  # (B, T, V) the model's own logits, for reference


def decoder_run(model: Transformer, ids: Tensor, tgt: Tensor | None = None, **forward: Any):
    """Run the model; -> (decoder hidden states L+1 x (B, T, D), logits (B, T, V)).

    Decoder-only: ``ids`` is the sequence. Encoder-decoder: ``ids`` is the source, ``tgt`` the
    decoder input (required). ``forward`` goes to the model (padding, causal, attn_mask, head_mask).
    """
    if ids.dim() == 1:
        ids = ids[None]  # (1, T)
    if tgt is not None and tgt.dim() == 1:
        tgt = tgt[None]
    arch = model.config.arch
    if arch == "encoder":
        raise ValueError("the logit lens needs a language model; this is an encoder-only model")
    if arch == "encoder-decoder" and tgt is None:
        raise ValueError("an encoder-decoder model needs the decoder input tgt for the logit lens")
    if arch == "decoder" and tgt is not None:
        raise ValueError("a decoder-only model takes one sequence: pass it as ids")
    out = model(ids, tgt, need_weights=False, **forward)
    return out.hidden_states.decoder, out.logits


@torch.no_grad()
def logit_lens(model: Transformer, ids: Tensor, tgt: Tensor | None = None, *, padding: bool = True,
               causal: bool = True, attn_mask: Tensor | None = None,
               head_mask: Mapping[str, Any] | None = None) -> LogitLens:
    """Top token, its probability and the rank of the model's final prediction, per layer and position.

    One layer's (B, T, V) logits at a time, so large vocabularies do not hold L+1 copies.
    """
    hidden, logits = decoder_run(model, ids, tgt, padding=padding, causal=causal, attn_mask=attn_mask,
                                 head_mask=head_mask)
    final = logits.argmax(-1)  # (B, T)
    top_ids, top_probs, final_probs, final_rank = [], [], [], []
    for h in hidden:
        layer_logits = unembed(model, h).float()  # (B, T, V)
        probs = layer_logits.softmax(-1)
        p, i = probs.max(-1)  # (B, T)
        top_ids.append(i)
        top_probs.append(p)
        final_probs.append(probs.gather(-1, final[..., None])[..., 0])
        final_logit = layer_logits.gather(-1, final[..., None])  # (B, T, 1)
        final_rank.append((layer_logits > final_logit).sum(-1))  # tokens strictly more likely
    return LogitLens(torch.stack(top_ids), torch.stack(top_probs), final, torch.stack(final_probs),
                     torch.stack(final_rank), logits)

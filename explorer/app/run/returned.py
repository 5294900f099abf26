"""What a Run keeps of the model's returns: the attention on the CPU (float16 for long inputs, so a 1,024-token run
fits), the masks the model applied at their full (B, Tq, Tk) size, and the norms of the values each head writes.

Shapes: B sentences, H heads, Tq query / Tk key length, S source length.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ...checkpoints import LoadedModel
from ...interpret.head_computation import block_sites
from ...interpret.value_weighted import value_norms
from ...model import Record


FLOAT32_WEIGHTS_LIMIT = 64 * 1024**2  # bytes of one run's attention below which it is kept in float32


def weights_dtype(loaded: LoadedModel, batch: int, length: int) -> torch.dtype | None:
    """float16 for the returned attention when a run's weights in float32 would pass FLOAT32_WEIGHTS_LIMIT (1,024
    tokens on GPT-2 small: 604 MB -> 302 MB); short inputs keep float32, so small views hover exact values."""
    c = loaded.config
    heads = (c.encoder_layers + 2 * c.decoder_layers) * c.n_heads
    return torch.float16 if 4 * batch * heads * length * length > FLOAT32_WEIGHTS_LIMIT else None


def full_masks(out_masks: Any, attentions: dict[str, tuple[Tensor, ...]]) -> dict[str, Tensor]:
    """The model's broadcastable masks -> (B, Tq, Tk) per kind (all True where the model masked nothing)."""
    result = {}
    for kind, layers in attentions.items():
        B, _, Tq, Tk = layers[0].shape
        mask = getattr(out_masks, kind)
        full = torch.ones(B, Tq, Tk, dtype=torch.bool) if mask is None else mask[:, 0].cpu().expand(B, Tq, Tk)
        result[kind] = full.clone()
    return result


def values_record(view: Any = None) -> Record:
    """A record of the values (what value-weighted attention needs) and, given a fitted `view.View`, of its block's
    sites (what the Inside a head tab reads: run.captures); the others are neither kept nor computed."""
    return Record(only={"v", *(() if view is None else block_sites(view.kind, view.layer))})


def norms_of(loaded: LoadedModel, record: Record, kinds) -> dict[str, tuple[Tensor, ...]]:
    """kind -> per layer (B, H, S) value norms on the CPU (float32), for each attention kind of the run."""
    return {kind: tuple(n.float().cpu() for n in value_norms(loaded.model, record, kind)) for kind in kinds}


def on_cpu(attentions: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
    """The weights on the CPU, in the dtype they came back in (float16 for long inputs, see weights_dtype)."""
    return tuple(a.cpu() for a in attentions)

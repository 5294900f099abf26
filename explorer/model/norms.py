"""The two normalisations the model families use, chosen by `TransformerConfig.norm`.

Shapes: (..., D) -> (..., D), over the last (model width) dimension.

    "layernorm": (x - mean) / sqrt(var + eps) * gain + bias      (BERT, GPT-2, GPT-NeoX, the seeds)
    "rmsnorm":   x / sqrt(mean(x^2) + eps) * gain                (Llama, Mistral, Qwen2; T5's norm)
"""

from __future__ import annotations

from torch import nn


def make_norm(kind: str, width: int, eps: float) -> nn.Module:
    if kind == "layernorm":
        return nn.LayerNorm(width, eps=eps)
    if kind == "rmsnorm":
        return nn.RMSNorm(width, eps=eps)
    raise ValueError(f"unknown norm {kind!r}; use layernorm or rmsnorm")

"""Rotary position embedding (RoPE): queries and keys are rotated by an angle proportional to their
position, so q.k depends on how far apart the two tokens are, not where they are.

transformers' `rotate_half` layout: the rotating part of a head (its first R = rotary_dim
dimensions; R = Dh unless GPT-NeoX's partial rotary) is split into a first and a second half, and
dimension i of the first half turns with dimension i of the second half at frequency
inv_freq[i] = base^(-2i/R). The remaining Dh - R dimensions pass unchanged.

Shapes: B batch, H heads, T length, Dh head width, R rotary width.
    rotary_tables(positions (B|1, T), config) -> RotaryTables(cos, sin), each (B|1, 1, T, R)
    apply_rotary(x (B, H, T, Dh), tables)    -> (B, H, T, Dh)

Scaling (`config.rope_scaling`): "linear" divides every frequency by `factor` (positions squeezed);
"llama3" divides only the low frequencies, blending smoothly between the two bands (Llama 3.1).
Everything is computed from the config at each call: no buffer, nothing to load or to keep in sync.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

from .config import TransformerConfig


class RotaryTables(NamedTuple):
    cos: Tensor  # (B|1, 1, T, R)
    sin: Tensor  # (B|1, 1, T, R)


def inverse_frequencies(config: TransformerConfig, device: torch.device | str | None = None) -> Tensor:
    """(R/2,) float32 angular frequency of each rotating pair, after rope_scaling."""
    R = config.rotary_dim
    inv_freq = 1.0 / (config.pos_base ** (torch.arange(0, R, 2, dtype=torch.float32, device=device) / R))
    scaling = config.rope_scaling
    if scaling is None:
        return inv_freq
    if scaling["rope_type"] == "linear":
        return inv_freq / scaling["factor"]
    return llama3_frequencies(inv_freq, scaling)


def llama3_frequencies(inv_freq: Tensor, scaling: dict) -> Tensor:
    """Llama 3.1: wavelengths above original_max/low_freq_factor slow down by `factor`, those below
    original_max/high_freq_factor stay, and the band between interpolates (transformers' formula)."""
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_context = scaling["original_max_position_embeddings"]
    low_freq_wavelen, high_freq_wavelen = old_context / low, old_context / high
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth = (old_context / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    is_medium = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium, smoothed, scaled)


def rotary_tables(positions: Tensor, config: TransformerConfig) -> RotaryTables:
    """cos and sin of every (position, dimension) angle; both halves of a head share the frequencies."""
    inv_freq = inverse_frequencies(config, positions.device)
    angles = positions[..., None].float() * inv_freq  # (B|1, T, R/2)
    angles = torch.cat([angles, angles], dim=-1)[:, None]  # (B|1, 1, T, R): same angle for i and i + R/2
    return RotaryTables(angles.cos(), angles.sin())


def rotate_half(x: Tensor) -> Tensor:
    """(..., R): [x1, x2] -> [-x2, x1], the 90-degree turn of each (i, i + R/2) pair."""
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def apply_rotary(x: Tensor, tables: RotaryTables) -> Tensor:
    """Rotate the first R dimensions of every head of x (B, H, T, Dh) by its position's angles."""
    R = tables.cos.shape[-1]
    if R == x.shape[-1]:
        return x * tables.cos + rotate_half(x) * tables.sin
    turning, passing = x[..., :R], x[..., R:]
    return torch.cat([turning * tables.cos + rotate_half(turning) * tables.sin, passing], dim=-1)

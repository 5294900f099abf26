"""Positional information: the sinusoidal table, learned position embeddings, and the
embedding layer that sums tokens, positions and (BERT) token types.

Shapes: B batch, T length, D model width.
    sinusoidal_table(T, D)   -> (T, D)   PE(pos, 2i) = sin(pos / base^(2i/D)),
                                         PE(pos, 2i+1) = cos(pos / base^(2i/D))
    Embeddings(ids (B, T))   -> (B, T, D)
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def sinusoidal_table(length: int, d_model: int, base: float = 10000.0) -> Tensor:
    """(length, d_model) float32 table; works for odd d_model (the last column is a sine)."""
    position = torch.arange(length, dtype=torch.float64)[:, None]  # (T, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(D/2),)
    angle = position / base ** (two_i / d_model)  # (T, ceil(D/2)); float64 keeps long tables exact
    table = torch.zeros(length, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table.float()


class Embeddings(nn.Module):
    """Token embedding (+ x sqrt(D)) + positions (+ token types) -> (LayerNorm) -> dropout."""

    def __init__(self, vocab_size: int, d_model: int, *, max_len: int, positional: str, pos_base: float,
                 scale: bool, type_vocab_size: int, norm: bool, eps: float, dropout: float, pad_id: int):
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        self.scale = math.sqrt(d_model) if scale else 1.0
        self.token = nn.Embedding(vocab_size, d_model)
        self.positional = positional
        if positional == "learned":
            self.position = nn.Embedding(max_len, d_model)
        elif positional == "sinusoidal":
            # A buffer, not a parameter; not saved in checkpoints because the formula rebuilds it.
            self.register_buffer("position_table", sinusoidal_table(max_len, d_model, pos_base), persistent=False)
        self.token_type = nn.Embedding(type_vocab_size, d_model) if type_vocab_size else None
        self.norm = nn.LayerNorm(d_model, eps=eps) if norm else None
        self.dropout = nn.Dropout(dropout)

    def position_matrix(self) -> Tensor:
        """(max_len, D) the positional signal added at each position (zeros for 'none')."""
        if self.positional == "learned":
            return self.position.weight
        if self.positional == "sinusoidal":
            return self.position_table
        return torch.zeros(self.max_len, self.d_model, device=self.token.weight.device)

    def forward(self, ids: Tensor, token_type_ids: Tensor | None = None, start: int = 0) -> Tensor:
        """ids (B, T) -> (B, T, D). `start` offsets positions (incremental decoding)."""
        length = ids.shape[1]
        if start + length > self.max_len:
            raise ValueError(f"sequence of {start + length} tokens is longer than max_len={self.max_len}")
        x = self.token(ids)  # (B, T, D)
        if self.scale != 1.0:
            x = x * self.scale
        if self.positional == "learned":
            x = x + self.position.weight[start:start + length]  # (T, D) broadcast over B
        elif self.positional == "sinusoidal":
            x = x + self.position_table[start:start + length]
        if self.token_type is not None:
            types = torch.zeros_like(ids) if token_type_ids is None else token_type_ids
            x = x + self.token_type(types)
        if self.norm is not None:
            x = self.norm(x)
        return self.dropout(x)

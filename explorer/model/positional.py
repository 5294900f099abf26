"""Positional information added to the embeddings: the sinusoidal table, learned position embeddings,
the position of each token, and the embedding layer that sums tokens, positions and (BERT) token types.
(Rotary positions act on queries and keys inside attention instead: see rotary.py.)

Shapes: B batch, T length, D model width.
    sinusoidal_table(T, D)      -> (T, D)   numpy float64, from explorer.sinusoid (one table for the model and
                                            the figures); Embeddings keeps it as a float32 buffer
    position_ids(key_mask, T)   -> (B|1, T) position of each token; left padding shifts the real tokens to 0
    Embeddings(ids (B, T), positions (B|1, T)) -> (B, T, D)
    Embeddings(ids, token_embeds=(B, T, D))      the same with the token embedding given (before the scale)
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ..sinusoid import sinusoidal_table
from .norms import make_norm
from .record import RecordSlot


def position_ids(key_mask: Tensor | None, length: int, device: torch.device | str | None = None) -> Tensor:
    """Position of each token: (1, T) 0..T-1, or (B, T) counted from each row's first real token.

    With left padding (a row starting with masked keys) the first real token gets position 0, as in an
    unpadded run; the padding before it is clamped to 0 too (it is masked as a key, so it never changes
    a real token). Right padding keeps 0..T-1, so real tokens are unaffected either way.
    """
    positions = torch.arange(length, device=device if key_mask is None else key_mask.device)[None]  # (1, T)
    if key_mask is None:
        return positions
    first_real = key_mask.long().argmax(dim=-1, keepdim=True)  # (B, 1); 0 for a row without real tokens
    return (positions - first_real).clamp(min=0)  # (B, T)


class Embeddings(nn.Module):
    """Token embedding (+ x sqrt(D)) + positions (+ token types) -> (norm) -> dropout.

    A learned table has `offset` unused rows before position 0 (BART: 2; RoBERTa: padding_idx + 1)."""

    def __init__(self, vocab_size: int, d_model: int, *, max_len: int, positional: str, pos_base: float,
                 scale: bool, type_vocab_size: int, norm: str | None, eps: float, dropout: float,
                 offset: int = 0, layout: str = "interleaved"):
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        self.offset = offset
        self.scale = math.sqrt(d_model) if scale else 1.0
        self.token = nn.Embedding(vocab_size, d_model)
        self.positional = positional
        if positional == "learned":
            self.position = nn.Embedding(max_len + offset, d_model)
        elif positional == "sinusoidal":
            # A buffer, not a parameter; not saved in checkpoints because the formula rebuilds it. from_numpy is on
            # the CPU whatever the default device: a model built on "meta" (shapes only) still gets the table.
            table = torch.from_numpy(sinusoidal_table(max_len, d_model, pos_base, layout)).float()  # (T, D)
            self.register_buffer("position_table", table, persistent=False)
        self.token_type = nn.Embedding(type_vocab_size, d_model) if type_vocab_size else None
        self.norm = make_norm(norm, d_model, eps) if norm else None
        self.dropout = nn.Dropout(dropout)

    def position_matrix(self) -> Tensor:
        """(max_len, D) the positional signal added at positions 0.. (zeros for 'rotary', 'relative', 'none')."""
        if self.positional == "learned":
            return self.position.weight[self.offset:]
        if self.positional == "sinusoidal":
            return self.position_table
        return torch.zeros(self.max_len, self.d_model, device=self.token.weight.device)

    def forward(self, ids: Tensor, token_type_ids: Tensor | None = None, positions: Tensor | None = None,
                record: RecordSlot | None = None, token_embeds: Tensor | None = None) -> Tensor:
        """ids (B, T), positions (B|1, T) (default 0..T-1) -> (B, T, D). A RecordSlot of the stack receives
        "embed" (the result before dropout) and "embed.scale" (the embedding norm's divisor, if it has one).

        token_embeds (B, T, D), per call: used in place of `self.token(ids)` (what the token table gives,
        before the x sqrt(D) scale, positions and token types), so gradients can be taken with respect to
        the token embeddings without a hook on this module (explorer.interpret.attribution)."""
        length = ids.shape[1]
        if length > self.max_len:
            raise ValueError(f"sequence of {length} tokens is longer than max_len={self.max_len}")
        if token_embeds is None:
            x = self.token(ids)  # (B, T, D)
        elif tuple(token_embeds.shape) != (*ids.shape, self.d_model):
            raise ValueError(f"token_embeds must be (B, T, D)={(*ids.shape, self.d_model)} like the ids, got "
                             f"{tuple(token_embeds.shape)}")
        else:
            x = token_embeds  # (B, T, D)
        if self.scale != 1.0:
            x = x * self.scale
        if self.positional in ("learned", "sinusoidal"):
            table = self.position_matrix()  # (max_len, D) from position 0 on
            x = x + (table[:length] if positions is None else table[positions])  # (T, D) or (B|1, T, D)
        if self.token_type is not None:
            types = torch.zeros_like(ids) if token_type_ids is None else token_type_ids
            x = x + self.token_type(types)
        if self.norm is not None:
            if record is not None:
                record.put_scale("embed.scale", self.norm, x)
            x = self.norm(x)
        if record is not None:
            record["embed"] = x
        return self.dropout(x)

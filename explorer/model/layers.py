"""One encoder layer and one decoder layer, built from attention, a feed-forward block and
residual sublayer connections (pre-norm or post-norm).

Shapes: B batch, H heads, T target length, S source length, D model width.

    EncoderLayer(x (B, T, D), mask, head_mask)            -> x (B, T, D), self weights (B, H, T, T)
    DecoderLayer(x (B, T, D), memory (B, S, D) | None, ...) -> x, self weights, cross weights (B, H, T, S)

Submodule names follow torch.nn.TransformerEncoderLayer where they can (`self_attn`,
`linear1`/`linear2` inside `feed_forward`), so weight import stays a readable copy.
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from .attention import MultiHeadAttention
from .config import TransformerConfig


class FeedForward(nn.Module):
    """Position-wise Linear(D, d_ff) -> activation -> dropout -> Linear(d_ff, D)."""

    def __init__(self, d_model: int, d_ff: int, activation: str, dropout: float):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.activation = F.gelu if activation == "gelu" else F.relu
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(self.activation(self.linear1(x))))


class SublayerConnection(nn.Module):
    """The Annotated Transformer's residual connection, in both norm positions.

    pre-norm:  x + dropout(sublayer(norm(x)))      (`enter` normalises, `exit` adds)
    post-norm: norm(x + dropout(sublayer(x)))      (`enter` is the identity, `exit` adds and normalises)
    Split in two calls so attention can hand back its weights without any state on the module.
    """

    def __init__(self, d_model: int, dropout: float, norm_first: bool, eps: float):
        super().__init__()
        self.norm = nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def enter(self, x: Tensor) -> Tensor:
        return self.norm(x) if self.norm_first else x

    def exit(self, x: Tensor, sublayer_out: Tensor) -> Tensor:
        y = x + self.dropout(sublayer_out)
        return y if self.norm_first else self.norm(y)


def make_attention(config: TransformerConfig) -> MultiHeadAttention:
    return MultiHeadAttention(config.d_model, config.n_heads, config.resolved_head_dim,
                              config.resolved_attention_dropout, config.bias)


def make_sublayer(config: TransformerConfig) -> SublayerConnection:
    return SublayerConnection(config.d_model, config.dropout, config.norm_first, config.layer_norm_eps)


class EncoderLayer(nn.Module):
    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.self_attn = make_attention(config)
        self.feed_forward = FeedForward(config.d_model, config.d_ff, config.activation, config.resolved_ffn_dropout)
        self.attn_sublayer = make_sublayer(config)
        self.ff_sublayer = make_sublayer(config)

    def forward(self, x: Tensor, mask: Tensor | None = None, head_mask: Tensor | None = None,
                need_weights: bool = True) -> tuple[Tensor, Tensor | None]:
        attn_out, weights = self.self_attn(self.attn_sublayer.enter(x), mask=mask, head_mask=head_mask,
                                           need_weights=need_weights)
        x = self.attn_sublayer.exit(x, attn_out)
        x = self.ff_sublayer.exit(x, self.feed_forward(self.ff_sublayer.enter(x)))
        return x, weights


class DecoderLayer(nn.Module):
    """Masked self-attention, then (encoder-decoder only) cross-attention over the memory, then FF."""

    def __init__(self, config: TransformerConfig, cross_attention: bool):
        super().__init__()
        self.self_attn = make_attention(config)
        self.self_sublayer = make_sublayer(config)
        self.cross_attn = make_attention(config) if cross_attention else None
        self.cross_sublayer = make_sublayer(config) if cross_attention else None
        self.feed_forward = FeedForward(config.d_model, config.d_ff, config.activation, config.resolved_ffn_dropout)
        self.ff_sublayer = make_sublayer(config)

    def forward(self, x: Tensor, memory: Tensor | None = None, self_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, head_mask: Tensor | None = None,
                cross_head_mask: Tensor | None = None,
                need_weights: bool = True) -> tuple[Tensor, Tensor | None, Tensor | None]:
        attn_out, self_weights = self.self_attn(self.self_sublayer.enter(x), mask=self_mask, head_mask=head_mask,
                                                need_weights=need_weights)
        x = self.self_sublayer.exit(x, attn_out)
        cross_weights = None
        if self.cross_attn is not None:
            if memory is None:
                raise ValueError("this decoder layer has cross-attention and needs the encoder memory")
            cross_out, cross_weights = self.cross_attn(self.cross_sublayer.enter(x), memory, mask=memory_mask,
                                                       head_mask=cross_head_mask, need_weights=need_weights)
            x = self.cross_sublayer.exit(x, cross_out)
        x = self.ff_sublayer.exit(x, self.feed_forward(self.ff_sublayer.enter(x)))
        return x, self_weights, cross_weights

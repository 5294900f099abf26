"""Multi-head scaled dot-product attention that returns every head's weights.

Shapes: B batch, H heads, T query length, S key length, D model width, Dh head width.

    query x (B, T, D), memory (B, S, D) or None (self-attention)
    mask        boolean, True = may attend, broadcastable to (B, H, T, S), usually (B|1, 1, T|1, S)
    head_mask   (H,) or (B, H), 1 = head on; multiplies each head's output before W_o
    returns     output (B, T, D), weights (B, H, T, S) or None on the fast path

Two paths, one result: the hand-written softmax path returns the weights; when they are not
needed, `torch.nn.functional.scaled_dot_product_attention` computes the same output faster.
A query row whose keys are all masked gets weights 0 and output 0 on both paths.
Nothing is stored on the module during forward: one model serves many users at once.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, head_dim: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = head_dim
        inner = n_heads * head_dim
        # Packed [W_q; W_k; W_v] as in torch.nn.MultiheadAttention: head h owns rows h*Dh:(h+1)*Dh
        # of each third, so importing torch weights is a copy.
        self.in_proj = nn.Linear(d_model, 3 * inner, bias=bias)
        self.out_proj = nn.Linear(inner, d_model, bias=bias)  # W_o
        self.dropout = dropout

    def project(self, x: Tensor, memory: Tensor | None) -> tuple[Tensor, Tensor, Tensor]:
        """-> q (B, H, T, Dh), k and v (B, H, S, Dh)."""
        B, T, _ = x.shape
        inner = self.n_heads * self.head_dim
        if memory is None:
            qkv = self.in_proj(x).view(B, T, 3, self.n_heads, self.head_dim)  # (B, T, 3, H, Dh)
            q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # 3 x (B, H, T, Dh)
            return q, k, v
        weight, bias = self.in_proj.weight, self.in_proj.bias
        q = F.linear(x, weight[:inner], None if bias is None else bias[:inner])
        kv = F.linear(memory, weight[inner:], None if bias is None else bias[inner:])
        S = memory.shape[1]
        q = q.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, Dh)
        k, v = kv.view(B, S, 2, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)  # 2 x (B, H, S, Dh)
        return q, k, v

    def forward(self, x: Tensor, memory: Tensor | None = None, *, mask: Tensor | None = None,
                head_mask: Tensor | None = None, need_weights: bool = True) -> tuple[Tensor, Tensor | None]:
        q, k, v = self.project(x, memory)
        dropout = self.dropout if self.training else 0.0
        if need_weights:
            heads, weights = attend_with_weights(q, k, v, mask, dropout)
        else:
            heads, weights = attend_fast(q, k, v, mask, dropout), None
        if head_mask is not None:
            heads = heads * head_gate(head_mask, heads)
        B, H, T, Dh = heads.shape
        merged = heads.transpose(1, 2).reshape(B, T, H * Dh)  # (B, T, H*Dh) concatenated heads
        return self.out_proj(merged), weights


def head_gate(head_mask: Tensor, heads: Tensor) -> Tensor:
    """(H,) or (B, H) head mask -> (1|B, H, 1, 1) multiplier in the dtype of `heads`.

    Multiplying (rather than indexing) keeps the mask differentiable, which the gradient
    head-importance estimate needs; x * 1.0 == x exactly, so an all-ones mask changes nothing.
    """
    H = heads.shape[1]
    if head_mask.shape[-1] != H or head_mask.dim() not in (1, 2):
        raise ValueError(f"head mask for one layer must be (H,) or (B, H) with H={H}, got {tuple(head_mask.shape)}")
    gate = head_mask.to(device=heads.device, dtype=heads.dtype)
    return gate.view(-1, H, 1, 1) if gate.dim() == 2 else gate.view(1, H, 1, 1)


def attend_with_weights(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None,
                        dropout: float = 0.0) -> tuple[Tensor, Tensor]:
    """Hand-written softmax(q k^T / sqrt(Dh)) v. -> heads (B, H, T, Dh), weights (B, H, T, S)."""
    scores = (q * (1.0 / math.sqrt(q.shape[-1]))) @ k.transpose(-2, -1)  # (B, H, T, S)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = scores.softmax(dim=-1)
    if mask is not None:
        # Exactly 0 on masked keys; a fully masked row (softmax of equal values) becomes all 0.
        weights = weights.masked_fill(~mask, 0.0)
    used = F.dropout(weights, dropout) if dropout else weights
    return used @ v, weights  # (B, H, T, Dh)


def attend_fast(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, dropout: float = 0.0) -> Tensor:
    """Same output as `attend_with_weights` via torch's fused kernel. -> (B, H, T, Dh)."""
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout)
    # Rows with no allowed key: let the kernel see all keys (no NaN in forward or backward on any
    # backend), then zero their output, matching the weights path.
    has_key = mask.any(dim=-1, keepdim=True)  # (B|1, 1, T|1, 1)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask | ~has_key, dropout_p=dropout)
    return out.masked_fill(~has_key, 0.0)

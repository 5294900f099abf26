"""Each head's gradient at its own q / k / v input, from one ordinary backward pass: what the gradient pass contracts
with the nodes' differences, without running the block on a per-head copy of the stream.

A head's query reads norm(x) W_Q^h (x the stream before the block's norm, the same for every head while nothing is
patched), so the gradient of the metric at head h's own copy of x is the norm's backward of (dq_h W_Q^h), dq_h the
gradient at head h's query before the rotary turn (the turn is a rotation: its backward turns back by the same angle).
The model's own backward sums these over the heads; here they are kept apart, one (H, B, T, D) tensor per site, head
first (the layout the product gives, and the one the gradient pass contracts without a transposed copy):

    head_input_grads(grad (B, H, T, Dh), weight (H Dh, D), norm, x (B, T, D), rotary) -> (H, B, T, D)

The norms are torch's LayerNorm and RMSNorm (explorer.model.norms), their backward written out (linear in the
incoming gradient once x is known): the gain folded into the projection's rows and 1 / sigma into the (narrow) head
gradient, the mean taken from those rows' means, so the wide (H, B, T, D) result is written once and corrected in
place; `norm` None is the identity (a model without the encoder's final norm).

Shapes: B rows, H heads, T length (keys: S), Dh head width, D model width, R rotary width.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ...model.rotary import RotaryTables, apply_rotary


def unrotate(grad: Tensor, rotary: RotaryTables | None) -> Tensor:
    """The gradient at q (or k) after the rotary turn -> before it: the rotation's transpose, the turn backwards."""
    if rotary is None:
        return grad
    return apply_rotary(grad, RotaryTables(rotary.cos, -rotary.sin))


def norm_statistics(norm: nn.Module, x: Tensor) -> tuple[Tensor, Tensor]:
    """x (B, T, D) a norm's input -> (its scale sigma (B, T, 1), the normalised x-hat (B, T, D)) as the norm saw them."""
    x = x.float()
    if isinstance(norm, nn.LayerNorm):
        mean = x.mean(-1, keepdim=True)
        sigma = (x.var(-1, unbiased=False, keepdim=True) + norm.eps).sqrt()
        return sigma, (x - mean) / sigma
    if isinstance(norm, nn.RMSNorm):
        eps = norm.eps if norm.eps is not None else torch.finfo(x.dtype).eps
        rms = (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()
        return rms, x / rms
    raise TypeError(f"no backward written for the norm {type(norm).__name__}")


def head_input_grads(grad: Tensor, weight: Tensor, norm: nn.Module | None, x: Tensor,
                     rotary: RotaryTables | None = None) -> Tensor:
    """grad (B, H, T, Dh) at a projection's per-head output (after rotary for q and k), weight (H Dh, D) its rows,
    -> (H, B, T, D): the gradient at each head's own copy of x, the input before the norm.

    For a LayerNorm, with g' = gain * (dq_h W^h): dx_h = (g' - mean(g') - x-hat mean(g' x-hat)) / sigma (RMSNorm: no
    mean(g') term)."""
    B, H, T, Dh = grad.shape
    per_head = weight.view(H, Dh, -1).to(grad.dtype)  # (H Dh, D) -> (H, Dh, D)
    D = per_head.shape[-1]
    g = unrotate(grad, rotary)
    if norm is not None:
        sigma, hat = norm_statistics(norm, x)
        g = g / sigma.view(B, 1, T, 1).to(g.dtype)  # 1 / sigma on the narrow side
        if norm.weight is not None:
            per_head = per_head * norm.weight.to(g.dtype)  # the gain folded into the rows
    g = g.transpose(0, 1).reshape(H, B * T, Dh)
    out = torch.bmm(g, per_head)  # (H, B T, D)
    if norm is None:
        return out.view(H, B, T, D)
    hat = hat.reshape(B * T, D).to(out.dtype)
    along = torch.bmm(out.transpose(0, 1), hat.unsqueeze(-1))  # (B T, H, 1): sum over D of g' x-hat / sigma
    out.addcmul_(hat, along.transpose(0, 1), value=-1.0 / D)
    if isinstance(norm, nn.LayerNorm):
        out.sub_(torch.bmm(g, per_head.mean(-1, keepdim=True)))  # (H, B T, 1): mean(g') / sigma, from the rows' means
    return out.view(H, B, T, D)

"""Each head's gradient at its own q / k / v input, from one ordinary backward pass: what the gradient pass contracts
with the nodes' differences, without running the block on a per-head copy of the stream.

A head's query reads norm(x) W_Q^h (x the stream before the block's norm, the same for every head while nothing is
patched), so the gradient of the metric at head h's own copy of x is the norm's backward of (dq_h W_Q^h), dq_h the
gradient at head h's query before the rotary turn (the turn is a rotation: its backward turns back by the same angle).
The model's own backward sums these over the heads; here they are kept apart, one (B, T, H, D) tensor per site:

    head_input_grads(grad (B, H, T, Dh), weight (H Dh, D), norm, x (B, T, D), rotary) -> (B, T, H, D)

The norms are torch's LayerNorm and RMSNorm (explorer.model.norms), their backward written out (linear in the
incoming gradient once x is known); `norm` None is the identity (a model without the encoder's final norm).

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


def norm_backward(norm: nn.Module | None, x: Tensor, grad: Tensor) -> Tensor:
    """x (B, T, D) the norm's input, grad (B, T, H, D) at its output, one per head -> (B, T, H, D) at its input."""
    if norm is None:
        return grad
    x = x.float()
    gain = norm.weight if norm.weight is not None else torch.ones(x.shape[-1], dtype=x.dtype, device=x.device)
    g = grad * gain.to(grad.dtype)  # (B, T, H, D)
    if isinstance(norm, nn.LayerNorm):
        mean = x.mean(-1, keepdim=True)
        sigma = (x.var(-1, unbiased=False, keepdim=True) + norm.eps).sqrt()  # (B, T, 1)
        hat = ((x - mean) / sigma).unsqueeze(2)  # (B, T, 1, D)
        centred = g - g.mean(-1, keepdim=True)
        return (centred - hat * (g * hat).mean(-1, keepdim=True)) / sigma.unsqueeze(2)
    if isinstance(norm, nn.RMSNorm):
        eps = norm.eps if norm.eps is not None else torch.finfo(x.dtype).eps
        rms = (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()  # (B, T, 1)
        hat = (x / rms).unsqueeze(2)  # (B, T, 1, D)
        return (g - hat * (g * hat).mean(-1, keepdim=True)) / rms.unsqueeze(2)
    raise TypeError(f"no backward written for the norm {type(norm).__name__}")


def head_input_grads(grad: Tensor, weight: Tensor, norm: nn.Module | None, x: Tensor,
                     rotary: RotaryTables | None = None) -> Tensor:
    """grad (B, H, T, Dh) at a projection's per-head output (after rotary for q and k), weight (H Dh, D) its rows,
    -> (B, T, H, D): the gradient at each head's own copy of x, the input before the norm."""
    H, Dh = grad.shape[1], grad.shape[3]
    per_head = weight.view(H, Dh, -1)  # (H Dh, D) -> (H, Dh, D)
    normed = torch.einsum("bhte,hed->bthd", unrotate(grad, rotary), per_head.to(grad.dtype))  # (B, T, H, D)
    return norm_backward(norm, x, normed)

"""A group-lasso penalty on attention heads, so that heads which would share a role leave it to one.

One group per query head of every attention module: the head's rows of the value projection (W_v, when each
query head has its own key/value head) and its columns of the output projection (W_o) together, its OV circuit.
The penalty is the sum over groups of each group's L2 norm (Yuan & Lin 2006). Added to the loss (train.py's
--head-l1), its gradient pulls every head's OV weights toward 0 with the same strength whatever their size, while
the task's gradient grows with what a head already contributes: a head the task does not need goes to about 0,
and a role several heads would split tends to end in one (what the circuits of docs/circuits.md count).

The log shape (train.py's --head-l1-shape log) is concave in a head's norm n: tau log(1 + n / tau), whose pull
1 / (1 + n / tau) is the group lasso's near 0 and weaker the larger the head, so of two heads sharing a role the
smaller is pulled harder than the larger (a smooth stand-in for counting the heads alive; Candes et al. 2008's
reweighted L1).

Shapes: in_proj.weight ((H + 2 Hkv) Dh, D), W_v its last Hkv Dh rows; out_proj.weight (D, H Dh), head h owns
columns h Dh:(h+1) Dh. The penalty is a scalar tensor (0 for a model without attention).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..model.attention import MultiHeadAttention


def head_norms(attention: MultiHeadAttention) -> Tensor:
    """(H,) the L2 norm of each query head's OV weights (W_v rows when not shared by a group, and W_o columns)."""
    H, Hkv, Dh = attention.n_heads, attention.n_kv_heads, attention.head_dim
    w_o = attention.out_proj.weight.view(-1, H, Dh).transpose(0, 1).reshape(H, -1)  # (H, D Dh)
    squares = w_o.square().sum(-1)
    if Hkv == H:  # a key/value head shared by a group of query heads belongs to none of them alone
        w_v = attention.in_proj.weight[(H + Hkv) * Dh:].reshape(H, -1)  # (H, Dh D)
        squares = squares + w_v.square().sum(-1)
    return squares.sqrt()


SHAPES = ("lasso", "log")


def head_group_lasso(model: nn.Module, shape: str = "lasso", tau: float = 1.0) -> Tensor:
    """Sum over every attention module's heads of their OV weights' L2 norms n ("lasso"), or of tau log(1 + n / tau)
    ("log": concave, prefers one large head to several small ones)."""
    if shape not in SHAPES:
        raise ValueError(f"unknown penalty shape {shape!r}: one of {', '.join(SHAPES)}")
    if tau <= 0:
        raise ValueError(f"tau must be positive, not {tau}")
    total = torch.zeros(())
    for module in model.modules():
        if isinstance(module, MultiHeadAttention):
            norms = head_norms(module)
            total = total + (norms if shape == "lasso" else tau * torch.log1p(norms / tau)).sum()
    return total

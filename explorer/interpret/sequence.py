"""One sequence of token ids as the interpretation functions take it: (T,) or (1, T) -> (1, T)."""

from __future__ import annotations

import torch
from torch import Tensor


def as_row(ids: Tensor, name: str) -> Tensor:
    """(T,) or (1, T) ids -> (1, T); ValueError naming `name` for any other shape."""
    ids = torch.as_tensor(ids)
    if ids.dim() == 2 and ids.shape[0] == 1:
        ids = ids[0]
    if ids.dim() != 1:
        raise ValueError(f"{name} must be one sequence of token ids, (T,) or (1, T); got shape {tuple(ids.shape)}")
    return ids[None]  # (1, T)

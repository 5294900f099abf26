"""Rows of token ids of different lengths -> one padded (B, T) batch. One helper for training, the app and analysis."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def pad_rows(rows: Sequence[Sequence[int]], value: int, device: torch.device | str | None = None) -> Tensor:
    """(B, T) long tensor: each row followed by `value` up to the longest row's length T."""
    if not rows:
        raise ValueError("pad_rows needs at least one row")
    width = max(len(r) for r in rows)
    return torch.tensor([list(r) + [value] * (width - len(r)) for r in rows], dtype=torch.long, device=device)

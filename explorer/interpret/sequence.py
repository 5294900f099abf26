"""One sequence of token ids as the interpretation functions take it: (T,) or (1, T) -> (1, T), and the checks every
analysis of one sequence makes of its model and inputs."""

from __future__ import annotations

from typing import Any

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


def check_inputs(model: Any, what: str, tgt: Tensor | None, needs_tgt: bool) -> None:
    """ValueError unless the model is in eval mode (dropout would change every part at random) and `tgt` (an
    encoder-decoder's decoder input) is given exactly when `needs_tgt`. `what`: the analysis, for the message."""
    if model.training:
        raise ValueError(f"{what} needs the model in eval mode (model.eval()): dropout would change every part at "
                         "random")
    if needs_tgt and tgt is None:
        raise ValueError(f"an encoder-decoder needs the decoder input tgt: {what} reads its decoder")
    if model.config.arch != "encoder-decoder" and tgt is not None:
        raise ValueError("only an encoder-decoder takes tgt; pass the one sequence as ids")

"""One sequence of token ids as the interpretation functions take it: (T,) or (1, T) -> (1, T); a position in it and a
token id checked; and the checks every analysis of one sequence makes of its model and inputs. Each raises a
ValueError naming the bad value."""

from __future__ import annotations

import operator
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


def resolve_position(position: Any, length: int) -> int:
    """A position in a sequence of `length` tokens (negative: from the end) -> 0..length-1; ValueError outside."""
    if isinstance(position, bool) or not isinstance(position, int) or not -length <= position < length:
        raise ValueError(f"position {position!r} is outside the sequence of {length} tokens: use 0..{length - 1} "
                         f"(or -{length}..-1 from the end)")
    return position % length


def check_token(token: Any, vocab: int, name: str = "token") -> int:
    """A token id in 0..vocab-1 (an integer, not a bool) -> int; ValueError naming `name` otherwise."""
    try:
        index = operator.index(token)
    except TypeError:
        index = None
    if index is None or isinstance(token, bool):
        raise ValueError(f"{name} must be a token id (an integer), got {token!r}")
    if not 0 <= index < vocab:
        raise ValueError(f"{name} {token!r} is outside the vocabulary: ids are 0..{vocab - 1}")
    return index


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


def check_reading(model: Any, what: str, tgt: Tensor | None, missing: str) -> None:
    """`check_inputs` for an analysis of the model's output (its logits: the decoder's in an encoder-decoder), and
    ValueError for a model without an output head. `missing`: what there is not without one ("a logit to
    attribute")."""
    arch = model.config.arch
    check_inputs(model, what, tgt, needs_tgt=arch == "encoder-decoder")
    if arch == "encoder" and model.mlm is None and model.classifier is None:
        raise ValueError(f"this model has no output head (a bare encoder, e.g. a sentence-embedding model): "
                         f"there is no {missing}")

"""One sequence of token ids as the interpretation functions take it: (T,) or (1, T) -> (1, T); a position in it and a
token id checked, with a ValueError naming the bad value."""

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


def check_reading(model: Any, tgt: Tensor | None, missing: str) -> None:
    """ValueError unless the model has an output head and gets a decoder input exactly when it is an encoder-decoder.
    `missing`: what there is not without a head ("a logit to attribute")."""
    arch = model.config.arch
    if arch == "encoder" and model.mlm is None and model.classifier is None:
        raise ValueError(f"this model has no output head (a bare encoder, e.g. a sentence-embedding model): "
                         f"there is no {missing}")
    if arch == "encoder-decoder" and tgt is None:
        raise ValueError("an encoder-decoder needs the decoder input tgt: its logits are the decoder's")
    if arch != "encoder-decoder" and tgt is not None:
        raise ValueError("only an encoder-decoder takes tgt; pass the one sequence as ids")

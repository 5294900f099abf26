"""Attention masks: one convention everywhere inside `explorer`: boolean, True = may attend.

Shapes: B batch, T query length, S key length. Every helper returns a mask that broadcasts
against attention scores of shape (B, H, T, S):

- `padding_mask(ids, pad_id)`      -> (B, 1, 1, S)  keys that are real tokens
- `causal_mask(T)`                 -> (T, T)        lower triangle (look-ahead mask)
- `sliding_window_mask(T, w)`      -> (T, T)        keys at most w - 1 positions back (Mistral's window)
- `normalize_mask(mask)`           -> (B|1, 1, T, S) from (T, S), (B, T, S) or (B, 1, T, S)
- `combine_masks(a, b, ...)`       -> logical AND of the masks given (None = no restriction)

torch.nn uses the opposite convention for `key_padding_mask` (True = ignore); `from_torch_mask`
and `to_torch_key_padding_mask` are the only places that translate.
"""

from __future__ import annotations

import torch
from torch import Tensor


def padding_mask(ids: Tensor, pad_id: int) -> Tensor:
    """(B, S) token ids -> (B, 1, 1, S) boolean, True where the key is a real token."""
    if ids.dim() != 2:
        raise ValueError(f"padding_mask expects ids of shape (B, S), got {tuple(ids.shape)}")
    return (ids != pad_id)[:, None, None, :]


def key_mask_to_attention(key_mask: Tensor) -> Tensor:
    """(B, S) boolean, True = real token -> (B, 1, 1, S)."""
    if key_mask.dim() != 2 or key_mask.dtype != torch.bool:
        raise ValueError(f"key mask must be a (B, S) boolean tensor, got {tuple(key_mask.shape)} {key_mask.dtype}")
    return key_mask[:, None, None, :]


def causal_mask(size: int, device: torch.device | str | None = None, first_row: int = 0) -> Tensor:
    """(T, T) boolean lower triangle: query t may attend to keys 0..t (the look-ahead mask); from `first_row` on
    only, (T - first_row, T), for the queries of the tokens a cached decoding step runs."""
    return torch.ones(size - first_row, size, dtype=torch.bool, device=device).tril(first_row)


def local_window_mask(size: int, width: int, device: torch.device | str | None = None) -> Tensor:
    """(T, T): query t may attend to keys within `width` positions on either side."""
    if width < 0:
        raise ValueError(f"window width must be >= 0, got {width}")
    pos = torch.arange(size, device=device)
    return (pos[:, None] - pos[None, :]).abs() <= width


def no_self_mask(size: int, device: torch.device | str | None = None) -> Tensor:
    """(T, T): every query may attend to every key but itself."""
    return ~torch.eye(size, dtype=torch.bool, device=device)


def block_keys_mask(size_q: int, size_k: int, blocked: list[int] | tuple[int, ...],
                    device: torch.device | str | None = None) -> Tensor:
    """(T, S): no query may attend to the key positions in `blocked`."""
    mask = torch.ones(size_q, size_k, dtype=torch.bool, device=device)
    for k in blocked:
        if not 0 <= k < size_k:
            raise ValueError(f"blocked key position {k} is outside 0..{size_k - 1}")
        mask[:, k] = False
    return mask


def normalize_mask(mask: Tensor | None) -> Tensor | None:
    """Bring a custom mask to the 4-d form (B|1, 1, T, S); checks it is boolean."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        raise ValueError("attention masks must be boolean tensors (True = may attend)")
    if mask.dim() == 2:  # (T, S)
        return mask[None, None]
    if mask.dim() == 3:  # (B, T, S)
        return mask[:, None]
    if mask.dim() == 4:
        if mask.shape[1] != 1:
            raise ValueError(f"a 4-d mask must have shape (B, 1, T, S), got {tuple(mask.shape)}")
        return mask
    raise ValueError(f"mask must be (T, S), (B, T, S) or (B, 1, T, S), got {tuple(mask.shape)}")


def combine_masks(*masks: Tensor | None) -> Tensor | None:
    """Logical AND of all masks given, each normalised to 4-d; None entries are skipped."""
    result = None
    for mask in masks:
        mask = normalize_mask(mask)
        if mask is None:
            continue
        result = mask if result is None else result & mask
    return result


def from_torch_mask(mask: Tensor | None, *, key_padding: bool = False) -> Tensor | None:
    """Translate a torch.nn mask (True or -inf = blocked) into ours (True = may attend).

    `key_padding=True` treats the input as a (B, S) `key_padding_mask` and returns (B, S).
    """
    if mask is None:
        return None
    if mask.dtype == torch.bool:
        allowed = ~mask
    else:  # float masks are additive: -inf blocks, 0 allows; other values cannot be expressed
        if not torch.all((mask == 0) | torch.isneginf(mask)):
            raise ValueError("only 0/-inf float masks can be converted to boolean masks")
        allowed = mask == 0
    return allowed if key_padding else normalize_mask(allowed)


def to_torch_key_padding_mask(key_mask: Tensor | None) -> Tensor | None:
    """Our (B, S) True = real token -> torch's (B, S) True = ignore."""
    return None if key_mask is None else ~key_mask


def sliding_window_mask(size: int, window: int, device: torch.device | str | None = None) -> Tensor:
    """(T, T): query t may attend to keys t - window + 1 .. (any later key): the last `window` keys
    including itself. transformers' sliding-window overlay (Mistral): key k is visible when
    k > t - window, so a key exactly `window` positions back is not. Later keys are left to the causal mask.
    """
    if window < 1:
        raise ValueError(f"sliding window must be >= 1, got {window}")
    pos = torch.arange(size, device=device)
    return (pos[:, None] - pos[None, :]) < window

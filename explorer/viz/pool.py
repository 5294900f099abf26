"""Block pooling of (..., Tq, Tk) arrays down to at most a given number of cells per side.

Used where a figure has more tokens than it can send or show: the tiles of the all-heads overview,
the rollout layers, and any token x token view beyond `FULL_SIDE` tokens. A cell then covers a block
of neighbouring tokens (`block_edges`) and shows the block's largest value (a single spike stays
visible), the signed value of largest magnitude (differences), or whether all of it is set (masks).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

FULL_SIDE = 1024  # token x token views are sent at full resolution up to this many tokens per side

Reduce = Literal["max", "absmax", "all"]


def block_edges(n_tokens: int, n_cells: int) -> tuple[int, ...]:
    """n_cells + 1 boundaries: blocks of p+1 tokens first, then blocks of p (p = n_tokens // n_cells).

    Two block sizes in two runs let `pool` use reshapes (fast) instead of `reduceat`.
    """
    n_cells = max(1, min(n_tokens, n_cells))
    p, n_big = divmod(n_tokens, n_cells)
    sizes = [p + 1] * n_big + [p] * (n_cells - n_big)
    return tuple(int(e) for e in np.concatenate([[0], np.cumsum(sizes)]))


def _pool_axis(x: np.ndarray, edges: Sequence[int], axis: int, ufunc: np.ufunc) -> np.ndarray:
    """`ufunc` (np.maximum / np.minimum) over the blocks given by `block_edges` along `axis`."""
    n_cells, n_tok = len(edges) - 1, edges[-1]
    if n_cells == n_tok:
        return x
    x = np.moveaxis(x, axis, 0)  # a view; block members are then strided slices of axis 0
    p = n_tok // n_cells
    split = (n_tok - p * n_cells) * (p + 1)  # tokens covered by the (p+1)-blocks
    parts = []
    for lo, hi, size in ((0, split, p + 1), (split, n_tok, p)):
        if hi > lo:
            # Element-wise reduction of the size members (numpy's .max over a short axis is slow).
            part = x[lo:hi:size].copy()
            for j in range(1, size):
                ufunc(part, x[lo + j:hi:size], out=part)
            parts.append(part)
    return np.moveaxis(np.concatenate(parts, axis=0), 0, axis)


def _pool(x: np.ndarray, q_edges: Sequence[int], k_edges: Sequence[int], ufunc: np.ufunc) -> np.ndarray:
    return _pool_axis(_pool_axis(x, q_edges, -2, ufunc), k_edges, -1, ufunc)


def pool(x: np.ndarray, q_edges: Sequence[int], k_edges: Sequence[int], how: Reduce = "max") -> np.ndarray:
    """(..., Tq, Tk) -> (..., len(q_edges)-1, len(k_edges)-1), one value per block.

    how: "max" (largest value), "absmax" (the value of largest magnitude, with its sign) or
    "all" (booleans: True where every member is True).
    """
    if how == "max":
        return _pool(x, q_edges, k_edges, np.maximum)
    if how == "all":
        return _pool(np.asarray(x, dtype=bool), q_edges, k_edges, np.minimum)
    if how == "absmax":
        top, bottom = _pool(x, q_edges, k_edges, np.maximum), _pool(x, q_edges, k_edges, np.minimum)
        return np.where(np.abs(bottom) > np.abs(top), bottom, top)
    raise ValueError(f"how must be 'max', 'absmax' or 'all'; got {how!r}")


def max_pool(x: np.ndarray, q_edges: Sequence[int], k_edges: Sequence[int]) -> np.ndarray:
    """Max over blocks: (..., Tq, Tk) -> (..., len(q_edges)-1, len(k_edges)-1)."""
    return pool(x, q_edges, k_edges, "max")

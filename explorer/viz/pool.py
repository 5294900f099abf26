"""Block pooling of (..., Tq, Tk) arrays down to at most a given number of cells per side.

Used where a figure has more tokens than it can send or show: the tiles of the all-heads overview,
the rollout layers, and any token x token view beyond `FULL_SIDE` tokens. A cell then covers a block
of neighbouring tokens (`block_edges`) and shows the block's largest value (a single spike stays
visible), the signed value of largest magnitude (differences), whether all of it is set (a masked
block drawn grey) or its mean (the share of a mask block that is allowed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

FULL_SIDE = 1024  # token x token views are sent at full resolution up to this many tokens per side

Reduce = Literal["max", "absmax", "all", "mean"]


def block_edges(n_tokens: int, n_cells: int) -> tuple[int, ...]:
    """n_cells + 1 boundaries of blocks of p or p + 1 tokens (p = n_tokens // n_cells), the larger ones
    spread evenly (edge i = i * n_tokens // n_cells), so that cell positions stay proportional to token
    positions: all large blocks first would bend a diagonal when p is small (2 tokens vs 1)."""
    n_cells = max(1, min(n_tokens, n_cells))
    return tuple(i * n_tokens // n_cells for i in range(n_cells + 1))


def _pool(x: np.ndarray, q_edges: Sequence[int], k_edges: Sequence[int], ufunc: np.ufunc) -> np.ndarray:
    """`ufunc`.reduceat over the blocks of the last two axes (an axis with one token per cell is left as it is).

    The last (contiguous) axis first: 6x faster on a (12, 12, 1024, 1024) array than the other order.
    """
    for axis, edges in ((-1, k_edges), (-2, q_edges)):
        if len(edges) - 1 < edges[-1]:
            x = ufunc.reduceat(x, np.asarray(edges[:-1]), axis=axis)
    return x


def pool(x: np.ndarray, q_edges: Sequence[int], k_edges: Sequence[int], how: Reduce = "max") -> np.ndarray:
    """(..., Tq, Tk) -> (..., len(q_edges)-1, len(k_edges)-1), one value per block.

    how: "max" (largest value), "absmax" (the value of largest magnitude, with its sign),
    "all" (booleans: True where every member is True) or "mean" (e.g. the share of True members).
    """
    if how == "max":
        return _pool(x, q_edges, k_edges, np.maximum)
    if how == "all":
        return _pool(np.asarray(x, dtype=bool), q_edges, k_edges, np.minimum)
    if how == "absmax":
        top, bottom = _pool(x, q_edges, k_edges, np.maximum), _pool(x, q_edges, k_edges, np.minimum)
        return np.where(np.abs(bottom) > np.abs(top), bottom, top)
    if how == "mean":
        return _pool(np.asarray(x, dtype=np.float64), q_edges, k_edges, np.add) / np.outer(np.diff(q_edges),
                                                                                            np.diff(k_edges))
    raise ValueError(f"how must be 'max', 'absmax', 'all' or 'mean'; got {how!r}")


def max_pool(x: np.ndarray, q_edges: Sequence[int], k_edges: Sequence[int]) -> np.ndarray:
    """Max over blocks: (..., Tq, Tk) -> (..., len(q_edges)-1, len(k_edges)-1)."""
    return pool(x, q_edges, k_edges, "max")

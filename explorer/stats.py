"""Small numeric helpers shared by the analysis and the figures (numpy only, no model, no Plotly)."""

from __future__ import annotations

from typing import Any

import numpy as np


def to_float_array(x: Any) -> np.ndarray:
    """numpy array, torch tensor (any device, with grad) or list -> float64 numpy array."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=np.float64)


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n with ties given their average rank."""
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    ranks = np.empty(len(x), dtype=np.float64)
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and sorted_x[j + 1] == sorted_x[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(a: Any, b: Any) -> float:
    """Spearman rank correlation of two equally long arrays (flattened); NaN if one is constant."""
    x, y = to_float_array(a).ravel(), to_float_array(b).ravel()
    if x.shape != y.shape:
        raise ValueError(f"a and b must have the same number of values; got {x.size} and {y.size}")
    if x.size < 2:
        return float("nan")
    rx, ry = _ranks(x), _ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denom = np.sqrt((rx ** 2).sum() * (ry ** 2).sum())
    return float((rx * ry).sum() / denom) if denom > 0 else float("nan")

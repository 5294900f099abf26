"""The sinusoidal position table of Vaswani et al., one pure function for every user: the model keeps it
as a float32 buffer (model/positional.py), the positional tab plots it (viz, app/tabs/positions.py).
Numpy only, so the figures never import torch.

Shapes: T positions, D model width.
    sinusoidal_table(T, D)                  -> (T, D) float64   PE(pos, 2i) = sin(pos / base^(2i/D)),
                                                                PE(pos, 2i+1) = cos(pos / base^(2i/D))
    sinusoidal_table(T, D, layout="split")  the same values with all sines first, then all cosines (Marian)
An odd D has one more sine than cosines (the last column of the interleaved layout is a sine).
"""

from __future__ import annotations

import numpy as np

LAYOUTS = ("interleaved", "split")


def sinusoidal_table(length: int, d_model: int, base: float = 10000.0, layout: str = "interleaved") -> np.ndarray:
    """(length, d_model) float64 table (float64 keeps long tables exact; the model stores float32).
    "interleaved": sin, cos, sin, cos, ... (Vaswani et al.); "split": the ceil(D/2) sines, then the cosines."""
    if length < 0 or d_model < 1:
        raise ValueError(f"need length >= 0 and d_model >= 1; got length={length}, d_model={d_model}")
    if layout not in LAYOUTS:
        raise ValueError(f"unknown sinusoid layout {layout!r}; use interleaved or split")
    position = np.arange(length, dtype=np.float64)[:, None]  # (T, 1)
    two_i = np.arange(0, d_model, 2, dtype=np.float64)  # (ceil(D/2),)
    angle = position / base ** (two_i / d_model)  # (T, ceil(D/2))
    sines, cosines = np.sin(angle), np.cos(angle[:, : d_model // 2])
    if layout == "split":
        return np.concatenate([sines, cosines], axis=1)  # (T, D)
    table = np.empty((length, d_model), dtype=np.float64)
    table[:, 0::2] = sines
    table[:, 1::2] = cosines
    return table

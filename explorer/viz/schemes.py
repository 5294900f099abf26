"""Figures of the positional schemes that are not a table added to the embeddings: rotary positions
(RoPE) and T5's relative position bias. Built from arrays (explorer.positions computes them from a
model's config and weights); no model runs here.

Shapes: R/2 rotating pairs, K distances, H heads.
    rotary_frequency_chart(inv_freq (R/2,))                -> each pair's angle per position step (log scale)
    rotary_distance_chart(distances (K,), scores (K,))     -> q.k of a fixed query and key against their distance
    relative_bias_heatmap(bias (H, K), distances (K,))     -> head x signed distance, the bias added to the score
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from explorer.viz import common as c
from explorer.viz.encode import encode, symmetric_range


def rotary_frequency_chart(inv_freq: Any, title: str = "Rotary frequencies", *, width: int | None = None) -> go.Figure:
    """One marker per rotating pair of dimensions: its angle per position step (radians, log scale) and, in the
    hover, its wavelength in tokens (2 pi / angle): fast pairs tell neighbours apart, slow ones whole passages."""
    freq = c.to_numpy(inv_freq, np.float64).reshape(-1)
    if freq.size == 0 or not np.all(freq > 0):
        raise ValueError("inv_freq must hold positive frequencies, one per rotating pair")
    pairs = np.arange(freq.size)
    wavelength = 2 * np.pi / freq
    line = dict(type="scatter", x=pairs, y=freq, mode="lines+markers", name="angle per token",
                customdata=wavelength, marker=dict(size=6, color="#0072B2"), line=dict(color="#0072B2"),
                hovertemplate="pair %{x}: %{y:.3g} rad per token, wavelength %{customdata:.4g} tokens<extra></extra>")
    return c.figure([line], dict(
        **c.base_layout(title, 380, width),
        xaxis=dict(title=dict(text="dimension pair (i with i + R/2)"), zeroline=False),
        yaxis=dict(title=dict(text="angle per position (radians)"), type="log"),
        showlegend=False,
    ))


def rotary_distance_chart(distances: Any, scores: Any, title: str = "Rotary: score against distance", *,
                          width: int | None = None) -> go.Figure:
    """The score q.k of one fixed query and key (every rotating dimension 1) as the key moves away from the
    query, relative to distance 0: rotary positions make it depend on the distance alone."""
    d = c.to_numpy(distances, np.float64).reshape(-1)
    s = c.to_numpy(scores, np.float64).reshape(-1)
    if d.shape != s.shape or d.size == 0:
        raise ValueError(f"distances and scores must have one equal length, got {d.shape} and {s.shape}")
    line = dict(type="scatter", x=d, y=s, mode="lines", name="score", line=dict(color="#D55E00"),
                hovertemplate="distance %{x}: %{y:.3f} of the score at distance 0<extra></extra>")
    return c.figure([line], dict(
        **c.base_layout(title, 380, width),
        xaxis=dict(title=dict(text="distance from query to key (tokens)"), zeroline=False),
        yaxis=dict(title=dict(text="q·k / (q·k at distance 0)"), zeroline=True, zerolinecolor="#999"),
        showlegend=False,
    ))


def relative_bias_heatmap(bias: Any, distances: Any, title: str = "Relative position bias", *,
                          width: int | None = None) -> go.Figure:
    """Heads (rows) x signed distance key - query (columns): the number each head adds to the attention score
    of a key that far from its query (negative distance: the key comes before the query)."""
    b = c.to_numpy(bias, np.float32)
    d = c.to_numpy(distances, np.int64).reshape(-1)
    c.check_shape("bias", b, (None, d.size), "(heads, distances)")
    m = symmetric_range(b)
    heads = [f"head {h}" for h in range(b.shape[0])]
    heat = encode(b, -m, m, name="bias").trace(d.tolist(), heads, c.DIVERGING_SCALE, "bias",
                                               "%{y}, distance %{x}: {value}")
    height = c.clamp(150 + 26 * b.shape[0], 300, 700)
    return c.figure([heat], dict(
        **c.base_layout(title, height, width),
        xaxis=dict(title=dict(text="distance: key position − query position"), showgrid=False, zeroline=False),
        yaxis=dict(title=dict(text="head"), autorange="reversed", showgrid=False, zeroline=False, type="category"),
    ))

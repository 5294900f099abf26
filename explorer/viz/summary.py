"""Summaries over layers and heads: attention rollout and head importance.

Shapes: attn (L, H, T, T) self-attention; rollout (L, T, T); importances (L, H).
Rollout (Abnar & Zuidema 2020): per layer average the heads, add the identity for the residual
connection, renormalise rows, then multiply layer by layer: R_l = A_l @ R_{l-1}, R_0 = A_0.
Row i of R_l says how much token i after layer l draws on each input token.
The rollout figure sends every layer (for its slider), so long inputs are pooled to a cell budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import plotly.graph_objects as go  # noqa: F401  (return type)

from explorer.stats import spearman  # noqa: F401  (re-exported: part of the viz API)

from explorer.viz import common as c
from explorer.viz.axes import TokenAxes
from explorer.viz.encode import encode
from explorer.viz.pool import FULL_SIDE

ROLLOUT_MAX_CELLS = 1_600_000  # all layers of the rollout figure: ~2.1 MB at one byte per cell


def attention_rollout(attn: Any, add_residual: bool = True, head_mask: Any | None = None) -> np.ndarray:
    """(L, H, T, T) -> (L, T, T) cumulative rollout, one matrix per layer.

    head_mask (L, H), 1 = on: switched-off heads contribute nothing to their layer's average
    (their output is zeroed in the model); a layer with every head off passes tokens through.
    """
    return rollout_from_average(head_average(attn, head_mask), add_residual)


def head_average(attn: Any, head_mask: Any | None = None) -> np.ndarray:
    """(L, H, T, T) -> (L, T, T): each layer's attention averaged over the heads that are on (rollout's input)."""
    a = c.to_numpy(attn, np.float32)
    if a.ndim != 4 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"attn must have shape (L, H, T, T) (self-attention); got {tuple(a.shape)}")
    n_layers, n_heads = a.shape[:2]
    if head_mask is None:
        return a.mean(axis=1)
    hm = c.to_numpy(head_mask).astype(np.float32)
    c.check_shape("head_mask", hm, (n_layers, n_heads), "(L, H) like attn")
    on = hm.sum(axis=1)  # (L,)
    return np.einsum("lh,lhij->lij", hm, a) / np.where(on == 0, 1.0, on)[:, None, None]


def rollout_from_average(mean: Any, add_residual: bool = True) -> np.ndarray:
    """(L, T, T) head-averaged attention -> (L, T, T) rollout: R_l = norm(A_l + I) @ R_{l-1}."""
    m = c.to_numpy(mean, np.float64)
    if m.ndim != 3 or m.shape[-1] != m.shape[-2]:
        raise ValueError(f"mean must have shape (L, T, T); got {tuple(m.shape)}")
    n_layers, t, _ = m.shape
    eye = np.eye(t)
    out = np.empty((n_layers, t, t))
    joint = eye
    for layer in range(n_layers):
        aug = m[layer] + eye if add_residual else m[layer]
        sums = aug.sum(axis=-1, keepdims=True)
        aug = aug / np.where(sums == 0, 1.0, sums)  # all-masked rows stay 0, never NaN
        joint = aug @ joint
        out[layer] = joint
    return out


def rollout_heatmap(
    rollout: Any,
    labels: Sequence[str],
    layer: int | None = None,
    title: str = "Attention rollout",
    *,
    width: int | None = None,
    max_cells: int = ROLLOUT_MAX_CELLS,
) -> go.Figure:
    """Rollout (L, T, T) as a heatmap; layer=None gives a slider over layers (last one shown).

    Each layer gets its own colour range, 0 to its largest value: rollout spreads out with depth
    (rows tend to uniform 1/T), and one shared range left deep layers a flat dark square.
    max_cells: the layers together send at most this many cells; beyond it each layer is pooled
    (a cell shows the largest value of its block of tokens).
    """
    r = c.to_numpy(rollout, np.float32)
    if r.ndim != 3:
        raise ValueError(f"rollout must have shape (L, T, T); got {tuple(r.shape)}")
    n_layers = r.shape[0]
    c.check_shape("rollout", r, (n_layers, len(labels), len(labels)), "(L, len(labels), len(labels))")
    if layer is not None and not 0 <= layer < n_layers:
        raise ValueError(f"layer {layer} out of range for {n_layers} layers")
    layers = [layer] if layer is not None else list(range(n_layers))
    side = min(FULL_SIDE, max(1, math.isqrt(max_cells // len(layers))))
    ax = TokenAxes(labels, labels, x_title="input token (source of information)",
                   y_title="token after the layer", width=width, max_side=side)
    shown = layers[-1]
    traces = []
    for i in layers:
        cells = ax.pool(r[i])
        enc = encode(cells, 0.0, float(cells.max()) if cells.max() > 0 else 1.0, name="rollout")
        traces.append(enc.trace(ax.k_names, ax.q_names, c.ROLLOUT_SCALE, f"rollout, layer {i}",
                                f"layer {i}: " + "%{y} ← %{x}: {value}" + ax.pooled_note("max"),
                                visible=(i == shown), name=f"layer {i}"))
    extra: dict[str, Any] = {}
    if layer is None and n_layers > 1:
        steps = [dict(method="update", label=str(i),
                      args=[{"visible": [j == i for j in range(n_layers)]},
                            {"title.text": f"{title}, through layer {i}"}])
                 for i in range(n_layers)]
        extra["sliders"] = [dict(active=shown, steps=steps, currentvalue=dict(prefix="through layer "),
                                 pad=dict(t=ax.bottom - 10), len=0.9, x=0.05)]
        ax.height += 70  # room for the slider below the tick labels
    return c.figure(traces, ax.layout(f"{title}, through layer {shown}", **extra))


def head_importance_chart(
    exact: Any,
    estimate: Any,
    rank_correlation: float,
    title: str = "Head importance",
    *,
    exact_name: str = "exact change (head switched off)",
    estimate_name: str = "gradient estimate",
    width: int | None = None,
) -> go.Figure:
    """Exact per-head change and its gradient estimate (both (L, H)) side by side, plus a scatter.

    Each map is scaled by its own largest |value| (units differ); hover shows raw values.
    The Spearman correlation goes in the title.
    """
    ex, es = c.to_numpy(exact, np.float64), c.to_numpy(estimate, np.float64)
    if ex.ndim != 2:
        raise ValueError(f"exact must have shape (L, H); got {tuple(ex.shape)}")
    c.check_shape("estimate", es, ex.shape, "(L, H) like exact")
    n_layers, n_heads = ex.shape
    signed = bool((ex < 0).any() or (es < 0).any())
    scale = dict(zmin=-1.0, zmax=1.0, zmid=0.0, colorscale=c.DIVERGING_SCALE) if signed \
        else dict(zmin=0.0, zmax=1.0, colorscale=c.ROLLOUT_SCALE)
    en, sn = c.escape(exact_name), c.escape(estimate_name)
    domains = column_domains([0.36, 0.36, 0.28], spacing=0.09)
    heads = [f"H{h}" for h in range(n_heads)]
    layers = [f"L{l}" for l in range(n_layers)]
    traces: list[dict[str, Any]] = []
    for col, (vals, name) in enumerate([(ex, en), (es, sn)], start=1):
        top = np.abs(vals).max()
        traces.append(dict(
            type="heatmap", xaxis=_axis_ref("x", col), yaxis=_axis_ref("y", col),
            z=(vals / (top if top > 0 else 1.0)).astype(np.float32), x=heads, y=layers,
            customdata=vals.astype(np.float32), name=name, showscale=(col == 2),
            # Horizontal, under the two maps: upright it would sit on the scatter's axis.
            colorbar=dict(title=dict(text="value / largest |value| of its map", side="top"),
                          orientation="h", thickness=10, len=0.5, x=0.34, xanchor="center",
                          y=-0.28, yanchor="top"),
            hovertemplate="%{y} %{x}: %{customdata:.4g}<extra>" + name + "</extra>", **scale,
        ))
    tags = [f"L{l}H{h}" for l in range(n_layers) for h in range(n_heads)]
    traces.append(dict(
        type="scatter", xaxis="x3", yaxis="y3", x=ex.ravel(), y=es.ravel(), mode="markers", text=tags,
        name="heads", showlegend=False, marker=dict(size=7, color="#0072B2", opacity=0.8),
        hovertemplate="%{text}: exact %{x:.4g}, estimate %{y:.4g}<extra></extra>",
    ))
    axes: dict[str, Any] = {}
    for col, (lo, hi) in enumerate(domains, start=1):
        x, y = _axis_key("x", col), _axis_key("y", col)
        axes[x] = dict(anchor=_axis_ref("y", col), domain=[lo, hi])
        axes[y] = dict(anchor=_axis_ref("x", col), domain=[0.0, 1.0])
        if col < 3:  # the two maps: category axes, layer 0 on top
            axes[x].update(type="category", title=dict(text="head"))
            axes[y].update(type="category", autorange="reversed")
    axes["yaxis"]["title"] = dict(text="layer")
    axes["xaxis3"]["title"] = dict(text="exact change")
    axes["yaxis3"]["title"] = dict(text="estimate")
    titles = [dict(text=t, x=(lo + hi) / 2, xanchor="center", y=1.0, yanchor="bottom", xref="paper",
                   yref="paper", showarrow=False, font=dict(size=16))
              for t, (lo, hi) in zip([en, sn, "estimate vs exact (one dot per head)"], domains)]
    rho = "n/a" if rank_correlation is None or not np.isfinite(rank_correlation) else f"{rank_correlation:.3f}"
    height = c.clamp(260 + 34 * n_layers, 440, 860)
    return c.figure(traces, dict(
        **c.base_layout(f"{title}: exact vs gradient estimate (Spearman ρ = {rho})",
                        height, width, l=60, r=30, t=90, b=150),
        **axes, annotations=titles))


def column_domains(widths: Sequence[float], spacing: float) -> list[tuple[float, float]]:
    """Paper-coordinate (start, end) of side-by-side subplots: relative widths, fixed gaps."""
    room = 1.0 - spacing * (len(widths) - 1)
    total = float(sum(widths))
    out, x = [], 0.0
    for w in widths:
        out.append((round(x, 6), round(x + room * w / total, 6)))
        x += room * w / total + spacing
    return out


def _axis_key(letter: str, col: int) -> str:
    return f"{letter}axis" if col == 1 else f"{letter}axis{col}"


def _axis_ref(letter: str, col: int) -> str:
    return letter if col == 1 else f"{letter}{col}"

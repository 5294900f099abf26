"""INTERIM figures of the head-roles, activation-patching and logit-lens tabs, written on branch heads-app while
branch heads (which owns `role_figure`, `patching_figure` and `lens_figure` in explorer.viz) had not drawn its
own yet. Same names and arguments as the spec (lens_figure also takes the top tokens' text, which the lens
holds only as ids). Replace the app's three imports of this module with `explorer.viz`'s builders and delete it
once those are merged.

Shapes: L layers, H heads, T positions. role scores (L, H) in [0, 1] (NaN = undefined); patching shares (L, H)
and (L + 1, T); lens (L + 1, B, T), row 0 of the batch drawn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from explorer.viz import common as c

UNDEFINED_COLOR = "#e6e6e6"  # the plot background shows through NaN cells: "role undefined on this text"


def _grid_labels(n_layers: int, n_heads: int) -> tuple[list[str], list[str]]:
    return [f"H{h}" for h in range(n_heads)], [f"L{layer}" for layer in range(n_layers)]


def role_figure(scores: Mapping[str, Any], *, title: str = "Head roles", width: int | None = None) -> go.Figure:
    """One layer x head heatmap per role (0..1, Viridis; grey = undefined), best head named in each panel title."""
    roles = list(scores)
    if not roles:
        return c.message_figure("No roles to show.")
    arrays = [c.to_numpy(scores[r], np.float64) for r in roles]
    n_layers, n_heads = arrays[0].shape
    cols = min(3, len(roles))
    rows = -(-len(roles) // cols)
    names = []
    for role, a in zip(roles, arrays):
        if np.isnan(a).all():
            names.append(f"{role}: undefined")
            continue
        layer, head = np.unravel_index(np.nanargmax(a), a.shape)
        names.append(f"{role}: best L{layer} H{head} ({a[layer, head]:.2f})")
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=names, horizontal_spacing=0.07,
                        vertical_spacing=0.16 if rows > 1 else 0.1)
    heads, layers = _grid_labels(n_layers, n_heads)
    show_text = n_layers * n_heads <= 64
    for i, (role, a) in enumerate(zip(roles, arrays)):
        text = np.where(np.isnan(a), "", np.char.mod("%.2f", np.nan_to_num(a))).tolist() if show_text else None
        fig.add_trace(go.Heatmap(
            z=a.astype(np.float32), x=heads, y=layers, zmin=0.0, zmax=1.0, colorscale=c.WEIGHT_SCALE,
            showscale=(i == 0), text=text, texttemplate="%{text}" if show_text else None,
            textfont=dict(size=10), name=role, hoverongaps=False,
            colorbar=dict(title=dict(text="score", side="right"), thickness=12, len=0.8),
            hovertemplate="%{y} %{x}<br>" + role + ": %{z:.3f}<extra></extra>"), row=i // cols + 1, col=i % cols + 1)
    fig.update_yaxes(autorange="reversed", showgrid=False)
    fig.update_xaxes(showgrid=False, side="bottom")
    height = 90 + rows * max(150, min(300, 26 * n_layers + 60))
    fig.update_layout(**{**c.base_layout(title, height, width, l=50, r=30, t=80, b=30),
                         "plot_bgcolor": UNDEFINED_COLOR})
    return fig


def patching_figure(p: Any, labels: Sequence[str], *, title: str = "Activation patching",
                    width: int | None = None) -> go.Figure:
    """Heads (L, H) (and cross-attention heads, if any) and the residual stream (L + 1, T): the share of the
    clean-minus-corrupted metric each patch restores; diverging colours centred at 0."""
    heads = c.to_numpy(p.heads, np.float64)
    residual = c.to_numpy(p.residual, np.float64)
    c.check_shape("residual", residual, (heads.shape[0] + 1, len(labels)), "(L + 1, len(labels))")
    panels = [("heads (self-attention)" if p.cross is not None else "heads", heads)]
    if p.cross is not None:
        panels.append(("cross-attention heads", c.to_numpy(p.cross, np.float64)))
    top = max(1.0, float(np.nanmax(np.abs(np.concatenate([a.ravel() for _, a in panels] + [residual.ravel()])))))
    widths = [1.0] * len(panels) + [max(1.5, 0.12 * len(labels))]
    fig = make_subplots(rows=1, cols=len(widths), column_widths=widths, horizontal_spacing=0.08,
                        subplot_titles=[name for name, _ in panels] + ["residual stream (layer input × position)"])
    scale = dict(zmin=-top, zmax=top, zmid=0.0, colorscale=c.DIVERGING_SCALE)
    for col, (name, a) in enumerate(panels, start=1):
        hx, hy = _grid_labels(*a.shape)
        fig.add_trace(go.Heatmap(z=a.astype(np.float32), x=hx, y=hy, showscale=False, name=name, **scale,
                                 hovertemplate="%{y} %{x}: restores %{z:.3f}<extra>" + name + "</extra>"),
                      row=1, col=col)
    n_layers = heads.shape[0]
    rows = [f"L{layer} in" for layer in range(n_layers)] + ["output"]
    tokens = [c.escape(t) for t in c.unique_labels(list(labels))]
    fig.add_trace(go.Heatmap(z=residual.astype(np.float32), x=tokens, y=rows, name="residual", **scale,
                             colorbar=dict(title=dict(text="share restored", side="right"), thickness=12),
                             hovertemplate="%{y} · %{x}: restores %{z:.3f}<extra></extra>"),
                  row=1, col=len(widths))
    fig.update_yaxes(autorange="reversed", showgrid=False)
    fig.update_xaxes(showgrid=False, type="category")
    fig.update_xaxes(tickangle=-60, row=1, col=len(widths))
    height = max(300, 140 + 34 * (n_layers + 1))
    fig.update_layout(**c.base_layout(f"{title}: clean {p.clean:.3f}, corrupted {p.corrupted:.3f}", height, width,
                                      l=60, r=30, t=80, b=90))
    return fig


def lens_figure(lens: Any, labels: Sequence[str], top_labels: Sequence[Sequence[str]], *,
                title: str = "Logit lens", width: int | None = None) -> go.Figure:
    """Left: rows = the embeddings then each layer's output, columns = positions; the top token's text in each
    cell, its probability as colour. Right: the rank of the model's final prediction at the last position, per
    row (0 = top)."""
    probs = c.to_numpy(lens.top_probs[:, 0], np.float64)  # (L + 1, T)
    ranks = c.to_numpy(lens.final_rank[:, 0], np.int64)  # (L + 1, T)
    c.check_shape("top_probs", probs, (None, len(labels)), "(L + 1, len(labels))")
    n_rows, n_pos = probs.shape
    rows = ["embeddings"] + [f"L{layer}" for layer in range(n_rows - 1)]
    text = [[c.escape(c.short(str(t), 4)) for t in row] for row in top_labels]  # figure_json: no object arrays
    tokens = [c.escape(t) for t in c.unique_labels(list(labels))]
    fig = make_subplots(rows=1, cols=2, column_widths=[0.8, 0.2], horizontal_spacing=0.1,
                        subplot_titles=["top token per layer and position", "final prediction's rank (last token)"])
    fig.add_trace(go.Heatmap(z=probs.astype(np.float32), x=tokens, y=rows, zmin=0.0, zmax=1.0,
                             colorscale=c.WEIGHT_SCALE, text=text, texttemplate="%{text}" if n_pos <= 40 else None,
                             textfont=dict(size=10), customdata=ranks.tolist(), name="lens",
                             colorbar=dict(title=dict(text="probability of the top token", side="top"),
                                           orientation="h", thickness=10, len=0.4, x=0.0, xanchor="left", y=-0.45,
                                           yanchor="top"),
                             hovertemplate=("%{y} · after %{x}: top %{text} (p %{z:.3f}); the final prediction's "
                                            "rank %{customdata}<extra></extra>")),
                  row=1, col=1)
    last = ranks[:, -1]
    fig.add_trace(go.Scatter(x=last + 1, y=rows, mode="lines+markers+text", text=[str(r) for r in last],
                             textposition="middle right", name="rank", showlegend=False,
                             hovertemplate="%{y}: rank %{text}<extra></extra>"), row=1, col=2)
    fig.update_yaxes(autorange="reversed", showgrid=False)
    fig.update_xaxes(type="category", tickangle=-60, showgrid=False, row=1, col=1)
    fig.update_xaxes(type="log", title=dict(text="rank + 1 (log)"), row=1, col=2)
    fig.update_yaxes(showticklabels=False, row=1, col=2)  # the same rows as the grid on its left
    height = max(340, 220 + 30 * n_rows)
    fig.update_layout(**c.base_layout(title, height, width, l=90, r=40, t=80, b=150))
    return fig

"""The attention tabs: the mask the model applied, the chosen head with and without the toggles and their
difference, every head at once (overview), and attention rollout.

Shapes: L layers, H heads, Tq query / Tk key length. Figures come from `explorer.viz`; the values are the
ones the model returned, and the masks are the ones it applied (`Run.masks`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import torch

from ... import viz
from ..compare import Comparison
from ..runs import Run
from . import KIND_SHORT, KIND_TITLES, View

NO_TOGGLE_BASELINE = ("No toggle is active, so the baseline is the view above. Switch a head off or change a "
                      "mask to compare.")
NO_TOGGLE_DIFFERENCE = "The difference (toggled − baseline) appears here once a toggle is active."


def attention_kinds(run: Run) -> dict[str, tuple[int, int]]:
    """kind -> (layers, heads) of a run."""
    return {kind: (len(layers), layers[0].shape[1]) for kind, layers in run.attentions.items()}


def row_attention(run: Run, kind: str, row: int) -> np.ndarray:
    """(L, H, Tq, Tk) for one sentence."""
    return torch.stack([a[row] for a in run.attentions[kind]]).numpy()


def heads_off(cmp: Comparison, kind: str) -> np.ndarray | None:
    """(L, H) 1 = on for the overview and rollout; None when every head is on."""
    return None if cmp.head_mask is None else cmp.head_mask[kind].numpy()


@dataclass
class AttentionFigures:
    mask: go.Figure
    head: go.Figure
    baseline: go.Figure
    difference: go.Figure
    change_by_layer: np.ndarray  # (L,) largest change of any weight of the chosen kind, per layer


def attention_figures(cmp: Comparison, view: View) -> AttentionFigures:
    run, base, b = cmp.toggled, cmp.baseline, view.row
    kind, layer, head = view.kind, view.layer, view.head
    queries, keys = run.queries[kind][b], run.keys[kind][b]
    mask = run.masks[kind][b].numpy()
    a_tog, a_base = row_attention(run, kind, b), row_attention(base, kind, b)
    on = cmp.head_mask is None or bool(cmp.head_mask[kind][layer, head])
    mask_fig = viz.mask_heatmap(mask, queries, keys, title=f"Mask: {KIND_SHORT[kind]} · sentence {b + 1}")
    head_fig = viz.head_heatmap(a_tog[layer, head], queries, keys, mask=mask, head_off=not on,
                                title=f"With toggles: {view.where()}")
    change = np.abs(a_tog - a_base).max(axis=(1, 2, 3))
    if cmp.no_toggle:  # the baseline would repeat the view above and the difference would be blank
        return AttentionFigures(mask_fig, head_fig, viz.message_figure(NO_TOGGLE_BASELINE),
                                viz.message_figure(NO_TOGGLE_DIFFERENCE), change)
    baseline_fig = viz.head_heatmap(a_base[layer, head], base.queries[kind][b], base.keys[kind][b],
                                    mask=base.masks[kind][b].numpy(), title=f"Without toggles: {view.where()}")
    diff_fig = viz.difference_heatmap(a_tog[layer, head], a_base[layer, head], queries, keys,
                                      title=f"With − without toggles: {view.where()}", a_name="toggled",
                                      b_name="baseline")
    return AttentionFigures(mask_fig, head_fig, baseline_fig, diff_fig, change)


def overview_figure(cmp: Comparison, view: View) -> go.Figure:
    run, b = cmp.toggled, view.row
    return viz.attention_overview(row_attention(run, view.kind, b), run.queries[view.kind][b],
                                  run.keys[view.kind][b], head_mask=heads_off(cmp, view.kind),
                                  title=f"All heads: {KIND_TITLES[view.kind]} (sentence {b + 1}, toggled)")


def rollout_figure(cmp: Comparison, view: View) -> go.Figure:
    """Rollout of the first self-attention stack (encoder, or the decoder of a decoder-only model)."""
    run, b = cmp.toggled, view.row
    kind = "encoder" if "encoder" in run.attentions else "decoder"
    rollout = viz.attention_rollout(row_attention(run, kind, b), head_mask=heads_off(cmp, kind))
    return viz.rollout_heatmap(rollout, run.queries[kind][b],
                               title=f"Attention rollout, {KIND_TITLES[kind]} (sentence {b + 1})")

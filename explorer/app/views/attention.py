"""The attention tabs: the mask the model applied, the chosen head with and without the toggles and their
difference, every head at once (overview), and attention rollout.

Shapes: L layers, H heads, Tq query / Tk key length. Each view has two steps: `*_inputs(cmp, view)` reduces
the runs to what its figures draw (one head's matrices, the overview's pooled tiles, the head-averaged
attention for rollout), and `*_figure(s)` draws them. A kept result holds only the reduced inputs, so it stays
small whatever the runs were; the values are the model's, and the masks the ones it applied (`Run.masks`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import torch

from ... import viz
from ..compare import Comparison
from ..runs import Run
from . import KIND_SHORT, KIND_TITLES, View
from .roles import text_scores, tile_notes

NO_TOGGLE_BASELINE = ("No toggle is active, so the baseline is the view above. Switch a head off or change a "
                      "mask to compare.")
NO_TOGGLE_DIFFERENCE = "The difference (toggled − baseline) appears here once a toggle is active."


def attention_kinds(run: Run) -> dict[str, tuple[int, int]]:
    """kind -> (layers, heads) of a run."""
    return {kind: (len(layers), layers[0].shape[1]) for kind, layers in run.attentions.items()}


def row_layers(run: Run, kind: str, row: int) -> list[torch.Tensor]:
    """Per layer (H, Tq, Tk) for one sentence, as the run returned them (views, no copy: the reductions below go
    one layer at a time, so a long run is never copied whole to float32)."""
    return [a[row] for a in run.attentions[kind]]


def kept_dtype(run: Run, kind: str) -> type:
    """The dtype a kept reduction of `kind` is stored in: float16 where the run returned float16 weights (long inputs:
    drawn as one-byte colour codes, hover with three decimals), else float32 (exact values for small views)."""
    return np.float16 if run.attentions[kind][0].dtype == torch.float16 else np.float32


def head_means(run: Run, kind: str, row: int, on: np.ndarray | None) -> np.ndarray:
    """(L, T, T): each layer's attention averaged over the heads that are on (`viz.head_average`: a layer with every
    head off gives 0), summed in float32 from the run's own dtype one layer at a time (no float32 copy of a float16
    layer), kept in `kept_dtype`."""
    means = []
    for i, a in enumerate(row_layers(run, kind, row)):  # (H, T, T)
        if on is None:
            total, n = a.sum(0, dtype=torch.float32), a.shape[0]
        else:
            gate = torch.as_tensor(on[i], dtype=a.dtype)  # 0 / 1: exact in any dtype
            total, n = (a * gate[:, None, None]).sum(0, dtype=torch.float32), float(on[i].sum())
        means.append((total / (n or 1.0)).numpy().astype(kept_dtype(run, kind)))
    return np.stack(means)


def heads_on(cmp: Comparison, kind: str) -> np.ndarray | None:
    """(L, H) 1 = on for the overview and rollout; None when every head is on."""
    return None if cmp.head_mask is None else cmp.head_mask[kind].numpy()


@dataclass(frozen=True)
class HeadView:
    """One head of one run: its weights, the mask applied, the axes' labels."""

    weights: np.ndarray  # (Tq, Tk)
    mask: np.ndarray  # (Tq, Tk) bool
    queries: list[str]
    keys: list[str]


@dataclass(frozen=True)
class AttentionInputs:
    view: View
    toggled: HeadView
    baseline: HeadView | None  # None when nothing is toggled
    head_on: bool
    change_by_layer: np.ndarray  # (L,) largest change of any weight of the chosen kind and sentence, per layer


def measured(run: Run, view: View, layer: int) -> torch.Tensor:
    """One layer of `view.kind` for the view's sentence, (H, Tq, Tk), as the view measures it: the weights as the run
    returned them, or each weight times the length of what its key writes through that head (value-weighted), in
    float32, made now for this layer alone."""
    weights = run.attentions[view.kind][layer][view.row]  # (H, Tq, Tk)
    if view.measure == "weights":
        return weights
    norms = run.value_norms[view.kind][layer][view.row]  # (H, Tk)
    return weights.float() * norms[:, None, :]  # (H, Tk) -> (H, 1, Tk)


class MeasuredLayers(Sequence):
    """The layers of one sentence's attention of one kind as the view measures them, each made when read (the
    overview pools them one at a time: no second copy of a long run's every layer)."""

    def __init__(self, run: Run, view: View):
        self.run, self.view = run, view

    def __len__(self) -> int:
        return len(self.run.attentions[self.view.kind])

    def __getitem__(self, layer: int) -> torch.Tensor:  # type: ignore[override]
        if not -len(self) <= layer < len(self):
            raise IndexError(layer)
        return measured(self.run, self.view, layer % len(self))


def head_view(run: Run, view: View, mask: np.ndarray | None = None) -> HeadView:
    """One head's weights (or value-weighted attention, `view.measure`) and mask as their own arrays (a view into the
    run would keep its every head alive), in the dtype the run returned (float32 when value-weighted); `mask`: an
    equal mask to share (the baseline's, when the toggles kept the masks)."""
    kind, b = view.kind, view.row
    weights = measured(run, view, view.layer)[view.head].numpy().copy()  # (Tq, Tk)
    own = run.masks[kind][b].numpy()
    return HeadView(weights, mask if mask is not None and np.array_equal(mask, own) else own.copy(),
                    run.queries[kind][b], run.keys[kind][b])


def attention_inputs(cmp: Comparison, view: View) -> AttentionInputs:
    toggled, baseline = cmp.toggled, cmp.baseline
    on = cmp.head_mask is None or bool(cmp.head_mask[view.kind][view.layer, view.head])
    change = np.array([float((t[view.row] - s[view.row]).abs().max()) for t, s in
                       zip(toggled.attentions[view.kind], baseline.attentions[view.kind])])  # of the weights
    shown = head_view(toggled, view)
    return AttentionInputs(view, shown, None if cmp.no_toggle else head_view(baseline, view, shown.mask), on, change)


@dataclass
class AttentionFigures:
    mask: go.Figure
    head: go.Figure
    baseline: go.Figure
    difference: go.Figure
    change_by_layer: np.ndarray  # (L,)


def value_name(view: View) -> str:
    """What the head and all-heads maps hold, as the figures name it."""
    return viz.WEIGHT if view.measure == "weights" else viz.VALUE_WEIGHTED


def attention_figures(inp: AttentionInputs) -> AttentionFigures:
    view, tog, base = inp.view, inp.toggled, inp.baseline
    name = value_name(view)
    mask_fig = viz.mask_heatmap(tog.mask, tog.queries, tog.keys,
                                title=f"Mask: {KIND_SHORT[view.kind]} · sentence {view.sentence}")
    head_fig = viz.head_heatmap(tog.weights, tog.queries, tog.keys, mask=tog.mask, head_off=not inp.head_on,
                                title=f"With toggles: {view.where()}", value_name=name)
    if base is None:  # the baseline would repeat the view above and the difference would be blank
        return AttentionFigures(mask_fig, head_fig, viz.message_figure(NO_TOGGLE_BASELINE),
                                viz.message_figure(NO_TOGGLE_DIFFERENCE), inp.change_by_layer)
    baseline_fig = viz.head_heatmap(base.weights, base.queries, base.keys, mask=base.mask,
                                    title=f"Without toggles: {view.where()}", value_name=name)
    diff_fig = viz.difference_heatmap(tog.weights, base.weights, tog.queries, tog.keys,
                                      title=f"With − without toggles: {view.where()}", a_name="toggled",
                                      b_name="baseline", value_name="attention" if name == viz.WEIGHT else name)
    return AttentionFigures(mask_fig, head_fig, baseline_fig, diff_fig, inp.change_by_layer)


@dataclass(frozen=True)
class OverviewInputs:
    tiles: viz.OverviewTiles  # the chosen kind's heads, pooled to the tiles' pixels
    queries: list[str]
    keys: list[str]
    heads_on: np.ndarray | None  # (L, H)
    title: str
    roles: list[list[str]] | None  # (L, H) each head's strongest role on this sentence ("ind .92"), baseline run
    value_name: str = viz.WEIGHT  # what the tiles hold (weights, or value-weighted attention)


def overview_inputs(cmp: Comparison, view: View) -> OverviewInputs:
    """The toggled run's tiles, labelled with each head's role in the baseline (every head on, default masks)."""
    run, b = cmp.toggled, view.row
    layers = row_layers(run, view.kind, b) if view.measure == "weights" else MeasuredLayers(run, view)
    what = "" if view.measure == "weights" else ", weight × |value written|"
    return OverviewInputs(viz.overview_tiles(layers), run.queries[view.kind][b],
                          run.keys[view.kind][b], heads_on(cmp, view.kind),
                          f"All heads: {KIND_TITLES[view.kind]} (sentence {view.sentence}, toggled{what})",
                          tile_notes(text_scores(cmp.baseline, view.kind, b)), value_name(view))


def overview_figure(inp: OverviewInputs) -> go.Figure:
    return viz.draw_overview(inp.tiles, inp.queries, inp.keys, inp.heads_on, title=inp.title, tile_notes=inp.roles,
                             value_name=inp.value_name)


@dataclass(frozen=True)
class RolloutInputs:
    mean: np.ndarray  # (L, T, T) head-averaged self-attention (heads switched off left out)
    labels: list[str]
    title: str


def rollout_inputs(cmp: Comparison, view: View) -> RolloutInputs:
    """Rollout runs over the first self-attention stack (encoder, or the decoder of a decoder-only model)."""
    run, b = cmp.toggled, view.row
    kind = "encoder" if "encoder" in run.attentions else "decoder"
    return RolloutInputs(head_means(run, kind, b, heads_on(cmp, kind)),
                         run.queries[kind][b], f"Attention rollout, {KIND_TITLES[kind]} (sentence {view.sentence})")


def rollout_figure(inp: RolloutInputs) -> go.Figure:
    return viz.rollout_heatmap(viz.rollout_from_average(inp.mean), inp.labels, title=inp.title)

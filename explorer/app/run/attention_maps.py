"""Reading a Run's attention for its figures: one sentence's layers as returned (no copy), as a view measures them
(the weights, or value-weighted attention), one head with its mask and labels, and head averages.

Shapes: L layers, H heads, Tq query / Tk key length. Long runs return float16 weights (returned.weights_dtype):
these readers go one layer at a time, so a long run is never copied whole to float32.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ... import viz
from .model_run import Run
from .pair import Comparison
from .view import View


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


def value_name(view: View) -> str:
    """What the head and all-heads maps hold, as the figures name it."""
    return viz.WEIGHT if view.measure == "weights" else viz.VALUE_WEIGHTED

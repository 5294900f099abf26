"""The Rollout tab: attention rollout (Abnar & Zuidema, 2020) over the first self-attention stack, from the toggled
run: which input tokens each position draws on through the layers.

Shapes: L layers, T tokens. The reduction keeps each layer's head-averaged attention (L, T, T), heads switched off
left out; the figure multiplies it through the layers (viz.rollout_from_average).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import numpy as np

from ... import viz
from ..run.attention_maps import head_means, heads_on
from ..run.figures import Reduction, RunFigure
from ..run.pair import Comparison
from ..run.view import KIND_TITLES, View
from .base import Tab


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


def rollout_figure(inp: RolloutInputs) -> Any:
    return viz.rollout_heatmap(viz.rollout_from_average(inp.mean), inp.labels, title=inp.title)


@dataclass
class RolloutParts:
    rollout: gr.Plot


class RolloutTab(Tab):
    id = "rollout"
    title = "Rollout"
    result = "rollout-plot"
    help = ("Which words of the input each position ends up drawing on, through all the layers. Attention "
            "rollout (Abnar & Zuidema, 2020) multiplies each layer's attention, averaged over heads and mixed with "
            "the residual connection, from the first layer up.")
    figures = (RunFigure("rollout", Reduction("rollout", rollout_inputs), rollout_figure, first_look=0, api_order=8),)

    def layout(self, start: Any) -> RolloutParts:
        return RolloutParts(gr.Plot(label="Attention rollout", show_label=False, elem_id="rollout-plot"))


TAB = RolloutTab()

"""The Attention & output tab: the chosen head with the toggles, the mask the model applied, a language model's
surprisal, the output table (baseline vs toggled), a sampled Run's first draw (run.sampled), the same head without
the toggles and the difference, and the tokens with their ids.

Shapes: Tq query / Tk key length of the chosen kind. The figures read one reduction (`run.chosen_head.ATTENTION`: the
chosen head's matrices with and without the toggles, and the masks the model applied) and `SURPRISAL`; the values are
the model's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from ... import viz
from ..page.settings import ATTENTION_TAB
from ..run.attention_maps import value_name
from ..run.chosen_head import ATTENTION, AttentionInputs, head_figure
from ..run.figures import Reduction, RunFigure
from ..run.output_table import NEXT_TOKEN_HEADERS, surprisal_figure, surprisal_inputs
from ..run.result import WAITING
from ..run.sampled import sampling_inputs, sampling_view
from ..run.view import KIND_SHORT
from .base import Tab

NO_TOGGLE_BASELINE = ("No toggle is active, so the baseline is the view above. Switch a head off or change a "
                      "mask to compare.")
NO_TOGGLE_DIFFERENCE = "The difference (toggled − baseline) appears here once a toggle is active."
NO_OUTPUTS = "The predictions could not be computed: see the message above."


def mask_figure(inp: AttentionInputs) -> Any:
    tog = inp.toggled
    return viz.mask_heatmap(tog.mask, tog.queries, tog.keys,
                            title=f"Mask: {KIND_SHORT[inp.view.kind]} · sentence {inp.view.sentence}")


def baseline_figure(inp: AttentionInputs) -> Any:
    base = inp.baseline
    if base is None:  # the baseline would repeat the view above
        return viz.message_figure(NO_TOGGLE_BASELINE)
    return viz.head_heatmap(base.weights, base.queries, base.keys, mask=base.mask,
                            title=f"Without toggles: {inp.view.where()}", value_name=value_name(inp.view))


def difference_figure(inp: AttentionInputs) -> Any:
    tog, base = inp.toggled, inp.baseline
    if base is None:  # the difference would be blank
        return viz.message_figure(NO_TOGGLE_DIFFERENCE)
    name = value_name(inp.view)
    return viz.difference_heatmap(tog.weights, base.weights, tog.queries, tog.keys,
                                  title=f"With − without toggles: {inp.view.where()}", a_name="toggled",
                                  b_name="baseline", value_name="attention" if name == viz.WEIGHT else name)


SURPRISAL = Reduction("surprisal", surprisal_inputs)
SAMPLING = Reduction("sampling", sampling_inputs)


def frame(headers: list[str], rows: list[list[Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=headers)


def plot(elem_id: str, label: str, visible: bool = True) -> gr.Plot:
    return gr.Plot(label=label, show_label=False, elem_id=elem_id, visible=visible)


@dataclass
class AttentionParts:
    head: gr.Plot
    mask: gr.Plot
    surprisal: gr.Plot
    output_md: gr.Markdown
    output_df: gr.Dataframe
    sampling: gr.Plot  # a sampled Run's first generated token: the distribution and the draw (or "greedy" in words)
    baseline: gr.Plot
    difference: gr.Plot
    tokens_df: gr.Dataframe


class AttentionTab(Tab):
    id = ATTENTION_TAB  # the tab the page opens on
    title = "Attention & output"
    result = "head-plot"
    help = ("Which words each word looks at as the model reads the sentence. Rows are queries, columns keys; "
            "brighter = more attention. Right: the mask the model applied (blue = may attend). Below: the output, then"
            " the same head without toggles and the difference.")
    figures = (RunFigure("mask", ATTENTION, mask_figure, first_look=0, api_order=0),
               RunFigure("head", ATTENTION, head_figure, first_look=0, api_order=1),
               RunFigure("baseline", ATTENTION, baseline_figure, first_look=0, api_order=2),
               RunFigure("difference", ATTENTION, difference_figure, first_look=0, api_order=3),
               RunFigure("surprisal", SURPRISAL, surprisal_figure, api_order=9),
               RunFigure("sampling", SAMPLING, sampling_view))

    def layout(self, start: Any) -> AttentionParts:
        language = start.info is not None and start.info.language_model
        with gr.Row():
            head = plot("head-plot", "Attention with the toggles")
            mask = plot("mask-plot", "Mask")
        surprisal = plot("surprisal-plot", "Surprisal of each token", visible=language)
        output_md = gr.Markdown(elem_id="output-summary")
        output_df = gr.Dataframe(label="Output: baseline vs toggled", interactive=False, wrap=True,
                                 elem_id="output-table")
        sampling = plot("sampling-plot", "Sampling the first generated token",
                        visible=start.info is not None and start.info.generates)
        with gr.Row():
            baseline = plot("baseline-plot", "Attention without toggles")
            difference = plot("diff-plot", "Difference")
        tokens_df = gr.Dataframe(label="Tokens and ids", interactive=False, elem_id="tokens", max_height=300)
        return AttentionParts(head, mask, surprisal, output_md, output_df, sampling, baseline, difference, tokens_df)

    def run_outputs(self, parts: AttentionParts) -> list[Any]:
        return [parts.tokens_df, parts.output_md, parts.output_df]

    def run_updates(self, parts: AttentionParts, result: Any) -> dict:
        """A Run's tokens, output summary and output table (`run.result.Analysis`)."""
        return {parts.tokens_df: frame(*result.tokens), parts.output_md: result.output_summary,
                parts.output_df: frame(result.output.headers, result.output.rows)}

    def waiting_updates(self, parts: AttentionParts) -> dict:
        """While a language model's predictions are computed (its attention drawn already)."""
        return {parts.output_md: WAITING, parts.output_df: frame(NEXT_TOKEN_HEADERS, [])}

    def failed_updates(self, parts: AttentionParts) -> dict:
        """After `waiting_updates`, when the Run failed (its message is on the status line)."""
        return {parts.output_md: NO_OUTPUTS}

    def model_updates(self, parts: AttentionParts, info: Any) -> dict:
        return {parts.surprisal: gr.update(visible=info.language_model),
                parts.sampling: gr.update(visible=info.generates)}


TAB = AttentionTab()

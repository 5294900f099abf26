"""The Generation tab: how the answer was written, one token at a time (toggled run).

Shapes: N generated tokens, K tokens the decoder had read so far, S source tokens. Row t of each figure is
the attention of the step that produced token t: over the tokens so far (decoder self-attention) and over
the source (cross-attention). Keys a step had not produced yet are drawn as masked. `generation_inputs`
keeps only the chosen head's rows; `self_figure` and `cross_figure` draw them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import numpy as np

from ... import viz
from ...labels import printable
from ..run.figures import Reduction, RunFigure
from ..run.pair import Comparison
from ..run.sampled import sampling_words
from ..run.sentence_outputs import GeneratedText, NextTokens, Output
from ..run.view import View
from .base import Tab

NOT_GENERATING = "This model does not generate text (encoder only): see the attention tab."
NO_CROSS = "A decoder-only model has no cross-attention: its prompt is part of the self-attention on the left."
NOTHING = "Nothing was generated."


def generated(output: Output) -> GeneratedText:
    """What a run generated for one sentence: its answer, or a language model's continuation."""
    return output.continuation if isinstance(output, NextTokens) else output


@dataclass(frozen=True)
class GenerationInputs:
    message: str | None  # why there is nothing to draw, or None
    view: View
    queries: list[str]  # "→ token" per generated token
    self_rows: np.ndarray | None  # (N, K) decoder self-attention of each step
    keys: list[str]  # the K tokens read so far
    reached: np.ndarray | None  # (N, K) True where step t had already seen key k
    cross_rows: np.ndarray | None  # (N, S) cross-attention of each step; None for decoder-only models
    sources: list[str]
    greedy: str = ""  # a sampled Run: what greedy decoding writes instead (run.greedy), beside the drawn answer


def generation_inputs(cmp: Comparison, view: View) -> GenerationInputs:
    run, b = cmp.toggled, view.row
    if not run.generations:
        return GenerationInputs(NOT_GENERATING, view, [], None, [], None, None, [])
    gen, gb = run.generations[b]
    if not gen.steps:
        return GenerationInputs(NOTHING, view, [], None, [], None, None, [])
    out = generated(run.outputs[b])
    n = len(out.ids)
    self_rows = gen.attention_matrix("decoder", view.layer, gb)[view.head, :n].float().cpu().numpy()  # (N, K)
    start = gen.prefix.shape[1] - len(gen.steps)  # prefix length before the first step
    prefix = [int(i) for i in gen.prefix[gb, : self_rows.shape[1]].tolist()]
    # A decoder-only prompt keeps the labels it got from its text; the rest are labels of ids.
    prompt = cmp.inputs.labels[b] if "cross" not in run.attentions else []
    keys = list(prompt) + cmp.codec.labels(prefix[len(prompt):])
    reached = np.arange(self_rows.shape[1])[None, :] < start + np.arange(n)[:, None]  # (N, K) keys read so far
    cross, sources = None, []
    if "cross" in run.attentions:
        cross = gen.attention_matrix("cross", view.layer, gb)[view.head, :n].float().cpu().numpy()  # (N, S)
        sources = run.keys["cross"][b][: cross.shape[1]]
    greedy = ""
    if cmp.greedy is not None and cmp.sampling is not None:  # the drawn answer beside the greedy one
        greedy = (f"drawn ({sampling_words(cmp.sampling).removeprefix('sampled: ')}): “{printable(out.text)}” · greedy "
                  f"(Sample off, every head on): “{printable(cmp.greedy[b].text)}”")
    return GenerationInputs(None, view, [f"→ {label}" for label in out.labels] or ["→"], self_rows, keys, reached,
                            cross, sources, greedy)


def self_figure(inp: GenerationInputs) -> Any:
    """Decoder self-attention per generated token."""
    if inp.message is not None:
        return viz.message_figure(inp.message)
    layer, head = inp.view.layer, inp.view.head
    title = f"Decoder self-attention per generated token (layer {layer}, head {head})"
    if inp.greedy:  # token text: escaped for Plotly's pseudo-HTML
        title += f"<br><sup>{viz.escape(inp.greedy)}</sup>"
    return viz.head_heatmap(inp.self_rows, inp.queries, inp.keys, mask=inp.reached, title=title,
                            x_title="tokens so far (key)", y_title="generated token (query)")


def cross_figure(inp: GenerationInputs) -> Any:
    """Cross-attention per generated token (a message for decoder-only models)."""
    if inp.message is not None or inp.cross_rows is None:
        return viz.message_figure(inp.message or NO_CROSS)
    layer, head = inp.view.layer, inp.view.head
    return viz.cross_attention_heatmap(inp.cross_rows, inp.queries, inp.sources,
                                       title=f"Cross-attention per generated token (layer {layer}, head {head})")


GENERATION = Reduction("generation", generation_inputs)


@dataclass
class GenerationParts:
    generation_self: gr.Plot
    generation_cross: gr.Plot  # shown for models with cross-attention only


class GenerationTab(Tab):
    id = "generation"
    title = "Generation"
    result = "gen-self"
    help = ("How the model wrote its answer, one token at a time. The answer one token per row: which earlier tokens "
            "the chosen head read when writing it (and, in an "
            "encoder-decoder model, which source tokens: on the right).")
    figures = (RunFigure("generation_self", GENERATION, self_figure, api_order=6),
               RunFigure("generation_cross", GENERATION, cross_figure, api_order=7))

    def layout(self, start: Any) -> GenerationParts:
        cross = start.info is None or "cross" in start.info.kinds
        with gr.Row():
            generation_self = gr.Plot(label="Decoder self-attention per generated token", show_label=False,
                                      elem_id="gen-self")
            # Without cross-attention the self-attention plot has the whole row (a half-width plot cannot label a
            # 1,000-token prompt's keys).
            generation_cross = gr.Plot(label="Cross-attention per generated token", show_label=False,
                                       elem_id="gen-cross", visible=cross)
        return GenerationParts(generation_self, generation_cross)

    def model_updates(self, parts: GenerationParts, info: Any) -> dict:
        return {parts.generation_cross: gr.update(visible="cross" in info.kinds)}


TAB = GenerationTab()

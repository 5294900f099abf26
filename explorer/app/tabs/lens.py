"""The Lens tab (language models: a decoder-only model, or the decoder of an encoder-decoder): what each layer's
residual stream would predict if the model stopped there (explorer.interpret.lens), on sentence 1 as the model
reads it (a sequence model: prompt or source and its own greedy answer; explorer.app.run.readings).

Shapes: L layers, T decoder positions. The lens has L + 1 rows (the embeddings, then each layer's output); its
last row is the model's own prediction.

Named event (the HTTP API, docs/http-api.md): /lens, its parameters the fields of `LensForm`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import plotly.graph_objects as go
import torch

from ... import viz
from ...checkpoints import LoadedModel
from ...interpret import LogitLens, logit_lens
from ..forms import endpoint, form_inputs
from ..page.assets import plot
from ..run.inputs import codec_for
from ..run.readings import read_texts
from ..serving.errors import AppError, escape_md
from ..serving.handlers import reporting
from .base import Tab, TabEvents


NOT_A_LANGUAGE_MODEL = ("The logit lens reads a language model's residual stream through its unembedding; "
                        "this is an encoder without a next-token output. Load a decoder or an encoder-decoder.")


def first_layer_on_top(lens: LogitLens, position: int = -1) -> int:
    """The first lens row from which the model's final prediction at `position` stays the top token (0 = the
    embeddings; the last row, the output, always has it on top)."""
    ranks = lens.final_rank[:, 0, position].tolist()  # (L + 1,)
    first = len(ranks) - 1
    while first > 0 and ranks[first - 1] == 0:
        first -= 1
    return first


def lens_markdown(lens: LogitLens, labels: list[str], token_text: str) -> str:
    ranks = lens.final_rank[:, 0, -1].tolist()  # rank of the final prediction after the last token, per row
    first = first_layer_on_top(lens)
    where = "the embeddings" if first == 0 else f"the output of layer {first - 1}"
    return (f"After the last token ({escape_md(labels[-1])}) the model predicts **{escape_md(token_text)}** "
            f"(p = {float(lens.final_probs[-1, 0, -1]):.3f}); it is the top token from {where} on. Its rank per "
            f"row (embeddings, then layers 0..{len(ranks) - 2}): {', '.join(str(int(r)) for r in ranks)}.")


@torch.inference_mode()
def lens_view(loaded: LoadedModel, text: str | None, max_tokens: int) -> tuple[go.Figure, str]:
    """The lens figure on sentence 1 and a one-paragraph summary of the last position."""
    if loaded.arch == "encoder":
        raise AppError(NOT_A_LANGUAGE_MODEL)
    reading = read_texts(loaded, text, None, max_tokens)[0]
    src, tgt = reading.tensors(loaded.model.device)
    lens = logit_lens(loaded.model, src, tgt, padding=False)
    labels = reading.decoder_labels
    final = int(lens.final_ids[0, -1])
    codec = codec_for(loaded)
    fig = viz.lens_figure(lens, labels, title=f"Logit lens on sentence 1 ({len(labels)} positions)",
                          token_text=lambda i: codec.labels([i])[0])
    return fig, lens_markdown(lens, labels, codec.labels([final])[0])

@dataclass(frozen=True)
class LensForm:
    """/lens: every layer's prediction on sentence 1 (as the model reads it)."""

    session: Any
    sentence1: Any
    lang: Any = "en"  # the page's language: what the tab refuses is said in it (i18n.messages)


@dataclass(frozen=True)
class LensRequest:
    text: str


def lens(loaded: LoadedModel, request: LensRequest, max_tokens: int) -> tuple[Any, str]:
    fig, md = lens_view(loaded, request.text, max_tokens)
    return plot(fig), md


@dataclass
class LensParts:
    lens_btn: gr.Button
    summary: gr.Markdown
    lens_plot: gr.Plot


class LensEvents(TabEvents):
    parts: LensParts

    @reporting
    def read(self, form: LensForm) -> dict:
        fig, md = self.compute.call(lens, form.session, LensRequest(str(form.sentence1 or "")))
        return {self.status: "", self.parts.summary: md, self.parts.lens_plot: fig}


class LensTab(Tab):
    id = "lens"
    title = "Lens"
    result = "lens-summary"
    help = ("What the model would answer if it stopped after each layer. Each layer's residual stream read through the "
            "model's final norm and unembedding: the top token per "
            "layer and position (colour: its probability), and the rank of the final prediction per layer.")
    button = "lens-run"

    def shown_for(self, info: Any) -> bool:
        return info is None or "decoder" in info.kinds  # a next-token output to read

    def layout(self, start: Any) -> LensParts:
        lens_btn = gr.Button("Read every layer", variant="primary", elem_id="lens-run")
        summary = gr.Markdown(elem_id="lens-summary")
        lens_plot = gr.Plot(label="Logit lens", show_label=False, elem_id="lens-plot")
        return LensParts(lens_btn, summary, lens_plot)

    def wire(self, parts: LensParts, app: Any) -> Any:
        ev = LensEvents(app, parts)
        parts.lens_btn.click(endpoint(LensForm, ev.read, "lens"), form_inputs(LensForm, app.page),
                             [app.status, parts.summary, parts.lens_plot], api_name="lens",
                             api_description="Logit lens: the top token after each layer, and the final "
                                             "prediction's rank per layer.")
        return ev

    def model_updates(self, parts: LensParts, info: Any) -> dict:
        return {parts.summary: "", parts.lens_plot: None}


TAB = LensTab()

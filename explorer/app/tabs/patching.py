"""The Patching tab: which heads (and which residual-stream positions) carry the difference between sentence 1
(clean) and sentence 2 (corrupted), by activation patching (explorer.interpret.patching).

Shapes: L layers, H heads, T decoder positions. The metric is the logit difference between two answer tokens
at the last position (defaults: the clean run's top token against the corrupted run's; the person may type
others); each head's share is how much of the clean-minus-corrupted difference patching its clean output (z,
before W_o) into the corrupted run restores. A sequence model is read at the place its two answers part
(explorer.app.run.readings): both decoders read the answers' common prefix.

Named event (the HTTP API, docs/http-api.md): /patching, its parameters the fields of `PatchingForm`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import plotly.graph_objects as go
import torch

from ... import viz
from ...checkpoints import LoadedModel
from ...interpret.patching import Patching, activation_patching
from ..forms import endpoint, form_inputs
from ..page.assets import plot
from ..run.inputs import codec_for
from ..run.readings import Reading, read_texts, token_id
from ..serving.errors import AppError, escape_md
from ..serving.handlers import reporting
from .base import Tab, TabEvents


NEEDS_DECODER = ("Activation patching compares next-token logits at the last position, so it needs a language "
                 "model (a decoder, or an encoder-decoder); this is an encoder.")
NEEDS_TWO = "Type the corrupted sentence in the second box (sentence 1 is the clean run, sentence 2 the corrupted)."


def check_lengths(clean: Reading, corrupted: Reading) -> None:
    n1, n2 = len(clean.decoder_ids), len(corrupted.decoder_ids)
    if n1 != n2:
        what = "tokens" if clean.tgt is None else "decoder tokens"
        raise AppError(f"Sentence 1 has {n1} {what} and sentence 2 has {n2}: activation patching replaces "
                       "activations position by position, so both need the same number. Change one sentence.")


def last_top(loaded: LoadedModel, reading: Reading) -> int:
    """The model's top next token after the reading's last position."""
    src, tgt = reading.tensors(loaded.model.device)
    return int(loaded.model(src, tgt, padding=False, need_weights=False).logits[0, -1].argmax())


def answers_of(loaded: LoadedModel, clean: Reading, corrupted: Reading, clean_answer: str | None,
               corrupted_answer: str | None) -> tuple[int, int] | None:
    """Typed answer tokens -> ids; a blank one is that run's top token; both blank -> None (the default)."""
    typed = token_id(loaded, clean_answer, "clean answer"), token_id(loaded, corrupted_answer, "corrupted answer")
    if typed == (None, None):
        return None
    return (typed[0] if typed[0] is not None else last_top(loaded, clean),
            typed[1] if typed[1] is not None else last_top(loaded, corrupted))


def best_head(p: Patching) -> tuple[str, int, int, float]:
    """The head whose clean output restores most of the difference, over every kind patched: (kind, layer, head,
    share). Self-attention is the decoder's (an encoder-decoder's) or the model's one stack."""
    kinds = [("self-attention", p.heads)] + ([("cross-attention", p.cross)] if p.cross is not None else [])
    found = []
    for kind, shares in kinds:
        layer, head = divmod(int(shares.flatten().argmax()), shares.shape[1])
        found.append((kind, layer, head, float(shares[layer, head])))
    return max(found, key=lambda f: f[3])


def patching_markdown(loaded: LoadedModel, p: Patching) -> str:
    labels = codec_for(loaded).labels(list(p.answers))
    kind, layer, head, share = best_head(p)
    where = f"{kind} " if p.cross is not None else ""
    lines = [f"Metric: logit({escape_md(labels[0])}) − logit({escape_md(labels[1])}) at the last position: clean "
             f"**{p.clean:.3f}**, corrupted **{p.corrupted:.3f}**.",
             f"The head whose clean output restores most of it: **{where}L{layer} H{head}** ({share:.2f} of the "
             "difference)."]
    return "\n\n".join(lines)


@torch.inference_mode()
def patching_view(loaded: LoadedModel, text1: str | None, text2: str | None, clean_answer: str | None,
                  corrupted_answer: str | None, max_tokens: int) -> tuple[go.Figure, str]:
    """Patch sentence 1's activations into sentence 2's run; the heads and residual maps and a summary."""
    if loaded.arch == "encoder":
        raise AppError(NEEDS_DECODER)
    if not (text2 or "").strip():
        raise AppError(NEEDS_TWO)
    clean, corrupted = read_texts(loaded, text1, text2, max_tokens, common_answer=True)
    check_lengths(clean, corrupted)
    answers = answers_of(loaded, clean, corrupted, clean_answer, corrupted_answer)
    (src1, tgt1), (src2, tgt2) = clean.tensors(loaded.model.device), corrupted.tensors(loaded.model.device)
    try:
        if tgt1 is None:
            p = activation_patching(loaded.model, src1[0], src2[0], answers=answers)
        else:
            p = activation_patching(loaded.model, tgt1[0], tgt2[0], answers=answers, src=(src1[0], src2[0]))
    except ValueError as err:  # the metric is undefined (e.g. both runs predict the same token): say why
        raise AppError(f"Activation patching cannot run on these sentences: {err}. Type two different answer "
                       "tokens above, or change a sentence.") from err
    answer_labels = tuple(codec_for(loaded).labels(list(p.answers)))
    return viz.patching_figure(p, clean.decoder_labels, answer_labels=answer_labels), patching_markdown(loaded, p)

@dataclass(frozen=True)
class PatchingForm:
    """/patching: sentence 1 = clean, sentence 2 = corrupted; answer tokens blank = each run's top token."""

    session: Any
    sentence1: Any
    sentence2: Any
    clean_answer: Any
    corrupted_answer: Any
    lang: Any = "en"  # the page's language: what the tab refuses is said in it (i18n.messages)


@dataclass(frozen=True)
class PatchingRequest:
    clean: str
    corrupted: str
    clean_answer: str
    corrupted_answer: str


def patching(loaded: LoadedModel, request: PatchingRequest, max_tokens: int) -> tuple[Any, str]:
    fig, md = patching_view(loaded, request.clean, request.corrupted, request.clean_answer,
                            request.corrupted_answer, max_tokens)
    return plot(fig), md


@dataclass
class PatchingParts:
    clean_answer: gr.Textbox
    corrupted_answer: gr.Textbox
    patch_btn: gr.Button
    summary: gr.Markdown
    patch_plot: gr.Plot


class PatchingEvents(TabEvents):
    parts: PatchingParts

    @reporting
    def patched(self, form: PatchingForm) -> dict:
        request = PatchingRequest(str(form.sentence1 or ""), str(form.sentence2 or ""), str(form.clean_answer or ""),
                                  str(form.corrupted_answer or ""))
        fig, md = self.compute.call(patching, form.session, request)
        return {self.status: "", self.parts.summary: md, self.parts.patch_plot: fig}


class PatchingTab(Tab):
    id = "patching"
    title = "Patching"
    result = "patching-summary"
    help = ("Which heads carry the difference between two sentences that differ in one word. Sentence 1 "
            "is the clean run, sentence 2 the corrupted one (same number of tokens). Each cell: the share "
            "of the clean-minus-corrupted logit difference of the two answer tokens that patching that head's output "
            "(left) or the residual stream at that layer and position (right) restores.")
    button = "patch-run"

    def layout(self, start: Any) -> PatchingParts:
        with gr.Row(equal_height=True):
            clean = gr.Textbox(label="Clean answer token", max_lines=1, placeholder="blank: sentence 1's top token (or "
                               "#id)", elem_id="clean-answer", min_width=150)
            corrupted = gr.Textbox(label="Corrupted answer token", max_lines=1, placeholder="blank: sentence 2's top "
                                   "token (or #id)", elem_id="corrupted-answer", min_width=150)
            patch_btn = gr.Button("Patch", variant="primary", elem_id="patch-run", min_width=100)
        summary = gr.Markdown(elem_id="patching-summary")
        patch_plot = gr.Plot(label="Activation patching", show_label=False, elem_id="patching-plot")
        return PatchingParts(clean, corrupted, patch_btn, summary, patch_plot)

    def wire(self, parts: PatchingParts, app: Any) -> Any:
        ev = PatchingEvents(app, parts)
        parts.patch_btn.click(endpoint(PatchingForm, ev.patched, "patching"),
                              form_inputs(PatchingForm, app.page, own=parts),
                              [app.status, parts.summary, parts.patch_plot], api_name="patching",
                              api_description="Activation patching: how much of the clean answer each head or "
                                              "position restores when patched into the corrupted run.")
        return ev

    def model_updates(self, parts: PatchingParts, info: Any) -> dict:
        return {parts.summary: "", parts.patch_plot: None}


TAB = PatchingTab()

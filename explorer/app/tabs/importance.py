"""The Importance tab: how much the model's output moves when each head is switched off alone (exact sweep), next to
the one-pass gradient estimate (explorer.interpret.importance). The objective follows the model's task: the
log-probability of its own answer, the predicted class, or the sentence embeddings.

Named event (the HTTP API, docs/http-api.md): /importance, its parameters the fields of `ImportanceForm`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import plotly.graph_objects as go
import torch

from ... import viz
from ...batching import pad_rows
from ...checkpoints import LoadedModel
from ...interpret.importance import IGNORE, HeadImportance, Probe, head_importance
from ..forms import PageText, endpoint, form_inputs
from ..page.assets import plot
from ..run.inputs import pad_id_of, row_mask
from ..run.pair import compare
from ..run.toggles import Toggles, custom_mask
from ..run.view import KIND_TITLES
from ..serving.handlers import reporting
from .base import Tab, TabEvents

ANSWER = "log-probability of the model's own answer"


def make_probe(loaded: LoadedModel, rows: list[list[int]], answers: list[list[int]], toggles: Toggles
               ) -> tuple[Probe, str]:
    """The probe (inputs and objective) for this model's task, and its description."""
    c, device, pad = loaded.config, loaded.model.device, pad_id_of(loaded)
    common = dict(padding=toggles.padding, causal=toggles.causal)
    if c.arch == "encoder-decoder":
        bos = loaded.task.get("bos_id", loaded.target_tokenizer.bos_id)
        decoded = [[bos, *a] for a in answers]
        full, target = pad_rows(decoded, pad, device), pad_rows(decoded, IGNORE, device)
        src = pad_rows(rows, pad, device)
        return Probe(src, "logprob", tgt_in=full[:, :-1], tgt_out=target[:, 1:], key_mask=row_mask(rows, device),
                     attn_mask=custom_mask(toggles, src.shape[1], device)[0], **common), ANSWER
    if c.arch == "decoder":
        seqs = [[*r, *a] for r, a in zip(rows, answers)]
        full = pad_rows(seqs, pad, device)
        target = pad_rows([[IGNORE] * len(r) + list(a) for r, a in zip(rows, answers)], IGNORE, device)
        return Probe(full[:, :-1], "logprob", tgt_out=target[:, 1:], key_mask=row_mask(seqs, device)[:, :-1],
                     attn_mask=custom_mask(toggles, full.shape[1] - 1, device)[0], **common), ANSWER
    src = pad_rows(rows, pad, device)
    if c.num_classes:
        objective, what = "class", "log-probability of the predicted class"
    elif len(rows) == 2:
        objective, what = "similarity", "cosine similarity of the two sentences"
    else:
        objective, what = "embedding", "the sentence embedding (projection on its baseline)"
    return Probe(src, objective, padding=toggles.padding, key_mask=row_mask(rows, device),
                 attn_mask=custom_mask(toggles, src.shape[1], device)[0]), what


def summary(result: HeadImportance, kind: str, what: str) -> str:
    exact = result.exact[kind]
    top_layer, top_head = divmod(int(exact.abs().flatten().argmax()), exact.shape[1])
    return (f"Objective: {what}; baseline value {result.baseline:.4f}. The head whose removal changes it most in "
            f"the {KIND_TITLES[kind]} is **L{top_layer} H{top_head}** "
            f"(change {float(exact[top_layer, top_head]):+.4f}). "
            f"Rank agreement of the gradient estimate with the exact sweep (Spearman, all kinds): "
            f"{result.rank_correlation:.2f}.")


def importance_view(loaded: LoadedModel, text1: str | None, text2: str | None, toggles: Toggles, kind: str,
                    max_tokens: int) -> tuple[go.Figure, str]:
    """The chart for one attention kind and its Markdown summary (masks from `toggles`, every head on)."""
    with torch.inference_mode():
        cmp = compare(loaded, text1, text2, Toggles(), max_tokens)
    probe, what = make_probe(loaded, cmp.inputs.rows, cmp.baseline.decoder_rows, toggles)
    result = head_importance(loaded.model, probe)
    kind = kind if kind in result.exact else next(iter(result.exact))
    fig = viz.head_importance_chart(result.exact[kind].cpu(), result.estimate[kind].cpu(), result.rank_correlation,
                                    title=f"Head importance: {KIND_TITLES[kind]}")
    return fig, summary(result, kind, what)

@dataclass(frozen=True)
class ImportanceForm:
    """/importance: the page's sentences and masks (every head on) and the attention kind ranked."""

    session: Any
    text: PageText
    kind: Any
    lang: Any = "en"  # the page's language: what the tab refuses is said in it (i18n.messages)


@dataclass(frozen=True)
class ImportanceRequest:
    text1: str
    text2: str
    toggles: Toggles  # the masks (every head on)
    kind: str


def importance(loaded: LoadedModel, request: ImportanceRequest, max_tokens: int) -> tuple[Any, str]:
    fig, md = importance_view(loaded, request.text1, request.text2, request.toggles, request.kind, max_tokens)
    return plot(fig), md


@dataclass
class ImportanceParts:
    rank_btn: gr.Button
    summary: gr.Markdown
    importance_plot: gr.Plot


class ImportanceEvents(TabEvents):
    parts: ImportanceParts

    @reporting
    def ranked(self, form: ImportanceForm) -> dict:
        text = form.text
        request = ImportanceRequest(str(text.sentence1 or ""), str(text.sentence2 or ""), text.masks(),
                                    str(form.kind or ""))
        fig, md = self.compute.call(importance, form.session, request)
        return {self.status: "", self.parts.summary: md, self.parts.importance_plot: fig}


class ImportanceTab(Tab):
    id = "importance"
    title = "Importance"
    result = "importance-plot"
    help = ("Which heads the output needs most. How much the output moves when each head alone is switched off (exact) "
            "and a one-pass gradient "
            "estimate of it (Michel et al., 2019).")
    button = "imp-run"

    def layout(self, start: Any) -> ImportanceParts:
        rank_btn = gr.Button("Rank the heads for the current sentences", variant="primary", elem_id="imp-run")
        summary = gr.Markdown()
        importance_plot = gr.Plot(label="Head importance", show_label=False, elem_id="importance-plot")
        return ImportanceParts(rank_btn, summary, importance_plot)

    def wire(self, parts: ImportanceParts, app: Any) -> Any:
        ev = ImportanceEvents(app, parts)
        parts.rank_btn.click(endpoint(ImportanceForm, ev.ranked, "importance"), form_inputs(ImportanceForm, app.page),
                             [app.status, parts.summary, parts.importance_plot], api_name="importance",
                             api_description="Which heads the output needs most: its change when each head alone "
                                             "is off, and a gradient estimate.")
        return ev

    def model_updates(self, parts: ImportanceParts, info: Any) -> dict:
        return {parts.summary: "", parts.importance_plot: None}


TAB = ImportanceTab()

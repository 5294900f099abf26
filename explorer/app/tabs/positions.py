"""The Positions tab: the loaded model's own positional scheme, named and explained, with its figures
(explorer.positions: learned tables, Marian's or the built models' sinusoid, rotary frequencies and score by
distance, T5's relative bias per head and distance), and the sinusoidal table of *Attention Is All You Need* for the
numbers the person picks. Drawn after every model change (and the page's first Run), and by its Show button.

Named event (the HTTP API, docs/http-api.md): /positional, its parameters the fields of `PositionalForm`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import plotly.graph_objects as go

from ... import positions, viz
from ...checkpoints import LoadedModel
from ..forms import endpoint, form_inputs
from ..link.values import whole
from ..page.assets import plot
from ..serving.errors import escape_md
from ..serving.handlers import PRIVATE, reporting
from ..serving.limits import POSITIONAL_D_MODEL, POSITIONAL_LENGTH, positional_args
from ..serving.session import Session
from .base import LinkKey, Tab, TabEvents

MODEL_FIGURES = 4  # plots the tab keeps for the model's own scheme (BART's learned tables: 2 per stack)
SCHEME_NAMES = {"learned": "learned position table", "sinusoidal": "sinusoidal positions",
                "rotary": "rotary positions (RoPE)", "relative": "T5's relative position bias",
                "none": "no positional encoding"}


@dataclass(frozen=True)
class PositionalView:
    heat: go.Figure  # the textbook sinusoid: position x dimension
    curves: go.Figure  # some of its dimensions over position
    similarity: go.Figure  # which positions get similar vectors
    scheme: str  # Markdown: which scheme the loaded model uses, and what that means
    model: list[go.Figure]  # the model's own figures, at most MODEL_FIGURES (at least one)


TITLE_CHARS = 62  # a title longer than this is cut off at half the page's width: it is broken onto two lines


def fit_title(fig: go.Figure) -> go.Figure:
    """Break a long title at its last ", " or " (" before TITLE_CHARS, with room for the second line."""
    title = fig.layout.title.text or ""
    if len(title) <= TITLE_CHARS:
        return fig
    cut = max(title.rfind(", ", 0, TITLE_CHARS), title.rfind(" (", 0, TITLE_CHARS))
    if cut <= 0:
        return fig
    top = (fig.layout.margin.t if fig.layout.margin.t is not None else 60) + 18
    return fig.update_layout(title_text=title[:cut + 1] + "<br>" + title[cut + 1:].lstrip(), margin_t=top)


def model_scheme(loaded: LoadedModel | None, length: int) -> tuple[str, list[go.Figure]]:
    """(Markdown naming the loaded model's scheme, its figures)."""
    if loaded is None:
        return "No model loaded.", [viz.message_figure("No model loaded.")]
    own = positions.positional_figures(loaded, length)
    text = f"**This model uses {SCHEME_NAMES.get(own.scheme, own.scheme)}.** {escape_md(own.explanation)}"
    figures = [fit_title(f) for f in list(own.figures.values())[:MODEL_FIGURES]]
    if not figures:
        figures = [viz.message_figure(f"The loaded model has no positional encoding (positional='{own.scheme}').")]
    return text, figures


def positional_view(loaded: LoadedModel | None, d_model: object, length: object, base: object) -> PositionalView:
    """The tab for the picked numbers (checked: AppError for one out of range) and the loaded model."""
    d_model, length, base = positional_args(d_model, length, base)
    table = viz.sinusoidal_table(length, d_model, base)
    scheme, figures = model_scheme(loaded, length)
    return PositionalView(viz.positional_heatmap(table, title=f"Sinusoidal encoding (base {base:g})"),
                          viz.positional_curves(table), viz.position_similarity(table), scheme, figures)

@dataclass(frozen=True)
class PositionalForm:
    """/positional: the textbook sinusoid's numbers (and the session's model's own scheme)."""

    session: Any
    d_model: Any
    positions: Any
    base: Any
    lang: Any = "en"  # the page's language: what the tab refuses is said in it (i18n.messages)


def draw(view: PositionalView) -> PositionalView:
    """The view's figures as plot JSON (they may come from a GPU worker: explorer.app.serving.compute)."""
    return PositionalView(plot(view.heat), plot(view.curves), plot(view.similarity), view.scheme,
                          [plot(f) for f in view.model])


def positional(loaded: LoadedModel | None, numbers: tuple[Any, Any, Any], max_tokens: int) -> PositionalView:
    """The tab's figures (as plot JSON) for the picked (d_model, positions, base) and the loaded model, if any."""
    return draw(positional_view(loaded, *numbers))


@dataclass
class PositionsParts:
    d_model: gr.Number
    length: gr.Number
    base: gr.Number
    show_btn: gr.Button
    scheme: gr.Markdown  # which scheme the loaded model uses
    model_plots: list[gr.Plot]  # the model's own figures (MODEL_FIGURES)
    heat: gr.Plot
    similarity: gr.Plot
    curves: gr.Plot

    def outputs(self, status: Any) -> list[Any]:
        """/positional's outputs: the first four figures as they always were, then the scheme and the model's other
        figures."""
        return [status, self.heat, self.curves, self.similarity, self.model_plots[0], self.scheme,
                *self.model_plots[1:]]


class PositionsEvents(TabEvents):
    parts: PositionsParts

    @reporting
    def shown(self, form: PositionalForm) -> dict:
        session = form.session if isinstance(form.session, Session) else None
        view = self.compute.call_optional(positional, session, (form.d_model, form.positions, form.base))
        p = self.parts
        own = {slot: gr.update(value=fig, visible=True) for slot, fig in zip(p.model_plots[1:], view.model[1:])}
        unused = {slot: gr.update(value=None, visible=False) for slot in p.model_plots[1:] if slot not in own}
        return {self.status: "", p.heat: view.heat, p.curves: view.curves, p.similarity: view.similarity,
                p.model_plots[0]: view.model[0], p.scheme: view.scheme, **own, **unused}

    def after_run(self, form: PositionalForm) -> dict:
        """Drawn again after a model change and its first Run: the status line keeps what the Run said (its notices)
        unless this fails."""
        updates = self.shown(form)
        if not updates.get(self.status):
            updates.pop(self.status, None)
        return updates


def d_model_key(text: str, check_model: Any) -> int:
    return whole(text, *POSITIONAL_D_MODEL)


def length_key(text: str, check_model: Any) -> int:
    return whole(text, *POSITIONAL_LENGTH)


class PositionsTab(Tab):
    id = "positions"
    title = "Positions"
    result = "pe-model"
    computed_by = "each model change, and its Show button"
    help = ("How the model knows where each word is in the sentence. The loaded model's own positional scheme (learned "
            "table, sinusoid, rotary or T5's relative bias), then "
            "the textbook sinusoid for the numbers above.")
    link_keys = (LinkKey("pe_d", "d_model", d_model_key,
                         f"the textbook sinusoid's d_model, {POSITIONAL_D_MODEL[0]} to {POSITIONAL_D_MODEL[1]:,}"),
                 LinkKey("pe_len", "length", length_key,
                         f"its number of positions, {POSITIONAL_LENGTH[0]} to {POSITIONAL_LENGTH[1]:,}"))

    def layout(self, start: Any) -> PositionsParts:
        with gr.Row():
            d_model = gr.Number(64, label="d_model", precision=0, minimum=POSITIONAL_D_MODEL[0],
                                maximum=POSITIONAL_D_MODEL[1])
            length = gr.Number(64, label="positions", precision=0, minimum=POSITIONAL_LENGTH[0],
                               maximum=POSITIONAL_LENGTH[1])
            base = gr.Number(10000, label="base", minimum=1.01)
            show_btn = gr.Button("Show", variant="primary")
        scheme = gr.Markdown(elem_id="pe-scheme")
        plots = []
        for row in range(MODEL_FIGURES // 2):
            with gr.Row():
                for n in (2 * row + 1, 2 * row + 2):
                    suffix = "" if n == 1 else str(n)
                    plots.append(gr.Plot(label=f"The loaded model's positions{f' ({n})' if suffix else ''}",
                                         show_label=False, elem_id=f"pe-model{suffix}"))
        gr.Markdown("**The textbook sinusoid** of *Attention Is All You Need* for the d_model, positions and base "
                    "above (position × dimension), and which positions get similar vectors.", elem_classes="tab-text")
        with gr.Row():
            heat = gr.Plot(label="Encoding", show_label=False, elem_id="pe-heat")
            similarity = gr.Plot(label="Similarity of positions", show_label=False, elem_id="pe-sim")
        curves = gr.Plot(label="Some dimensions over position", show_label=False, elem_id="pe-curves")
        return PositionsParts(d_model, length, base, show_btn, scheme, plots, heat, similarity, curves)

    def inputs(self, parts: PositionsParts, app: Any) -> list[Any]:
        return form_inputs(PositionalForm, app.page, own={**vars(parts), "positions": parts.length})

    def wire(self, parts: PositionsParts, app: Any) -> Any:
        ev = PositionsEvents(app, parts)
        parts.show_btn.click(endpoint(PositionalForm, ev.shown, "positional"), self.inputs(parts, app),
                             parts.outputs(app.status), api_name="positional",
                             api_description="The textbook sinusoidal encoding for d_model and positions, and the "
                                             "loaded model's own positions.")
        return ev

    def after_model_change(self, parts: PositionsParts, app: Any, ran: Any) -> None:
        ev = PositionsEvents(app, parts)
        ran.then(endpoint(PositionalForm, ev.after_run, "positional_after_run"), self.inputs(parts, app),
                 parts.outputs(app.status), **PRIVATE)


TAB = PositionsTab()

"""The Compare models tab: a second model beside the page's (chosen by name, or with the first by a suggested pair),
with its own attention kind, layer, head and head switches; both run on the page's sentences, masks and sentence
choice (explorer.app.tabs.compare.side_by_side), both held in the registry while they run.

Named events (the HTTP API, docs/compare.md): /set_model2 (the second model: its head switches' labels, as
/load_model for the first) and /compare_models, their parameters the fields of `SecondModelForm` and `CompareForm`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from ...forms import endpoint, form_inputs, form_of
from ...link.values import Invalid
from ...page.assets import plot
from ...page.head_labels import head_labels
from ...page.head_switches import switch_updates
from ...page.model_panel import Start
from ...page.settings import HEAD_GROUPS
from ...run.request_memory import analysis_bytes
from ...run.view import default_kind
from ...serving.errors import escape_md, user_message
from ...serving.handlers import PRIVATE, reporting
from ...serving.session import Session, load_session, models_held, second_session
from ..base import LinkKey, Tab, TabEvents
from .forms import CompareForm, ModelPair, SecondModelForm
from .side_by_side import ComparisonRequest, compare_held

SIDE_WIDTH = 560  # px of a side's plots in a 1280 px wide page (half the views column)
# (label, "first|second"): pairs worth comparing; gpt2 / distilgpt2 are Hub ids (downloaded once, if online).
PAIRS = (("gpt2 vs distilgpt2", "openai-community/gpt2|distilbert/distilgpt2"),
         ("date-translator vs date-gpt", "date-translator|date-gpt"))


@dataclass
class SideParts:
    """One model's column: heading (name, tokens, output summary), chosen head, All heads grid, output table."""

    md: gr.Markdown
    head: gr.Plot
    overview: gr.Plot
    output: gr.Dataframe


@dataclass
class CompareParts:
    model2: gr.Dropdown
    pair: gr.Dropdown
    compare_btn: gr.Button
    kind2: gr.Dropdown
    layer2: gr.Dropdown
    head2: gr.Dropdown
    all_on2: gr.Button
    heads2: dict[str, gr.CheckboxGroup]  # kind -> the second model's head switches
    summary: gr.Markdown
    sides: tuple[SideParts, SideParts]

    @property
    def head_groups2(self) -> list[gr.CheckboxGroup]:
        return [self.heads2[k] for k, _, _ in HEAD_GROUPS]

    def second(self) -> list[Any]:
        """What setting the second model changes: /set_model2's outputs after the status line."""
        return [self.model2, self.kind2, self.layer2, self.head2, *self.head_groups2]


def side(n: int) -> SideParts:
    with gr.Column(min_width=300):
        md = gr.Markdown(elem_id=f"compare{n}-md", elem_classes="compare-side")
        head = gr.Plot(show_label=False, elem_id=f"compare{n}-head", label=f"Model {n}: the chosen head")
        overview = gr.Plot(show_label=False, elem_id=f"compare{n}-overview", label=f"Model {n}: all heads")
        output = gr.Dataframe(label=f"Model {n}: output", interactive=False, wrap=True, elem_id=f"compare{n}-output",
                              max_height=320)
    return SideParts(md, head, overview, output)


class CompareEvents(TabEvents):
    parts: CompareParts

    @reporting
    def compared(self, form: CompareForm) -> dict:
        """Both models on the sentences, each with its own view and switches, held together while they run."""
        second = second_session(form.model2, form.session)
        forms = form.side_forms()
        with models_held([form.session, second], self.ctx) as models:  # they count together against --model-memory
            requests = [f.request(s, m.config.attention_kinds()) for f, s, m in zip(forms, (form.session, second),
                                                                                     models)]
            # One Run after the other: the request memory of the larger one.
            need = max(analysis_bytes(m, r, self.ctx.max_tokens) for m, r in zip(models, requests))
            with self.ctx.gate.hold(need):
                comparison = ComparisonRequest(*requests, self.app.figure_set)  # the page's Run figures
                result = self.compute.call_held(compare_held, comparison.sessions, comparison)
        p = self.parts
        updates = {self.status: result.status, p.summary: result.summary()}
        for slot, one in zip(p.sides, result.sides):
            figures = one.figures(SIDE_WIDTH)
            updates.update({slot.md: one.heading(), slot.head: plot(figures["head"]),
                            slot.overview: plot(figures["overview"]),
                            slot.output: pd.DataFrame(one.output.rows, columns=one.output.headers)})
        return updates

    def second_model(self, session: Any, name: str) -> dict:
        """Set the second model from a string (the checks and loading of `load_session`; AppError if it cannot be
        had): the model box, its attention kind, layer and head choices, its head switches all on."""
        _, loaded = load_session(name, session.device if isinstance(session, Session) else None, self.ctx)
        kinds = loaded.config.attention_kinds()
        kind = default_kind(kinds)
        n_layers, n_heads = kinds[kind]
        p = self.parts
        return {self.status: f"Second model: {escape_md(name.strip())}.", p.model2: name.strip(),
                p.kind2: gr.update(choices=list(kinds), value=kind),
                p.layer2: gr.update(choices=list(range(n_layers)), value=0),
                p.head2: gr.update(choices=list(range(n_heads)), value=0), **switch_updates(p.heads2, kinds)}

    @reporting
    def set_second(self, form: SecondModelForm) -> dict:
        return self.second_model(form.session, str(form.model2 or ""))

    @reporting
    def load_pair(self, pair: Any, device: Any, text1: Any = None, text2: Any = None, shown: Any = None,
                  progress: Any = gr.Progress(track_tqdm=True)) -> dict:
        """A suggested pair (`ModelPair`): the page loads the first model (as any model change: the typed sentences
        stay, one it cannot read is named), the tab takes the second."""
        try:
            chosen = ModelPair.parse(pair)
        except ValueError:  # "Suggested pairs …" (no pair) or a value the dropdown does not offer
            return {self.status: gr.skip()}
        first_name, second_name = chosen.first, chosen.second
        session, loaded = load_session(first_name, device, self.ctx, progress)
        said = f"Comparing {escape_md(first_name)} with {escape_md(second_name)}."
        updates = self.app.models.changed_model(session, loaded, said, (text1, text2), shown)
        return {**self.second_model(session, second_name), **updates}

    def all_on(self, session: Any, model2: Any) -> dict:
        """The second model's head switches all on."""
        try:
            updates = self.second_model(session, str(model2 or ""))
        except Exception:  # noqa: BLE001 - nothing to switch on without a model; the comparison will say why
            return {g: gr.skip() for g in self.parts.head_groups2}
        return {g: updates[g] for g in self.parts.head_groups2}

    def compare_if_set(self, status: Any, *values: Any) -> dict:
        """After the second model was chosen: the comparison, unless choosing it failed (said on the status line)."""
        if str(status or "").startswith("⚠️"):
            return {self.status: gr.skip()}
        return self.compared(form_of(CompareForm, *values))

    def compare_if_shown(self, tab: Any, *values: Any) -> dict:
        """After a Run of the page (its model's controls changed): the comparison again when its tab is shown."""
        if tab != CompareTab.id:
            return {self.status: gr.skip()}
        return self.compared(form_of(CompareForm, *values))


def model2_key(text: str, check_model: Any) -> str:
    if len(text.strip()) > 300:
        raise Invalid("is longer than 300 characters")
    try:
        return check_model(text)
    except Exception as err:  # noqa: BLE001 - any refusal becomes the link's notice
        why = str(err)
        raise Invalid(f"cannot be opened: {why[:160]}{'…' if len(why) > 160 else ''}") from err


class CompareTab(Tab):
    id = "compare"
    title = "Compare models"
    result = "compare-summary"
    computed_by = "opening it, its Compare button, and each Run while it is shown"
    help = ("Two models side by side on the same text. Both take the page's sentences, masks and sentence "
            "choice; each reads the text with its own tokenizer, so each side labels its own tokens. Left: the model "
            "loaded for the page (its layer, head and "
            "head switches are the controls on the left); right: the second model, with its own below. Each side "
            "shows its chosen head, every head, and its output.")
    link_keys = (LinkKey("model2", "model2", model2_key, "a second model, same forms and checks as `model`"),)

    def layout(self, start: Start) -> CompareParts:
        kinds = start.second_kinds or {}
        first = next(iter(kinds.values()), (1, 1))
        with gr.Row(equal_height=True):
            model2 = gr.Dropdown(start.sources, value=start.second, label="Second model", allow_custom_value=True,
                                 elem_id="model2", min_width=220, scale=3,
                                 info="shipped name, Hub id or allowed folder")
            pair = gr.Dropdown([("Suggested pairs …", ""), *PAIRS], value="", label="Suggested pair (both models)",
                               elem_id="pair", min_width=200, scale=2)
            compare_btn = gr.Button("Compare", variant="primary", elem_id="compare-run", min_width=100, scale=1)
        with gr.Row(equal_height=True):
            kind2 = gr.Dropdown(list(kinds), value=default_kind(kinds) if kinds else None,
                                label="Second model: attention", elem_id="kind2", allow_custom_value=True,
                                min_width=150)
            layer2 = gr.Dropdown(list(range(first[0])), value=0, label="Layer", elem_id="layer2",
                                 allow_custom_value=True, min_width=70)
            head2 = gr.Dropdown(list(range(first[1])), value=0, label="Head", elem_id="head2", allow_custom_value=True,
                                min_width=70)
        with gr.Accordion("Second model's heads (checked = on)", open=False, elem_id="heads2"):
            all_on2 = gr.Button("All on", size="sm", min_width=60, elem_id="all-on2")
            heads2 = {}
            for k, label, eid in HEAD_GROUPS:
                labels = head_labels(*kinds[k]) if k in kinds else []
                heads2[k] = gr.CheckboxGroup(labels, value=labels, label=label, visible=bool(labels),
                                             elem_id=eid.replace("-heads", "2-heads"), elem_classes="heads")
        summary = gr.Markdown(elem_id="compare-summary")
        with gr.Row(equal_height=False):
            sides = (side(1), side(2))
        return CompareParts(model2, pair, compare_btn, kind2, layer2, head2, all_on2, heads2, summary, sides)

    def inputs(self, parts: CompareParts, app: Any) -> list[Any]:
        """/compare_models's inputs, in CompareForm's order."""
        own = {**vars(parts), **{f"{k}_heads_on2": g for k, g in parts.heads2.items()}}
        return form_inputs(CompareForm, app.page, own=own)

    def outputs(self, parts: CompareParts, app: Any) -> list[Any]:
        return [app.status, parts.summary, *(c for s in parts.sides for c in (s.md, s.head, s.overview, s.output))]

    def wire(self, parts: CompareParts, app: Any) -> Any:
        ev, page, p = CompareEvents(app, parts), app.page, parts
        inputs, outputs = self.inputs(p, app), self.outputs(p, app)
        compare = endpoint(CompareForm, ev.compared, "compare_models")
        p.compare_btn.click(compare, inputs, outputs, api_name="compare_models",
                            api_description="Two models on the same sentences, side by side: each one's chosen "
                                            "head, every head and its output.")
        again = dict(fn=compare, inputs=inputs, outputs=outputs, **PRIVATE)
        p.model2.input(endpoint(SecondModelForm, ev.set_second, "set_model2"), form_inputs(SecondModelForm, page, own=p),
                       [app.status, *p.second()], api_name="set_model2",
                       api_description="Choose /compare_models' second model: its attention kinds, layers, heads "
                                       "and head switches."
                       ).then(ev.compare_if_set, [app.status, *inputs], outputs, **PRIVATE)
        both = list({id(c): c for c in [*app.model_outputs, app.status, *p.second()]}.values())
        pair_inputs = [p.pair, page.model.device_in, page.setting("sentence1"), page.setting("sentence2"), page.kept]
        app.after_model(p.pair.input(ev.load_pair, pair_inputs, both, **PRIVATE)).then(**again)
        for trigger in (p.kind2.input, p.layer2.input, p.head2.input, *(g.input for g in p.head_groups2)):
            trigger(trigger_mode="always_last", **again)
        p.all_on2.click(ev.all_on, [page.session, p.model2], p.head_groups2, **PRIVATE).then(**again)
        app.selected[self.id].then(**again)  # the tab opened (the page's show_tab first)
        app.after_run.add(ev.compare_if_shown, [page.visible_tab, *inputs], outputs)
        return ev

    def restore_link(self, parts: CompareParts, app: Any, values: dict[str, Any]) -> tuple[dict, list[str]]:
        """A link's model2 sets the second model (its head switches all on); one that cannot be loaded is named."""
        if "model2" not in values:
            return {}, []
        try:
            updates = CompareEvents(app, parts).second_model(Session(), values["model2"])
        except Exception as err:  # noqa: BLE001 - named in the link's notice; the tab keeps its second model
            return {}, [f"model2 {values['model2'][:60]!r} could not be loaded: {user_message(err)}"]
        updates.pop(app.status)
        return updates, []

    def restored(self, parts: CompareParts) -> list[Any]:
        return [parts.model2, *parts.second()[1:]]


TAB = CompareTab()

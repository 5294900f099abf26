"""The behaviour of the "Compare models" tab: the second model (chosen by name, or with the first by a suggested
pair), its own view and head switches, and /compare_models, which runs both models on the page's sentences
(views.compare_models through Compute, both models held in the registry while they run). Errors become one message
in the status line (`reporting`).

Named events (the HTTP API, docs/compare.md): /set_model2 (the second model: its head switches' labels, like
/load_model for the first) and /compare_models; their parameters are the input lists in `CompareEvents.__init__`
(names from the handlers' signatures), their results the output lists, in order.

For other features (a link that names the second model): `CompareEvents.second_model_updates(session, name)` checks
and loads a second model from a string and returns the page updates that set it; `attach_link` fills the link's
model2 hooks (events_link) with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gradio as gr
import pandas as pd

from .assets import plot
from .compute import Compute
from .errors import escape_md, user_message
from .handlers import PRIVATE, reporting
from .head_labels import head_labels
from .request_memory import analysis_bytes
from .request import RunRequest
from .session import AppContext, Session, load_session, models_held, second_session
from .ui import HEAD_GROUPS, Page
from .ui_compare import GROUPS2
from .views.compare_models import SIDE_WIDTH


class CompareEvents:
    """Handlers of the Compare models tab of one page: its components, context and model computations, and the page's
    `model_updates(session, loaded, message)` and `after_model(event)` (chains the page's Run and positional tab
    after a model change), from the page's Events."""

    def __init__(self, page: Page, ctx: AppContext, compute: Compute,
                 model_updates: Callable[..., dict], model_outputs: list[Any], after_model: Callable[[Any], Any]):
        self.page, self.ctx, self.compute = page, ctx, compute
        self.model_updates, self.model_outputs, self.after_model = model_updates, model_outputs, after_model
        self.status = page.inputs.status
        i, c, t = page.inputs, page.controls, page.views.compare
        self.tab = t
        self.groups2 = [t.groups2[k] for k, _, _ in GROUPS2]
        self.inputs = [page.session, t.model2, i.text1, i.text2, c.padding, c.causal, c.custom, c.block_token,
                       c.window, *(c.heads[k] for k, _, _ in HEAD_GROUPS), c.kind, c.layer, c.head, c.sentence,
                       c.position, c.new_tokens, c.measure, t.kind2, t.layer2, t.head2, *self.groups2]
        s1, s2 = t.sides
        self.outputs = [self.status, t.compare_md, s1.md, s1.head, s1.overview, s1.output, s2.md, s2.head,
                        s2.overview, s2.output]
        self.second_outputs = [self.status, t.model2, t.kind2, t.layer2, t.head2, *self.groups2]

    @reporting
    def compare_models(self, session, model2, sentence1, sentence2, padding_mask, causal_mask, custom_mask,
                       blocked_position, window, encoder_heads_on, decoder_heads_on, cross_heads_on, kind, layer, head,
                       sentence, predict_after, continue_tokens, measure, kind2, layer2, head2, encoder_heads_on2,
                       decoder_heads_on2, cross_heads_on2):
        """Both models on the sentences: the page's model with the page's view and switches, `model2` with its own
        (kind2, layer2, head2, its head switches: labels among those /set_model2 offered); masks, sentence,
        position, measure and continuation shared."""
        second = second_session(model2, session)
        first_heads = dict(encoder=encoder_heads_on, decoder=decoder_heads_on, cross=cross_heads_on)
        second_heads = dict(encoder=encoder_heads_on2, decoder=decoder_heads_on2, cross=cross_heads_on2)
        # Both models held from here until both have run: they count together against --model-memory.
        with models_held([session, second], self.ctx) as models:
            requests = []
            for s, loaded, heads, view in ((session, models[0], first_heads, (kind, layer, head)),
                                           (second, models[1], second_heads, (kind2, layer2, head2))):
                kinds = loaded.config.attention_kinds()
                requests.append(RunRequest.from_page(s, kinds, sentence1, sentence2, padding_mask, causal_mask,
                                                     custom_mask, blocked_position, window, heads, *view, sentence,
                                                     predict_after, continue_tokens, measure))
            # One Run after the other: the request memory of the larger one.
            need = max(analysis_bytes(m, r, self.ctx.max_tokens) for m, r in zip(models, requests))
            with self.ctx.gate.hold(need):
                result = self.compute.compare_models(*requests)
        t, updates = self.tab, {self.status: result.status, self.tab.compare_md: result.summary()}
        for slot, side in zip(t.sides, result.sides):
            figures = side.figures(SIDE_WIDTH)
            updates.update({slot.md: side.heading(), slot.head: plot(figures["head"]),
                            slot.overview: plot(figures["overview"]),
                            slot.output: pd.DataFrame(side.output.rows, columns=side.output.headers)})
        return updates

    def second_model_updates(self, session: Session, name: str) -> dict:
        """Set the second model from a string (the checks and loading of `load_session`; AppError if it cannot be
        had): the model box, its attention kind, layer and head choices, its head switches all on."""
        _, loaded = load_session(name, session.device if isinstance(session, Session) else None, self.ctx)
        kinds = loaded.config.attention_kinds()
        n_layers, n_heads = next(iter(kinds.values()))
        t = self.tab
        updates = {self.status: f"Second model: {escape_md(name.strip())}.", t.model2: name.strip(),
                   t.kind2: gr.update(choices=list(kinds), value="cross" if "cross" in kinds else next(iter(kinds))),
                   t.layer2: gr.update(choices=list(range(n_layers)), value=0),
                   t.head2: gr.update(choices=list(range(n_heads)), value=0)}
        for kind, _, _ in GROUPS2:
            labels = head_labels(*kinds[kind]) if kind in kinds else []
            updates[t.groups2[kind]] = gr.update(choices=labels, value=labels, visible=bool(labels))
        return updates

    def attach_link(self, link: Any) -> None:
        """Fill the hooks of the page's link (events_link.LinkEvents; before its `wire`): a link's model2 sets the
        second model, and a copied link carries the second model while the Compare models tab is the one shown."""
        t = self.tab

        def model2_updates(model2: str | None) -> tuple[dict, list[str]]:
            if model2 is None:
                return {}, []
            try:
                updates = self.second_model_updates(Session(), model2)
            except Exception as err:  # noqa: BLE001 - named in the link's notice; the tab keeps its second model
                return {}, [f"model2 {model2[:60]!r} could not be loaded: {user_message(err)}"]
            updates.pop(self.status)
            return updates, []

        def model2_of_page(model2: Any = None, tab: Any = None) -> str | None:
            return (str(model2 or "").strip() or None) if tab == "compare" else None

        link.model2_updates, link.model2_of_page = model2_updates, model2_of_page
        link.model2_inputs = [t.model2, self.page.views.tab]
        link.restored += [t.model2, t.kind2, t.layer2, t.head2, *self.groups2]

    @reporting
    def set_second_model(self, session, model2):
        """/set_model2: check and load the second model; its attention kinds, layers, heads and head labels (all on)."""
        return self.second_model_updates(session, str(model2 or ""))

    @reporting
    def load_pair(self, pair, device, progress=gr.Progress(track_tqdm=True)):
        """A suggested pair "first|second": the page loads the first model, the tab takes the second."""
        if not pair:
            return self.unchanged()
        first_name, second_name = str(pair).split("|", 1)
        session, loaded = load_session(first_name, device, self.ctx, progress)
        updates = self.model_updates(session, loaded, f"Loaded {escape_md(first_name)}.")
        return {**updates, **self.second_model_updates(session, second_name),
                self.status: f"Comparing {escape_md(first_name)} with {escape_md(second_name)}."}

    def all_on(self, session, model2):
        """The second model's head switches all on."""
        try:
            updates = self.second_model_updates(session, str(model2 or ""))
        except Exception:  # noqa: BLE001 - nothing to switch on without a model; the comparison will say why
            return {g: gr.skip() for g in self.groups2}
        return {g: updates[g] for g in self.groups2}

    def unchanged(self) -> dict:
        """No update (an empty dict would be read as one value, not as updates)."""
        return {self.status: gr.skip()}

    def compare_if_set(self, status, *args):
        """After the second model was chosen: the comparison, unless choosing it failed (said on the status line)."""
        if str(status or "").startswith("⚠️"):
            return self.unchanged()
        return self.compare_models(*args)

    def compare_if_shown(self, tab, *args):
        """After a Run of the page (its model's controls changed): the comparison again when its tab is the one shown."""
        if tab != "compare":
            return self.unchanged()
        return self.compare_models(*args)

    def opened(self, shown):
        """The tab opened: Runs of the page draw no tab of theirs meanwhile (kept.Shown.visible_tab)."""
        if shown is not None:
            shown.tab = "compare"
            shown.opened += 1
        return {self.page.views.tab: "compare", self.page.kept: shown}

    def wire(self, runs: list[Any]) -> None:
        """Named event first (before an unnamed event takes the handler's name); `runs`: the page's Run events (a
        model-1 control changed), each followed by the comparison when its tab is shown."""
        t, page = self.tab, self.page
        t.compare_btn.click(self.compare_models, self.inputs, self.outputs, api_name="compare_models")
        again = dict(fn=self.compare_models, inputs=self.inputs, outputs=self.outputs, **PRIVATE)
        t.model2.input(self.set_second_model, [page.session, t.model2], self.second_outputs, api_name="set_model2"
                       ).then(self.compare_if_set, [self.status, *self.inputs], self.outputs, **PRIVATE)
        both = list({id(c): c for c in self.model_outputs + self.second_outputs}.values())
        paired = t.pair.input(self.load_pair, [t.pair, page.model.device_in], both, **PRIVATE)
        self.after_model(paired).then(**again)
        for trigger in (t.kind2.input, t.layer2.input, t.head2.input, *(g.input for g in self.groups2)):
            trigger(trigger_mode="always_last", **again)
        t.all_on2.click(self.all_on, [page.session, t.model2], self.groups2, **PRIVATE).then(**again)
        t.tab_compare.select(self.opened, [page.kept], [page.views.tab, page.kept], **PRIVATE).then(**again)
        for run in runs:
            run.then(self.compare_if_shown, [page.views.tab, *self.inputs], self.outputs, **PRIVATE)

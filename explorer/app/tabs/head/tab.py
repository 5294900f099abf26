"""The "Inside a head" tab: how the page's chosen head computes at one query token of the page's Run (BertViz's
neuron view), without and with the page's toggles (tabs.head.computation reads the block; explorer.viz draws it);
the chosen layer's heads as lines (BertViz's head view) and the head's queries and keys in one picture (AttentionViz).

It follows the page's view (kind, layer, head, sentence, masks, head switches, "Heatmaps show") and has its own query
position. It is computed when opened, after each Run while shown, by its button (a link presses it) and when its query
or lines heads change: from the block the page's last Run captured (run.captures: no model run), else the model run up
to the block; those captures are kept (--kept-memory) under this page's own key, so a new query or head of the same
block runs no model either (a millisecond, then drawing). A click on the Attention heatmap's row opens it there.

Named event (the HTTP API, docs/http-api.md): /head_computation, its parameters the fields of `HeadForm` (forms).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, replace
from typing import Any

import gradio as gr

from .... import viz
from ....interpret.head_steps import MAX_KEYS, example_json, worked_example
from ....labels import unique_labels
from ....viz.head_computation import head_computation_figure
from ...forms import endpoint, form_inputs
from ...i18n.messages import message_in
from ...page.assets import plot
from ...page.glossary import glossed
from ...run.request import whole_number
from ...run.view import KIND_SHORT, MEASURES
from ...serving.errors import AppError, escape_md
from ...serving.handlers import PRIVATE, reporting
from ...serving.kept import Shown
from ...serving.session import Session, get_model
from ..base import LinkKey, Tab, TabEvents
from .computation import BlockRead, computation_json, from_shown, key_table, lines_heads, read_block
from .forms import HeadClick, HeadForm, keys_key, lines_key, query_key, words_key
from .masked import parse_target, unmasked_html
from .script import SCRIPT
from .steps import key_choices, steps_html
from .summary import plain_summary, summary_markdown


@dataclass
class HeadState:
    """This page's key into the kept results, and what its plots show (to redraw only what changed)."""

    key: str  # the page's own key in the store (AppContext.kept)
    seq: int = 0
    block: Any = None  # (model key, BlockRequest) of the kept BlockRead
    lines: Any = None  # (block, heads, measure) of the lines view drawn
    middle: bool = False  # the next draw: at the sentence's middle query (the button to a masked key asked for it)


@dataclass
class HeadParts:
    query: gr.Number
    lines_heads: gr.Dropdown
    run_btn: gr.Button
    summary: gr.Markdown
    computation: gr.Plot
    table: gr.Dataframe
    lines: gr.Plot
    query_key: gr.Plot
    click: gr.Textbox  # the page script writes "kind|layer|head|query|stamp" here
    state: gr.State  # HeadState
    api_btn: gr.Button  # /head_computation for API clients: the figures and the numbers as JSON
    data: gr.JSON
    keys: gr.Dropdown  # the keys worked through step by step (blank: the default ones)
    words: gr.Radio  # "plain" words (the default) or every "details"
    steps: gr.HTML  # the worked example
    details: gr.Column  # the neuron view, the table, the lines and the query-key map: shown with "details"
    masked: gr.Textbox  # the page script writes "kind|stamp" here: the steps' button to a query with masked keys

    def shown(self) -> list[Any]:
        return [self.summary, self.computation, self.table, self.lines, self.query_key, self.lines_heads, self.state]

    def steps_shown(self) -> list[Any]:
        return [self.steps, self.keys]


class HeadEvents(TabEvents):
    parts: HeadParts

    def block(self, form: HeadForm, state: HeadState, keep: bool, shown: Any = None) -> tuple[BlockRead, HeadState]:
        """The form's block: the tab's kept one, the last Run's (`shown`), or read (a model run; kept if `keep`)."""
        loaded = self.loaded(form.session)
        request = form.block(loaded.config.attention_kinds())
        key = (form.session.key, request)
        store = f"head:{state.key}"
        found = self.ctx.kept.find(store, state.seq) if state.block == key else None
        ran = None if found is not None else from_shown(loaded, form.session, request, shown, self.ctx.kept)
        if found is None and (ran is None or state.block != key):
            found = ran or self.compute.call(read_block, form.session, request)
            state = HeadState(state.key, state.seq + 1, key, None)
            if keep and ran is None:  # (the Run's capture is kept with its result)
                self.ctx.kept.keep(store, state.seq, found)
        return found or ran, state

    def loaded(self, session: Any) -> Any:
        if not isinstance(session, Session):
            raise AppError("This page's session was lost: reload the page.")
        return get_model(session, self.ctx)

    def draw(self, form: HeadForm, state: Any, api: bool = False, shown: Any = None) -> tuple[dict, dict]:
        """The tab's updates (the lines view only when it changed; an API client's: always, and nothing kept) and the
        numbers as JSON."""
        state = state if isinstance(state, HeadState) else HeadState(secrets.token_hex(16))
        middle, state.middle = state.middle and not api, False
        block, state = self.block(form, state, not api, shown)
        head, query = block.head(whole_number(form.view.head, 0)), whole_number(form.query, -1)
        if middle:  # the steps' button asked for a query with masked keys: the middle of the sentence
            query = block.real_queries // 2
        base, toggled = block.computation(head, query)
        measure = str(form.measure or "weights")
        if measure not in MEASURES:
            raise AppError(f"unknown measure {measure!r}; choose from {', '.join(MEASURES)}")
        heads = lines_heads(form.lines_heads, head, block.n_heads)
        keys = unique_labels(block.key_labels)  # the figures' labels: "0·2" for the second "0", in every part
        label = unique_labels(block.query_labels)[base.query]
        shown_comp = toggled if toggled is not None else base  # the steps: the model as switched
        picked, left_out = form.keys, []
        if not api and isinstance(picked, list):  # picks of another sentence or block: left out, and said
            left_out = [k for k in picked if str(k).strip().isdigit() and int(k) >= len(keys)]
            picked = [k for k in picked if k not in left_out]
        try:
            example = worked_example(shown_comp, picked)
        except ValueError as err:
            raise AppError(str(err)) from None
        p, plain, kinds = self.parts, form.plain, self.loaded(form.session).config.attention_kinds()
        lang = form.lang  # the request's: the steps and the numbers' summary are written in it
        unmasked = unmasked_html(block.kind, block.request.toggles.causal, base.query, block.real_queries, kinds, lang)
        notices = " ".join(message_in(n, lang) for n in block.notices + [  # each said in the language, then joined
            f"key {', '.join(map(str, left_out))} is not one of the {len(keys)} keys here: left out of the steps."
        ] * bool(left_out))
        updates: dict = {self.status: "⚠️ " + escape_md(notices) if notices else "",
                         p.summary: plain_summary(block, shown_comp, label, lang) if plain else
                         glossed(summary_markdown(block, base, toggled, label, lang), lang),
                         p.steps: steps_html(example, shown_comp, keys, label, plain, unmasked, lang),
                         p.keys: gr.update(choices=key_choices(keys))}
        data = {"changes": list(block.changes), "query_labels": block.query_labels, "key_labels": block.key_labels,
                "lines_heads": list(heads), "baseline": computation_json(base), "toggled": computation_json(toggled),
                "steps": example_json(example)}
        if not api:
            updates[p.details], updates[p.query] = gr.update(visible=not plain), query if middle else gr.skip()
            if plain:  # the details are hidden: drawn when shown
                return {**updates, **{c: gr.skip() for c in (p.computation, p.table, p.lines, p.query_key)},
                        p.lines_heads: gr.skip(), p.state: state}, data
        updates[p.computation] = plot(head_computation_figure(base, keys, label, toggled=toggled))
        updates[p.table] = key_table(block, base, toggled, keys)
        qk = block.query_key(head)
        try:
            focus = qk.query_index(0, base.query)
        except ValueError:  # a padding query is not in the map
            focus = None
        keys = None if block.kind != "cross" else block.key_labels
        updates[p.query_key] = plot(viz.query_key_figure(qk, block.query_labels, keys, query=focus))
        drawn = (state.block, heads, measure)
        if api or state.lines != drawn:
            name = viz.WEIGHT if measure == "weights" else viz.VALUE_WEIGHTED
            updates[p.lines] = plot(viz.head_lines(block.lines(heads, measure), block.query_labels, block.key_labels,
                                                   [f"H{h}" for h in heads], name=name,
                                                   title=f"{KIND_SHORT[block.kind]} L{block.layer}: heads as lines"))
            state.lines = drawn
        else:
            updates[p.lines] = gr.skip()
        updates[p.lines_heads] = gr.update(choices=list(range(block.n_heads)))  # blank stays blank: the default
        updates[p.state] = state
        return updates, data

    @reporting
    def shown_tab(self, form: HeadForm, state: Any = None, shown: Any = None) -> dict:
        """The tab's view of the page's block (its button; a new query or lines heads; the tab opened)."""
        return self.draw(form, state, shown=shown)[0]

    def if_shown(self, form: HeadForm, tab: Any, state: Any, shown: Any = None) -> dict:
        """After a Run of the page: the tab again while it is shown."""
        return self.shown_tab(form, state, shown) if tab == HeadTab.id else {self.status: gr.skip()}

    @reporting
    def clicked(self, form: HeadForm, click: Any, state: Any, shown: Any) -> dict:
        """A query clicked (`HeadClick`): this tab shown on it."""
        try:
            query = HeadClick.parse(click).query
        except ValueError:
            return {self.status: gr.skip()}
        if isinstance(shown, Shown):
            shown.opening(HeadTab.id)  # the next Runs draw this tab (kept.Shown.visible_tab)
        updates = self.draw(replace(form, query=query), state, shown=shown)[0]
        page = self.page
        return {**updates, self.parts.query: query, page.visible_tab: HeadTab.id,
                page.tab_strip: gr.update(selected=HeadTab.id)}

    @reporting
    def to_masked(self, session: Any, text: Any, state: Any) -> dict:
        """The steps' button (masked.py): the page's view set to its kind, the next draw at the middle query; the
        page's Run chained after this draws the tab there."""
        kinds = self.loaded(session).config.attention_kinds()
        try:
            kind = parse_target(text, kinds)
        except ValueError:
            return {self.status: gr.skip()}
        state = state if isinstance(state, HeadState) else HeadState(secrets.token_hex(16))
        return {self.status: "", self.page.setting("kind"): kind, self.parts.state: replace(state, middle=True)}

    @reporting
    def api(self, form: HeadForm) -> dict:
        updates, data = self.draw(form, None, api=True)
        return {**updates, self.parts.data: data}


class HeadTab(Tab):
    id = "head"
    title = "Inside a head"
    result = "head-summary"
    help = ("How one head decides where a token looks, step by step with this run's own numbers: the query q and "
            "each key k, how well they match (q·k), the mask, the weights (adding up to 1) and the mix of values the "
            "head passes on; without and with your toggles. Pick the query (or click a row of the Attention tab's "
            "heatmap) and the keys to follow. All details: the symbols, the neuron view, the layer's heads as lines "
            "and the head's queries and keys in one picture.")
    button = "head-run"
    script = SCRIPT
    link_keys = (LinkKey("query", "query", query_key, "the query position of the Inside a head tab (−1: the last)"),
                 LinkKey("lines", "lines_heads", lines_key, "the heads drawn as lines, e.g. `0,2,5` (at most 8)"),
                 LinkKey("keys", "keys", keys_key, "the keys Inside a head works through, e.g. `0,4,7` (at most 8)"),
                 LinkKey("words", "words", words_key, "`details`: Inside a head with all details (else plain words)"))

    def layout(self, start: Any) -> HeadParts:
        n_heads = next(iter(start.kinds.values()), (1, 1))[1]
        with gr.Row(equal_height=True):
            query = gr.Number(-1, label="Query position", info="−1 = the last token; or click a row of the heatmap",
                              precision=0, elem_id="head-query", min_width=120)
            heads = gr.Dropdown(list(range(n_heads)), value=[], multiselect=True, max_choices=8, min_width=160,
                                label="Heads as lines", elem_id="head-lines-heads",
                                info="blank: the chosen head and the next ones")
            run_btn = gr.Button("Show the computation", variant="primary", elem_id="head-run", min_width=120, scale=0)
        with gr.Row(equal_height=True):
            keys = gr.Dropdown([], value=[], multiselect=True, max_choices=MAX_KEYS, label="Keys worked through",
                               allow_custom_value=True,  # an API client names positions before a draw sets them
                               info="blank: the 3 strongest, the query itself and the first masked key",
                               elem_id="head-keys", min_width=200)
            words = gr.Radio([("Plain words", "plain"), ("All details", "details")], value="plain", label="Words",
                             info="all details: the symbols, the neuron view and more", elem_id="head-words",
                             min_width=200)
        summary = gr.Markdown(elem_id="head-summary")
        steps = gr.HTML(elem_id="head-steps", label="Step by step")
        with gr.Column(visible=False, elem_id="head-details") as details:
            computation = gr.Plot(label="Inside the head", show_label=False, elem_id="head-comp-plot")
            table = gr.Dataframe(label="The strongest keys (baseline, and with the toggles)", interactive=False,
                                 elem_id="head-table", max_height=360)
            lines = gr.Plot(label="Heads as lines", show_label=False, elem_id="head-lines-plot")
            qk = gr.Plot(label="Queries and keys", show_label=False, elem_id="head-qk-plot")
        click = gr.Textbox(visible="hidden", elem_id="head-click", label="clicked query")
        masked = gr.Textbox(visible="hidden", elem_id="head-masked", label="clicked query")
        state = gr.State(None)
        api_btn = gr.Button(visible=False)
        data = gr.JSON(visible=False, label="the numbers")
        return HeadParts(query, heads, run_btn, summary, computation, table, lines, qk, click, state, api_btn, data,
                         keys, words, steps, details, masked)

    def wire(self, parts: HeadParts, app: Any) -> Any:
        ev, page, p = HeadEvents(app, parts), app.page, parts
        inputs = form_inputs(HeadForm, page, own=p)
        outputs = [app.status, *p.shown(), *p.steps_shown(), p.details, p.query]
        p.api_btn.click(endpoint(HeadForm, ev.api, "head_computation"), inputs,
                        [app.status, *p.shown(), p.data, *p.steps_shown()],
                        api_name="head_computation",
                        api_description="How one head computes at one query token, step by step, without and with "
                                        "the toggles.")
        with_state = [*inputs, p.state, page.kept]  # the page's last Run: its captured block (no model run)
        shown = endpoint(HeadForm, ev.shown_tab, "head_shown", extra=("state", "shown"))
        for trigger in (p.run_btn.click, p.query.input, p.lines_heads.input, p.keys.input, p.words.input):
            trigger(shown, with_state, outputs, trigger_mode="always_last", **PRIVATE)
        app.selected[self.id].then(shown, with_state, outputs, **PRIVATE)
        after_run = endpoint(HeadForm, ev.if_shown, "head_after_run", extra=("tab", "state", "shown"))
        run_inputs = [*inputs, page.visible_tab, p.state, page.kept]
        app.after_run.add(after_run, run_inputs, outputs)
        clicked = endpoint(HeadForm, ev.clicked, "head_clicked", extra=("click", "state", "shown"))
        p.click.change(clicked, [*inputs, p.click, p.state, page.kept],
                       [*outputs, page.visible_tab, page.tab_strip], **PRIVATE)
        app.add_run(app.then_analyze(p.masked.change(ev.to_masked, [page.session, p.masked, p.state],  # then drawn
                                                     [app.status, page.setting("kind"), p.state], **PRIVATE)))
        return ev

    def restore_link(self, parts: HeadParts, app: Any, values: dict[str, Any]) -> tuple[dict, list[str]]:
        """A link's keys: the picker given its own positions as choices (the tab's draw names them)."""
        updates, notices = super().restore_link(parts, app, values)
        if "keys" in values:
            updates[parts.keys] = gr.update(choices=[(str(k), k) for k in values["keys"]], value=values["keys"])
        return updates, notices

    def model_updates(self, parts: HeadParts, info: Any) -> dict:
        n_heads = next(iter(info.kinds.values()), (1, 1))[1]
        return {parts.summary: "", parts.computation: None, parts.table: None, parts.lines: None,
                parts.query_key: None, parts.lines_heads: gr.update(choices=list(range(n_heads)), value=[]),
                parts.steps: "", parts.keys: gr.update(choices=[], value=[])}


TAB = HeadTab()

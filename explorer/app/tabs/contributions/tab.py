"""The Contributions tab: where one prediction on sentence 1 comes from (app.tabs.contributions.result computes it,
app.tabs.contributions.text draws it): each head's and MLP's share of a token's logit, baseline beside the head
switches; a head's promoted and suppressed tokens; token attribution; the contribution graph; every head ranked by its
exact effect on the token (app.tabs.contributions.why_token). A click on a token of the page's output opens it there
("why this token?"). Named event (docs/contributions.md): /contributions, its parameters the fields of
`ContributionForm`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from ....interpret.attribution import MAX_STEPS
from ...forms import endpoint, form_inputs
from ...i18n.result_words import updates_in
from ...i18n.words import t
from ...link.values import choice_key, number_key, text_key, whole_key
from ...page.assets import click_to_box_js, plot
from ...page.head_labels import parse_heads
from ...page.head_switches import switch_updates
from ...page.settings import ATTENTION_TAB
from ...run.output_chips import ClickTarget
from ...run.readings import token_text
from ...run.request import page_heads
from ...serving.errors import AppError
from ...serving.handlers import PRIVATE, reporting
from ...serving.kept import Shown
from ...serving.session import get_model
from ..base import LinkKey, Tab, TabEvents
from .forms import ContributionForm
from .result import DEFAULT_THRESHOLD, Contributions, contributions
from .token_attribution import DEFAULT_STEPS, METHOD_NAMES
from .text import (attribution_markdown, attribution_table, contribution_figures, graph_figure, head_table, is_click,
                   parse_head, summary_markdown)
from .two_measures import two_measures
from .why_token import WHY_HEADERS, WhyRequest, WhyResult, why, why_markdown

# A head of the map (a cell's customdata "kind|layer|head") or of the graph (an edge midpoint's [kind, layer, head,
# attention, share] when its kind is "head", explorer.viz.flow) is written into #contrib-click.
HEAD_OF = """(point) => {
  const data = point.customdata;
  const cell = typeof data === 'string' ? data : Array.isArray(data) && data[0] === 'head' ?
    data[3] + '|' + data[1] + '|' + data[2] : '';
  return /^(decoder|encoder|cross)\\|\\d+\\|\\d+$/.test(cell) ? cell : null;
}"""
SCRIPT = "\n".join(click_to_box_js(plot, "#contrib-click", HEAD_OF) for plot in ("#contrib-plot", "#contrib-graph"))


@dataclass
class ContributionParts:
    position: gr.Number
    token: gr.Textbox
    minus: gr.Textbox
    method: gr.Radio
    steps: gr.Number
    run_btn: gr.Button
    summary: gr.Markdown
    dla_plot: gr.Plot
    click: gr.Textbox  # the page script writes a clicked head's "kind|layer|head|stamp" here
    head: gr.Dropdown
    open_btn: gr.Button  # opens the chosen head in the Attention tab, with a Run of the page's settings
    head_md: gr.Markdown
    head_df: gr.Dataframe
    strip: gr.Plot
    delta_md: gr.Markdown
    attribution_df: gr.Dataframe
    threshold: gr.Slider
    graph: gr.Plot
    result: gr.State  # the last Contributions of this session: the head table reads it
    why_btn: gr.Button  # ranks every head by its exact effect on the token
    pairs: gr.Checkbox  # search pairs of heads even when one head alone moves the token
    why_md: gr.Markdown
    why_df: gr.Dataframe
    top_off: gr.Button  # switches the top head off (then the page runs)
    why_result: gr.State  # the last why_token.WhyResult: its top head
    extend: gr.State  # a language model's continuation before a clicked token: appended to the reading
    asked: gr.State  # what was clicked, named in the summary
    stale: gr.Markdown  # says the tab shows results of earlier head switches

    def outputs(self) -> list[Any]:
        return [self.summary, self.dla_plot, self.head, self.head_md, self.head_df, self.strip, self.delta_md,
                self.attribution_df, self.graph, self.result, self.stale]


class ContributionEvents(TabEvents):
    parts: ContributionParts

    @reporting
    def attributed(self, form: ContributionForm, extend: Any = (), asked: Any = "") -> dict:
        loaded = get_model(form.session, self.ctx)
        request = form.request(loaded.config.attention_kinds(), extend, asked)
        result = self.compute.call(contributions, form.session, request)
        return {self.status: "", **self.shown(result), self.parts.stale: ""}

    @reporting
    def ranked(self, form: ContributionForm, extend: Any = (), search_pairs: Any = False, shown: Any = None) -> dict:
        """Every head by its exact effect on the token asked about (why_token), the best pair when none moves it, and
        what it measures against the shown direct shares (`shown`: the tab's result; two_measures)."""
        loaded = get_model(form.session, self.ctx)
        r = form.request(loaded.config.attention_kinds(), extend)
        result = self.compute.call(why, form.session, WhyRequest(r.text, r.position, r.token, r.extend, r.heads_on,
                                                                 bool(search_pairs)))
        p = self.parts
        words = "\n\n".join(filter(None, [why_markdown(result), two_measures(result, shown)]))
        return {self.status: "", p.why_md: words, p.why_result: result,
                p.why_df: pd.DataFrame(result.rows, columns=WHY_HEADERS)}

    @reporting
    def top_off(self, session: Any, result: Any, *heads_on: Any) -> dict:
        """The page's head switches with the top head of the last ranking off too."""
        if not isinstance(result, WhyResult) or result.top is None:
            raise AppError("Rank the heads by their effect first: then the top one can be switched off.")
        kinds = get_model(session, self.ctx).config.attention_kinds()
        on = {k: parse_heads(v) for k, v in page_heads(kinds, *heads_on).items()}
        top = result.top
        on[top.kind] = on[top.kind] - {(top.layer, top.head)}
        return {self.status: "", **switch_updates(self.page.heads, kinds, on, choices=False)}

    def clicked(self, session: Any, targets: Any, evt: gr.SelectData) -> dict:
        """A token of the page's output clicked: this tab opened at the position where the model predicts it, the
        token named by its text (its id only when its text reads back as another token)."""
        index = evt.index if isinstance(evt.index, int) else -1
        target = targets[index] if isinstance(targets, list) and 0 <= index < len(targets) else None
        if not isinstance(target, ClickTarget):
            return {self.parts.asked: gr.skip()}
        p, page = self.parts, self.page
        token = token_text(get_model(session, self.ctx), target.token, target.label)
        return {p.position: target.position, p.token: token, p.minus: "", p.extend: target.extend,
                p.asked: f"“{target.label}”, {target.what}", page.visible_tab: TAB.id,
                page.tab_strip: gr.update(selected=TAB.id)}

    def after_run(self, tab: Any, result: Any, *values: Any) -> dict:
        """After a Run of the page: when its head switches are not the ones of this tab's result, computed again if
        this tab is shown, else said to show the switches as they were. `values`: ContributionForm's, then extend
        and asked."""
        if not isinstance(result, Contributions):
            return {self.parts.stale: gr.skip()}
        form = ContributionForm(*values[:-2])
        try:
            loaded = get_model(form.session, self.ctx)
            now = form.request(loaded.config.attention_kinds()).heads_on
        except Exception:  # noqa: BLE001 - no model or bad switches: the Run has said why
            return {self.parts.stale: gr.skip()}
        if now == result.heads_on:
            return {self.parts.stale: ""}
        if tab == TAB.id:
            return self.attributed(form, *values[-2:])
        return {self.parts.stale: "⚠️ " + t("notice.contributions.stale", form.lang)}  # the page's language

    def shown(self, result: Contributions) -> dict:
        dla, strip = contribution_figures(result)
        name, headers, rows, head_md = head_table(result, result.strongest_head())
        a_headers, a_rows = attribution_table(result)
        p = self.parts
        return {p.summary: summary_markdown(result), p.dla_plot: plot(dla),
                p.head: gr.update(choices=result.head_choices(), value=name), p.head_md: head_md,
                p.head_df: pd.DataFrame(rows, columns=headers), p.strip: plot(strip),
                p.delta_md: attribution_markdown(result), p.attribution_df: pd.DataFrame(a_rows, columns=a_headers),
                p.graph: plot(graph_figure(result)), p.result: result}

    @reporting
    def head(self, choice: Any, result: Any, lang: Any = "en") -> dict:
        """One head's promoted and suppressed tokens (a clicked cell, `HeadCell`, or a picker value), in `lang`."""
        if not isinstance(result, Contributions):
            return {}  # nothing attributed yet
        if is_click(choice) and parse_head(result, choice) is None:
            return {}  # an MLP cell (no head to show), or a message the page script did not write
        name, headers, rows, md = head_table(result, choice)
        return updates_in({self.status: "", self.parts.head: name, self.parts.head_md: md,
                           self.parts.head_df: pd.DataFrame(rows, columns=headers)}, lang)

    @reporting
    def open_head(self, session: Any, choice: Any, result: Any, shown: Any) -> dict:
        """The chosen head opened in the Attention tab: the page's view set to it and that tab shown; the Run chained
        after this draws its heatmap."""
        where = parse_head(result, choice) if isinstance(result, Contributions) else None
        if where is None:
            raise AppError("Attribute first, then choose a head (or click one in the map or the graph) to open it.")
        kind, layer, head = where
        n_layers, n_heads = get_model(session, self.ctx).config.attention_kinds()[kind]
        page, setting = self.page, self.page.setting
        if isinstance(shown, Shown):
            shown.tab = ATTENTION_TAB  # the tab the chained Run draws (kept.Shown.visible_tab)
        return {self.status: "", setting("kind"): kind,
                setting("layer"): gr.update(choices=list(range(n_layers)), value=layer),
                setting("head"): gr.update(choices=list(range(n_heads)), value=head),
                page.visible_tab: ATTENTION_TAB, page.tab_strip: gr.update(selected=ATTENTION_TAB)}


class ContributionsTab(Tab):
    id = "contributions"
    title = "Contributions"
    result = "contrib-summary"
    help = ("Why the model chose a token: which of its parts pushed it up or down, and which words of the "
            "sentence mattered (click a token of the output above to ask; positions count from 0). Where one prediction comes from, on sentence"
            " 1: each head's and MLP's direct share of the logit (red "
            "raises it, blue lowers it; the parts add up to the logit), without and with the head switches; click a "
            "head for the tokens it promotes and suppresses. Below: each input token's attribution (integrated "
            "gradients or input × gradient) with its completeness delta. The page's masks do not apply here: the "
            "model reads sentence 1 with its own (causal for a language model).")
    help_folded = True  # the form first (the help is long): folded under it
    button = "contrib-run"
    script = SCRIPT
    link_keys = (LinkKey("at", "position", whole_key(-10**6, 10**6), "the position read (−1: the last; a masked LM's "
                                                                     "−1: its first mask token)"),
                 LinkKey("token", "token", text_key(100), "the target token (text as in the token table, or `#id`)"),
                 LinkKey("minus", "minus", text_key(100), "a token whose logit is subtracted (optional)"),
                 LinkKey("method", "method", choice_key(tuple(METHOD_NAMES)),
                         "`integrated_gradients` or `input_x_gradient`"),
                 LinkKey("steps", "steps", whole_key(0, MAX_STEPS),
                         f"integration points, 0 (chosen until within 2%) to {MAX_STEPS}"),
                 LinkKey("threshold", "threshold", number_key(0.01, 0.5), "the graph's threshold, 0.01 to 0.5"))

    def layout(self, start: Any) -> ContributionParts:
        with gr.Row(equal_height=False):
            position = gr.Number(-1, label="Position", precision=0, elem_id="contrib-position", min_width=80,
                                 info="−1 = last (masked LM: its mask)")
            token = gr.Textbox(label="Target token", max_lines=1, placeholder="blank: the top token (or #id)",
                               elem_id="contrib-token", min_width=120)
            minus = gr.Textbox(label="Minus token (optional)", max_lines=1, placeholder="logit (raw score) difference with it",
                               elem_id="contrib-minus", min_width=120)
            method = gr.Radio([(name, key) for key, name in METHOD_NAMES.items()], value="integrated_gradients",
                              label="Token attribution", elem_id="contrib-method", min_width=170)
            steps = gr.Number(DEFAULT_STEPS, label="Points", info="0 = until within 2%", precision=0, minimum=0,
                              maximum=MAX_STEPS, elem_id="contrib-steps", min_width=70)
            run_btn = gr.Button("Attribute", variant="primary", elem_id="contrib-run", min_width=100, scale=0)
        self.folded_help()
        stale = gr.Markdown(elem_id="contrib-stale")
        summary = gr.Markdown(elem_id="contrib-summary")
        dla_plot = gr.Plot(label="Direct logit attribution", show_label=False, elem_id="contrib-plot")
        with gr.Row(equal_height=True):
            why_btn = gr.Button("Rank heads by their effect", elem_id="contrib-why", size="sm", min_width=120)
            pairs = gr.Checkbox(False, label="search pairs too", elem_id="contrib-pairs", min_width=100)
            top_off = gr.Button("Switch the top head off", elem_id="contrib-top-off", size="sm", min_width=120)
        why_md = gr.Markdown(elem_id="contrib-why-summary")
        why_df = gr.Dataframe(headers=WHY_HEADERS, interactive=False, elem_id="contrib-why-table", max_height=300)
        click = gr.Textbox(visible="hidden", elem_id="contrib-click", label="clicked head")
        with gr.Row(equal_height=False):
            with gr.Column(scale=1, min_width=160):
                head = gr.Dropdown([], label="Head (or click a cell)", elem_id="contrib-head", allow_custom_value=True)
                open_btn = gr.Button("Open its attention", size="sm", elem_id="contrib-open")
            with gr.Column(scale=4):
                head_md = gr.Markdown(elem_id="contrib-head-summary")
        head_df = gr.Dataframe(label="Promoted and suppressed tokens", interactive=False, wrap=True,
                               elem_id="contrib-head-table", max_height=420)
        strip = gr.Plot(label="Token attribution", show_label=False, elem_id="contrib-strip")
        delta_md = gr.Markdown(elem_id="contrib-delta")
        attribution_df = gr.Dataframe(label="Token attribution", interactive=False, elem_id="contrib-table",
                                      max_height=300)
        # The contribution graph (Information Flow Routes): a click on a head edge's midpoint opens that head above.
        threshold = gr.Slider(0.01, 0.5, value=DEFAULT_THRESHOLD, step=0.01, label="Graph threshold",
                              elem_id="contrib-threshold",
                              info="keep the parts of each update with at least this share (then press Attribute)")
        graph = gr.Plot(label="Contribution graph", show_label=False, elem_id="contrib-graph")
        return ContributionParts(position, token, minus, method, steps, run_btn, summary, dla_plot, click, head,
                                 open_btn, head_md, head_df, strip, delta_md, attribution_df, threshold, graph,
                                 gr.State(None), why_btn, pairs, why_md, why_df, top_off, gr.State(None),
                                 gr.State(()), gr.State(""), stale)

    def wire(self, parts: ContributionParts, app: Any) -> Any:
        ev, page, p = ContributionEvents(app, parts), app.page, parts
        heads = list(page.heads.values())
        inputs = form_inputs(ContributionForm, page, own={**vars(p), "target_token": p.token, "minus_token": p.minus})
        attribute = dict(fn=endpoint(ContributionForm, ev.attributed, "contributions", extra=("extend", "asked")),
                         inputs=[*inputs, p.extend, p.asked], outputs=[app.status, *p.outputs()])
        p.run_btn.click(**attribute, api_name="contributions",
                        api_description="Where a prediction comes from: each head's and MLP's share of its logit, "
                                        "and each input token's.")
        rank = dict(fn=endpoint(ContributionForm, ev.ranked, "rank_heads", extra=("extend", "search_pairs", "shown")),
                    inputs=[*inputs, p.extend, p.pairs, p.result],
                    outputs=[app.status, p.why_md, p.why_df, p.why_result])
        p.why_btn.click(**rank, **PRIVATE)
        # A token of the page's output clicked: this tab at its position, computed, the heads ranked by effect.
        page.results.output.select(ev.clicked, [page.session, page.results.targets],
                                   [p.position, p.token, p.minus, p.extend, p.asked, page.visible_tab,
                                    page.tab_strip], **PRIVATE).then(**attribute, **PRIVATE).then(**rank, **PRIVATE)
        app.then_analyze(p.top_off.click(ev.top_off, [page.session, p.why_result, *heads], [app.status, *heads],
                                         **PRIVATE))
        head_outputs = [app.status, p.head, p.head_md, p.head_df]
        for box, trigger in ((p.click, p.click.change), (p.head, p.head.input)):
            trigger(ev.head, [box, p.result, page.setting("lang")], head_outputs, **PRIVATE)
        app.then_analyze(p.open_btn.click(ev.open_head, [page.session, p.head, p.result, page.kept],
                                          [app.status, *map(page.setting, ("kind", "layer", "head")),
                                           page.visible_tab, page.tab_strip],
                                          **PRIVATE))
        app.after_run.add(ev.after_run, [page.visible_tab, p.result, *inputs, p.extend, p.asked],
                          [app.status, *p.outputs()])
        return ev

    def model_updates(self, parts: ContributionParts, info: Any) -> dict:
        p = parts
        return {p.summary: "", p.dla_plot: None, p.head: gr.update(choices=[], value=None), p.head_md: "",
                p.head_df: None, p.strip: None, p.delta_md: "", p.attribution_df: None, p.graph: None, p.result: None,
                p.why_md: "", p.why_df: None, p.why_result: None, p.stale: ""}


TAB = ContributionsTab()

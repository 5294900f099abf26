"""The Contributions tab: where one prediction on sentence 1 comes from (explorer.app.contribution_result computes it,
explorer.app.contribution_text draws it): each head's and MLP's direct share of a token's logit, baseline beside the
head switches; one head's promoted and suppressed tokens (a click on the map or the graph, or the picker); token
attribution; the contribution graph; "Open its attention" shows the chosen head in the Attention tab.

Named event (the HTTP API, docs/contributions.md): /contributions, its parameters the fields of `ContributionForm`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from ...interpret.attribution import MAX_STEPS
from ..assets import plot
from ..contribution_result import (DEFAULT_STEPS, DEFAULT_THRESHOLD, METHOD_NAMES, ContributionRequest,
                                   Contributions, contributions)
from ..contribution_text import (attribution_markdown, attribution_table, contribution_figures, graph_figure,
                                 head_table, parse_head, summary_markdown)
from ..errors import AppError
from ..forms import endpoint
from ..handlers import PRIVATE, reporting
from ..kept import Shown
from ..link.values import Invalid, choice, whole
from ..run.request import page_heads, toggles_from, whole_number
from ..session import get_model
from .base import LinkKey, Tab, TabEvents

# A head of the map (a cell's customdata "kind|layer|head") or of the graph (an edge midpoint's [kind, layer, head,
# attention, share] when its kind is "head", explorer.viz.flow) is written with a time stamp into #contrib-click.
SCRIPT = """
const headOf = (data) => {
  if (typeof data === 'string') return data;
  if (Array.isArray(data) && data[0] === 'head') return data[3] + '|' + data[1] + '|' + data[2];
  return '';
};
const bindContrib = (selector) => {
  const plot = document.querySelector(selector + ' .js-plotly-plot');
  if (!plot || !plot.on || plot.__explorerHeadClick) return;
  plot.__explorerHeadClick = true;
  plot.on('plotly_click', (event) => {
    const point = event && event.points && event.points[0];
    const cell = point ? headOf(point.customdata) : '';
    const box = document.querySelector('#contrib-click textarea, #contrib-click input');
    if (!/^(decoder|encoder|cross)\\|\\d+\\|\\d+$/.test(cell) || !box) return;
    box.value = cell + '|' + Date.now();
    box.dispatchEvent(new Event('input', {bubbles: true}));
  });
};
const bindContribs = () => { bindContrib('#contrib-plot'); bindContrib('#contrib-graph'); };
new MutationObserver(bindContribs).observe(document.body, {childList: true, subtree: true});
bindContribs();
"""


@dataclass(frozen=True)
class ContributionForm:
    """/contributions: where the prediction at `position` of sentence 1 comes from, baseline vs the head switches."""

    session: Any
    sentence1: Any
    position: Any = -1
    target_token: Any = ""
    minus_token: Any = ""
    method: Any = "integrated_gradients"
    steps: Any = DEFAULT_STEPS
    encoder_heads_on: Any = None
    decoder_heads_on: Any = None
    cross_heads_on: Any = None
    threshold: Any = DEFAULT_THRESHOLD

    def request(self, kinds: Any) -> ContributionRequest:
        toggles = toggles_from(True, True, "none", 0, 0, page_heads(kinds, self.encoder_heads_on,
                                                                    self.decoder_heads_on, self.cross_heads_on))
        try:
            threshold = float(DEFAULT_THRESHOLD if self.threshold in (None, "") else self.threshold)
        except (TypeError, ValueError):
            raise AppError(f"the graph's threshold must be a number, got {str(self.threshold)[:40]!r}") from None
        return ContributionRequest(str(self.sentence1 or ""), whole_number(self.position, -1),
                                   str(self.target_token or ""), str(self.minus_token or ""),
                                   str(self.method or "integrated_gradients"), whole_number(self.steps, DEFAULT_STEPS),
                                   toggles.heads_on, threshold)


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

    def outputs(self) -> list[Any]:
        return [self.summary, self.dla_plot, self.head, self.head_md, self.head_df, self.strip, self.delta_md,
                self.attribution_df, self.graph, self.result]


class ContributionEvents(TabEvents):
    parts: ContributionParts

    @reporting
    def attributed(self, form: ContributionForm) -> dict:
        loaded = get_model(form.session, self.ctx)
        request = form.request(loaded.config.attention_kinds())
        result = self.compute.call(contributions, form.session, request)
        return {self.status: "", **self.shown(result)}

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
    def head(self, choice: Any, result: Any) -> dict:
        """One head's promoted and suppressed tokens (a clicked cell's "kind|layer|head|stamp" or a picker value)."""
        if not isinstance(result, Contributions) or (choice or "").startswith("mlp|"):
            return {}  # nothing attributed yet, or an MLP cell: no head to show
        if parse_head(result, choice) is None and "|" in (choice or ""):
            return {}  # a message the page script did not write
        name, headers, rows, md = head_table(result, choice)
        p = self.parts
        return {self.status: "", p.head: name, p.head_md: md, p.head_df: pd.DataFrame(rows, columns=headers)}

    @reporting
    def open_head(self, session: Any, choice: Any, result: Any, shown: Any) -> dict:
        """The chosen head opened in the Attention tab: the page's view set to it and that tab shown; the Run chained
        after this draws its heatmap."""
        where = parse_head(result, choice) if isinstance(result, Contributions) else None
        if where is None:
            raise AppError("Attribute first, then choose a head (or click one in the map or the graph) to open it.")
        kind, layer, head = where
        n_layers, n_heads = get_model(session, self.ctx).config.attention_kinds()[kind]
        c, page = self.page.controls, self.page
        if isinstance(shown, Shown):
            shown.tab = "attention"  # the tab the chained Run draws (kept.Shown.visible_tab)
        return {self.status: "", c.kind: kind, c.layer: gr.update(choices=list(range(n_layers)), value=layer),
                c.head: gr.update(choices=list(range(n_heads)), value=head), page.visible_tab: "attention",
                page.tab_strip: gr.update(selected="attention")}


def position_key(text: str, check_model: Any) -> int:
    return whole(text, -10**6, 10**6)


def token_key(text: str, check_model: Any) -> str:
    if len(text) > 100:
        raise Invalid("is longer than 100 characters")
    return text


def method_key(text: str, check_model: Any) -> str:
    return choice(text, tuple(METHOD_NAMES))


def steps_key(text: str, check_model: Any) -> int:
    return whole(text, 1, MAX_STEPS)


def threshold_key(text: str, check_model: Any) -> float:
    try:
        value = float(text)
    except ValueError:
        raise Invalid("is not a number") from None
    if not 0.01 <= value <= 0.5:
        raise Invalid("is not between 0.01 and 0.5")
    return value


class ContributionsTab(Tab):
    id = "contributions"
    title = "Contributions"
    result = "contrib-summary"
    help = ("Where one prediction comes from, on sentence 1: each head's and MLP's direct share of the logit (red "
            "raises it, blue lowers it; the parts add up to the logit), without and with the head switches; click a "
            "head for the tokens it promotes and suppresses. Below: each input token's attribution (integrated "
            "gradients or input × gradient) with its completeness delta. The page's masks do not apply here: the "
            "model reads sentence 1 with its own (causal for a language model).")
    button = "contrib-run"
    script = SCRIPT
    link_keys = (LinkKey("at", "position", position_key, "the position read (−1: the last; a masked LM's −1: its "
                                                         "first mask token)"),
                 LinkKey("token", "token", token_key, "the target token (text as in the token table, or `#id`)"),
                 LinkKey("minus", "minus", token_key, "a token whose logit is subtracted (optional)"),
                 LinkKey("method", "method", method_key, "`integrated_gradients` or `input_x_gradient`"),
                 LinkKey("steps", "steps", steps_key, f"integration steps, 1 to {MAX_STEPS}"),
                 LinkKey("threshold", "threshold", threshold_key, "the graph's threshold, 0.01 to 0.5"))

    def layout(self, start: Any) -> ContributionParts:
        with gr.Row(equal_height=False):
            position = gr.Number(-1, label="Position", precision=0, elem_id="contrib-position", min_width=80,
                                 info="−1 = last (masked LM: its mask)")
            token = gr.Textbox(label="Target token", max_lines=1, placeholder="blank: the top token (or #id)",
                               elem_id="contrib-token", min_width=120)
            minus = gr.Textbox(label="Minus token (optional)", max_lines=1, placeholder="logit difference with it",
                               elem_id="contrib-minus", min_width=120)
            method = gr.Radio([(name, key) for key, name in METHOD_NAMES.items()], value="integrated_gradients",
                              label="Token attribution", elem_id="contrib-method", min_width=170)
            steps = gr.Number(DEFAULT_STEPS, label="Steps", precision=0, minimum=1, maximum=MAX_STEPS,
                              elem_id="contrib-steps", min_width=70)
            run_btn = gr.Button("Attribute", variant="primary", elem_id="contrib-run", min_width=100, scale=0)
        summary = gr.Markdown(elem_id="contrib-summary")
        dla_plot = gr.Plot(label="Direct logit attribution", show_label=False, elem_id="contrib-plot")
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
        result = gr.State(None)
        return ContributionParts(position, token, minus, method, steps, run_btn, summary, dla_plot, click, head,
                                 open_btn, head_md, head_df, strip, delta_md, attribution_df, threshold, graph, result)

    def wire(self, parts: ContributionParts, app: Any) -> Any:
        ev, page, p = ContributionEvents(app, parts), app.page, parts
        inputs = [page.session, page.inputs.text1, p.position, p.token, p.minus, p.method, p.steps,
                  *page.controls.head_groups, p.threshold]
        p.run_btn.click(endpoint(ContributionForm, ev.attributed, "contributions"), inputs, [app.status, *p.outputs()],
                        api_name="contributions")
        head_outputs = [app.status, p.head, p.head_md, p.head_df]
        for box, trigger in ((p.click, p.click.change), (p.head, p.head.input)):
            trigger(ev.head, [box, p.result], head_outputs, **PRIVATE)
        c = page.controls
        app.then_analyze(p.open_btn.click(ev.open_head, [page.session, p.head, p.result, page.kept],
                                          [app.status, c.kind, c.layer, c.head, page.visible_tab, page.tab_strip],
                                          **PRIVATE))
        return ev

    def model_updates(self, parts: ContributionParts, info: Any) -> dict:
        p = parts
        return {p.summary: "", p.dla_plot: None, p.head: gr.update(choices=[], value=None), p.head_md: "",
                p.head_df: None, p.strip: None, p.delta_md: "", p.attribution_df: None, p.graph: None, p.result: None}


TAB = ContributionsTab()

"""The layout of the Contributions tab: where one prediction comes from (no behaviour; see `events_contrib`).
Called inside `ui.view_tabs`' tab strip."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from ..interpret.attribution import MAX_STEPS
from .texts import TAB_TEXT
from .views.contributions import DEFAULT_STEPS, DEFAULT_THRESHOLD, METHOD_NAMES


def plot(elem_id: str, label: str) -> gr.Plot:
    return gr.Plot(label=label, show_label=False, elem_id=elem_id)


def contribution_tab() -> SimpleNamespace:
    with gr.Tab("Contributions", id="contributions") as tab_contrib:
        gr.Markdown(TAB_TEXT["contributions"], elem_classes="tab-text")
        with gr.Row(equal_height=False):
            contrib_position = gr.Number(-1, label="Position", precision=0, elem_id="contrib-position", min_width=80,
                                         info="−1 = last (masked LM: its mask)")
            contrib_token = gr.Textbox(label="Target token", max_lines=1, placeholder="blank: the top token (or #id)",
                                       elem_id="contrib-token", min_width=120)
            contrib_minus = gr.Textbox(label="Minus token (optional)", max_lines=1,
                                       placeholder="logit difference with it", elem_id="contrib-minus", min_width=120)
            contrib_method = gr.Radio([(name, key) for key, name in METHOD_NAMES.items()],
                                      value="integrated_gradients", label="Token attribution", elem_id="contrib-method",
                                      min_width=170)
            contrib_steps = gr.Number(DEFAULT_STEPS, label="Steps", precision=0, minimum=1, maximum=MAX_STEPS,
                                      elem_id="contrib-steps", min_width=70)
            contrib_btn = gr.Button("Attribute", variant="primary", elem_id="contrib-run", min_width=100, scale=0)
        contrib_md = gr.Markdown(elem_id="contrib-summary")
        contrib_plot = plot("contrib-plot", "Direct logit attribution")
        # The page script writes a clicked head cell's "kind|layer|head|stamp" here (assets.TILE_CLICK_JS).
        contrib_click = gr.Textbox(visible="hidden", elem_id="contrib-click", label="clicked head")
        with gr.Row(equal_height=False):
            with gr.Column(scale=1, min_width=160):
                contrib_head = gr.Dropdown([], label="Head (or click a cell)", elem_id="contrib-head",
                                           allow_custom_value=True)
            with gr.Column(scale=4):
                contrib_head_md = gr.Markdown(elem_id="contrib-head-summary")
        contrib_head_df = gr.Dataframe(label="Promoted and suppressed tokens", interactive=False, wrap=True,
                                       elem_id="contrib-head-table", max_height=420)
        contrib_strip = plot("contrib-strip", "Token attribution")
        contrib_delta_md = gr.Markdown(elem_id="contrib-delta")
        contrib_df = gr.Dataframe(label="Token attribution", interactive=False, elem_id="contrib-table",
                                  max_height=300)
        # The contribution graph (Information Flow Routes): a click on a head edge's midpoint opens that head above.
        contrib_threshold = gr.Slider(0.01, 0.5, value=DEFAULT_THRESHOLD, step=0.01, label="Graph threshold",
                                      elem_id="contrib-threshold",
                                      info="keep the parts of each update with at least this share (then press "
                                           "Attribute)")
        contrib_graph = plot("contrib-graph", "Contribution graph")
        contrib_result = gr.State(None)  # the last Contributions of this session: the head table reads it
    scope = {k: v for k, v in locals().items() if isinstance(v, gr.components.Component)}
    return SimpleNamespace(**scope, tabs=dict(contributions=tab_contrib))

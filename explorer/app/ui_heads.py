"""The layout of the tabs on what each head does: head roles, activation patching, logit lens (no behaviour;
see `events_heads`). Called inside `ui.view_tabs`' tab strip."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from ..interpret import ROLES
from .texts import TAB_TEXT
from .views.roles import RANK_BY


def plot(elem_id: str, label: str) -> gr.Plot:
    return gr.Plot(label=label, show_label=False, elem_id=elem_id)


def head_tabs(decoder: bool) -> SimpleNamespace:
    """The three tabs; the lens tab only for models with a decoder (a next-token output to read)."""
    with gr.Tab("Roles", id="roles") as tab_roles:
        gr.Markdown(TAB_TEXT["roles"], elem_classes="tab-text")
        with gr.Row(equal_height=True):
            roles_btn = gr.Button("Score the heads", variant="primary", elem_id="roles-run", min_width=120)
            role = gr.Dropdown(list(ROLES), value="induction", label="Role", elem_id="role", min_width=110)
            role_k = gr.Number(1, label="Top k", precision=0, minimum=1, maximum=64, elem_id="role-k", min_width=70)
            rank_by = gr.Radio(list(RANK_BY), value=RANK_BY[0], label="Ranked on", elem_id="rank-by", min_width=150)
            role_off_btn = gr.Button("Switch these heads off", elem_id="role-off", min_width=120)
        role_off_md = gr.Markdown(elem_id="role-off-summary")  # which heads the last "switch off" took
        roles_md = gr.Markdown(elem_id="roles-summary")
        roles_probe_plot = plot("roles-probe-plot", "Head roles on the probe")
        roles_text_plot = plot("roles-text-plot", "Head roles on sentence 1")
    with gr.Tab("Patching", id="patching") as tab_patching:
        gr.Markdown(TAB_TEXT["patching"], elem_classes="tab-text")
        with gr.Row(equal_height=True):
            clean_answer = gr.Textbox(label="Clean answer token", max_lines=1,
                                      placeholder="blank: sentence 1's top token (or #id)",
                                      elem_id="clean-answer", min_width=150)
            corrupted_answer = gr.Textbox(label="Corrupted answer token", max_lines=1,
                                          placeholder="blank: sentence 2's top token (or #id)",
                                          elem_id="corrupted-answer", min_width=150)
            patch_btn = gr.Button("Patch", variant="primary", elem_id="patch-run", min_width=100)
        patch_md = gr.Markdown(elem_id="patching-summary")
        patch_plot = plot("patching-plot", "Activation patching")
    with gr.Tab("Lens", id="lens", visible=decoder) as tab_lens:
        gr.Markdown(TAB_TEXT["lens"], elem_classes="tab-text")
        lens_btn = gr.Button("Read every layer", variant="primary", elem_id="lens-run")
        lens_md = gr.Markdown(elem_id="lens-summary")
        lens_plot = plot("lens-plot", "Logit lens")
    scope = {k: v for k, v in locals().items() if isinstance(v, gr.components.Component)}
    return SimpleNamespace(**scope, tabs=dict(roles=tab_roles, patching=tab_patching, lens=tab_lens))

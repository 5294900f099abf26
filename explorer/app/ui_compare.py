"""The layout of the "Compare models" tab (no behaviour; see `events_compare`): the second model, suggested pairs,
the second model's own view and head switches (the first model's are the page's), and the two sides.
Called inside `ui.view_tabs`' tab strip."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import gradio as gr

from .head_labels import head_labels
from .texts import TAB_TEXT

# (label, "first|second"): pairs worth comparing; gpt2 / distilgpt2 are Hub ids (downloaded once, if online).
PAIRS = (("gpt2 vs distilgpt2", "openai-community/gpt2|distilbert/distilgpt2"),
         ("date-translator vs date-gpt", "date-translator|date-gpt"))
GROUPS2 = (("encoder", "Encoder self-attention", "enc2-heads"), ("decoder", "Decoder self-attention", "dec2-heads"),
           ("cross", "Cross-attention", "cross2-heads"))


def pair_choices() -> list[tuple[str, str]]:
    return [("Suggested pairs …", ""), *PAIRS]


def side(n: int) -> SimpleNamespace:
    """One model's column: heading (name, tokens, output summary), chosen head, All heads grid, output table."""
    with gr.Column(min_width=300):
        md = gr.Markdown(elem_id=f"compare{n}-md", elem_classes="compare-side")
        head = gr.Plot(show_label=False, elem_id=f"compare{n}-head", label=f"Model {n}: the chosen head")
        overview = gr.Plot(show_label=False, elem_id=f"compare{n}-overview", label=f"Model {n}: all heads")
        output = gr.Dataframe(label=f"Model {n}: output", interactive=False, wrap=True, elem_id=f"compare{n}-output",
                              max_height=320)
    return SimpleNamespace(md=md, head=head, overview=overview, output=output)


def compare_tab(sources: list[tuple[str, str]], second: str, kinds: dict[str, tuple[int, int]]) -> SimpleNamespace:
    """The tab; `second`: the second model it starts with, whose attention kinds -> (layers, heads) are `kinds`."""
    first = next(iter(kinds.values()), (1, 1))
    with gr.Tab("Compare models", id="compare") as tab_compare:
        gr.Markdown(TAB_TEXT["compare"], elem_classes="tab-text")
        with gr.Row(equal_height=True):
            model2 = gr.Dropdown(sources, value=second, label="Second model", allow_custom_value=True,
                                 elem_id="model2", min_width=220, scale=3,
                                 info="shipped name, Hub id or allowed folder")
            pair = gr.Dropdown(pair_choices(), value="", label="Suggested pair (both models)", elem_id="pair",
                               min_width=200, scale=2)
            compare_btn = gr.Button("Compare", variant="primary", elem_id="compare-run", min_width=100, scale=1)
        with gr.Row(equal_height=True):
            kind2 = gr.Dropdown(list(kinds), value="cross" if "cross" in kinds else next(iter(kinds), None),
                                label="Second model: attention", elem_id="kind2", allow_custom_value=True,
                                min_width=150)
            layer2 = gr.Dropdown(list(range(first[0])), value=0, label="Layer", elem_id="layer2",
                                 allow_custom_value=True, min_width=70)
            head2 = gr.Dropdown(list(range(first[1])), value=0, label="Head", elem_id="head2",
                                allow_custom_value=True, min_width=70)
        with gr.Accordion("Second model's heads (checked = on)", open=False, elem_id="heads2"):
            all_on2 = gr.Button("All on", size="sm", min_width=60, elem_id="all-on2")
            groups2: dict[str, Any] = {}
            for k, label, eid in GROUPS2:
                labels = head_labels(*kinds[k]) if k in kinds else []
                groups2[k] = gr.CheckboxGroup(labels, value=labels, label=label, visible=bool(labels),
                                              elem_id=eid, elem_classes="heads")
        compare_md = gr.Markdown(elem_id="compare-summary")
        with gr.Row(equal_height=False):
            first_side, second_side = side(1), side(2)
    scope = {k: v for k, v in locals().items() if isinstance(v, gr.components.Component)}
    return SimpleNamespace(**scope, groups2=groups2, sides=(first_side, second_side), tab_compare=tab_compare)

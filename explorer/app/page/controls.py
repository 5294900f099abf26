"""The controls column left of the figures: what is shown (attention kind, layer, head, sentence, the measure), the
language model's settings (the position predicted after, the continuation, Sample), the masks and the head switches
(one checkbox group per attention kind, `HEAD_GROUPS`: their order is the API's)."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from ..run.toggles import CUSTOM_MASKS
from ..run.view import default_kind
from ..serving.limits import DEFAULT_CONTINUATION, MAX_NEW_TOKENS
from .head_labels import head_labels
from .head_switches import heads_classes
from .model_panel import Start
from .sampling_controls import SamplingControls, sampling_controls

HEAD_GROUPS = (("encoder", "Encoder self-attention", "enc-heads"), ("decoder", "Decoder self-attention", "dec-heads"),
               ("cross", "Cross-attention", "cross-heads"))


@dataclass
class Controls:
    """The view, mask and head controls left of the figures."""

    kind: gr.Dropdown
    layer: gr.Dropdown
    head: gr.Dropdown
    sentence: gr.Dropdown
    measure: gr.Radio
    lm_controls: gr.Accordion
    position: gr.Number
    new_tokens: gr.Slider
    sampling: SamplingControls  # Sample (off: greedy), temperature, top-k, top-p, seed
    padding: gr.Checkbox
    causal: gr.Checkbox
    custom: gr.Radio
    block_token: gr.Number
    window: gr.Slider
    all_on: gr.Button
    only_this: gr.Button
    heads: dict[str, gr.CheckboxGroup]  # kind -> its head switches (labels "L0 H1" of the heads on)

    @property
    def head_groups(self) -> list[gr.CheckboxGroup]:
        """The head switches in HEAD_GROUPS order (encoder, decoder, cross): the API's order."""
        return [self.heads[k] for k, _, _ in HEAD_GROUPS]


def controls(start: Start) -> Controls:
    kinds = start.kinds
    first = next(iter(kinds.values()), (1, 1))
    with gr.Column(scale=1, min_width=270, elem_id="controls"):
        kind = gr.Dropdown(list(kinds), value=default_kind(kinds) if kinds else None, label="Attention shown",
                           elem_id="kind", allow_custom_value=True)
        with gr.Row():
            layer = gr.Dropdown(list(range(first[0])), value=0, label="Layer", elem_id="layer",
                                allow_custom_value=True, min_width=70)
            head = gr.Dropdown(list(range(first[1])), value=0, label="Head", elem_id="head", allow_custom_value=True,
                               min_width=70)
            sentence = gr.Dropdown([1, 2], value=1, label="Sentence", min_width=70, elem_id="sentence")
        # What the head and all-heads maps show (run.view.MEASURES; the value is /analyze's `measure`).
        measure = gr.Radio([("weights", "weights"), ("weight × |value written|", "values")], value="weights",
                           label="Heatmaps show", elem_id="measure",
                           info="how much each key is attended to, or that times the length of what it writes")
        language = start.info is not None and start.info.language_model
        generates = start.info is not None and start.info.generates
        with gr.Accordion("Language model" if language or not generates else "Generated output", open=True,
                          visible=generates, elem_id="lm-controls") as lm_controls:
            with gr.Row():
                position = gr.Number(-1, label="Predict after position", info="−1 = the last token", precision=0,
                                     min_width=80, elem_id="position", visible=language)
                new_tokens = gr.Slider(0, MAX_NEW_TOKENS, value=DEFAULT_CONTINUATION, step=1, min_width=80,
                                       label="Continue (tokens)", elem_id="new-tokens",
                                       visible=start.info is not None and start.info.answer_length is not None)
            sampling = sampling_controls()
        with gr.Accordion("Masks", open=True):
            padding = gr.Checkbox(True, label="Padding mask (ignore the shorter sentence's [PAD])",
                                  elem_id="padding")
            causal = gr.Checkbox(True, label="Causal mask (decoder: no looking ahead)", elem_id="causal")
            custom = gr.Radio(list(CUSTOM_MASKS), value="none", label="Custom mask, first stack", elem_id="custom-mask")
            with gr.Row():
                block_token = gr.Number(0, label="Blocked position", precision=0, minimum=0, min_width=80)
                window = gr.Slider(0, 16, value=2, step=1, label="Window k", min_width=80)
        with gr.Accordion("Heads (checked = on)", open=True):
            with gr.Row():
                all_on = gr.Button("All on", size="sm", min_width=60)
                only_this = gr.Button("Only this head", size="sm", min_width=60)
            heads = {}
            for k, label, eid in HEAD_GROUPS:
                labels = head_labels(*kinds[k]) if k in kinds else []
                heads[k] = gr.CheckboxGroup(labels, value=labels, label=label, visible=bool(labels) or not kinds,
                                            elem_id=eid, elem_classes=heads_classes(kinds[k][1] if k in kinds else 0))
    return Controls(kind, layer, head, sentence, measure, lm_controls, position, new_tokens, sampling, padding, causal,
                    custom, block_token, window, all_on, only_this, heads)

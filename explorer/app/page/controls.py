"""The controls column left of the figures: what is shown (attention kind, layer, head, sentence, the measure), the
language model's settings (the position predicted after, the continuation, Sample and its numbers), the masks and the
head switches (one checkbox group per attention kind). The groups and their order are laid out here; the settings
in each come from the table (page.settings: `lay`), so a new setting sits in its place without a change here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr

from .model_panel import Start
from .settings import HEADS, LANGUAGE_MODEL, MASKS, SAMPLING, VIEW, Setting, lay


@dataclass
class Controls:
    """The parts of the controls column that are not settings (those are the page's `settings`)."""

    lm_controls: gr.Accordion  # the language model's settings, shown for a model that generates
    sampling: gr.Column  # Sample's numbers, shown while it is ticked
    all_on: gr.Button
    only_this: gr.Button


def controls(start: Start, table: Sequence[Setting]) -> tuple[Controls, dict[str, Any]]:
    """The column, and the components of the settings placed in it (setting name -> component)."""
    with gr.Column(scale=1, min_width=270, elem_id="controls"):
        with gr.Column(elem_id="view-group"):  # the layer / head picker: beside the heatmap, in a class's view too
            made = lay(table, VIEW, start)
        language = start.info is not None and start.info.language_model
        generates = start.info is not None and start.info.generates
        with gr.Accordion("Language model" if language or not generates else "Generated output", open=True,
                          visible=generates, elem_id="lm-controls") as lm_controls:
            made |= lay(table, LANGUAGE_MODEL, start)
            with gr.Column(visible=False, elem_id="sampling-settings") as sampling:
                made |= lay(table, SAMPLING, start)
        with gr.Accordion("Masks", open=True, elem_id="masks-group"):
            made |= lay(table, MASKS, start)
        with gr.Accordion("Heads (checked = on)", open=True, elem_id="heads-group"):
            with gr.Row():
                all_on = gr.Button("All on", size="sm", min_width=60)
                only_this = gr.Button("Only this head", size="sm", min_width=60)
            made |= lay(table, HEADS, start)
    return Controls(lm_controls, sampling, all_on, only_this), made

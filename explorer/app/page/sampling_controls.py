"""The page's Sample settings, in the Language model / Generated output group of the controls
(explorer.app.page.controls): a checkbox (off: greedy decoding, the default) and, shown while it is ticked, the four
numbers `outputs.sampling.Sampling` takes, two by two, so that the controls column stays short. run.sampled turns the
values into a Sampling; /analyze takes them as its last five parameters (forms.RunForm)."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr


@dataclass
class SamplingControls:
    sample: gr.Checkbox  # off: each generated token is the most probable one
    settings: gr.Column  # the four numbers, shown while `sample` is ticked
    temperature: gr.Number  # > 0
    top_k: gr.Number  # 0 = off
    top_p: gr.Number  # 1 = off
    seed: gr.Number  # 0 .. 2**31 - 1: the same seed draws the same numbers

    @property
    def values(self) -> list[gr.components.Component]:
        """In /analyze's order (forms.RunForm's last fields)."""
        return [self.sample, self.temperature, self.top_k, self.top_p, self.seed]

    def wire(self, private: dict) -> None:
        """The numbers shown while Sample is ticked (by a click or by a link: `change`); `private` keeps the event out
        of the HTTP API."""
        self.sample.change(lambda on: gr.update(visible=bool(on)), [self.sample], [self.settings], **private)


def sampling_controls() -> SamplingControls:
    """Laid out where it is called (inside the Language model accordion)."""
    sample = gr.Checkbox(False, label="Sample (off: greedy, the most probable token)", elem_id="sample")
    with gr.Column(visible=False, elem_id="sampling-settings") as settings:
        with gr.Row():
            temperature = gr.Number(1.0, label="Temperature", min_width=60, elem_id="temperature")
            seed = gr.Number(0, label="Seed", precision=0, minimum=0, min_width=60, elem_id="seed")
        with gr.Row():
            top_k = gr.Number(0, label="Top-k (0: off)", precision=0, minimum=0, min_width=60, elem_id="top-k")
            top_p = gr.Number(1.0, label="Top-p (1: off)", min_width=60, elem_id="top-p")
    return SamplingControls(sample, settings, temperature, top_k, top_p, seed)

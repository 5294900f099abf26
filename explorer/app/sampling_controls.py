"""The page's Sample settings, in the Language model group of the controls (explorer.app.page): a checkbox (off:
greedy decoding, the default) and the four numbers `outputs.sampling.Sampling` takes, in two compact rows so that the
controls column stays short. Layout only: run.sampled turns the values into a Sampling, /analyze takes them last."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr


@dataclass
class SamplingControls:
    sample: gr.Checkbox  # off: each generated token is the most probable one
    temperature: gr.Number  # > 0
    top_k: gr.Number  # 0 = off
    top_p: gr.Number  # 1 = off
    seed: gr.Number  # 0 .. 2**31 - 1: the same seed draws the same numbers

    @property
    def values(self) -> list[gr.components.Component]:
        """In /analyze's order (forms.RunForm's last fields)."""
        return [self.sample, self.temperature, self.top_k, self.top_p, self.seed]


def sampling_controls() -> SamplingControls:
    """Laid out where it is called (inside the Language model accordion)."""
    with gr.Row(elem_id="sampling-row"):
        sample = gr.Checkbox(False, label="Sample", min_width=70, elem_id="sample",
                             info="off: greedy (the most probable token)")
        seed = gr.Number(0, label="Seed", precision=0, minimum=0, min_width=60, elem_id="seed")
    with gr.Row(elem_id="sampling-settings"):
        temperature = gr.Number(1.0, label="Temperature", min_width=60, elem_id="temperature")
        top_k = gr.Number(0, label="Top-k (0 off)", precision=0, minimum=0, min_width=60, elem_id="top-k")
        top_p = gr.Number(1.0, label="Top-p (1 off)", min_width=60, elem_id="top-p")
    return SamplingControls(sample, temperature, top_k, top_p, seed)

"""The greedy answer of a sampled Run, shown beside the sampled one (the output table): what the model writes with
Sample off, every head on and the model's own masks, so that a class sees what the draws changed (or that they could
change nothing: explorer.app.run.unchanged).

Shapes: N generated tokens per sentence.
"""

from __future__ import annotations

import torch

from ...checkpoints import LoadedModel
from .inputs import Inputs, TextCodec, answer_length
from .model_run import answer, generate_rows, is_language_model, takes_length
from .sentence_outputs import GeneratedText
from .toggles import Toggles


@torch.inference_mode()
def greedy_answers(loaded: LoadedModel, codec: TextCodec, inputs: Inputs, new_tokens: int | None) -> list[GeneratedText]:
    """Per sentence, the baseline's greedy answer (a language model: its continuation), as long as the Run's: the
    lengths `run_model` gives its generations (a language model `new_tokens` or its task's; a Hub encoder-decoder at
    most `new_tokens`; the date models their task's own)."""
    if is_language_model(loaded):
        length = answer_length(loaded) if new_tokens is None else new_tokens
    elif new_tokens is not None and takes_length(loaded):
        length = max(1, min(new_tokens, answer_length(loaded)))
    else:
        length = None
    if length == 0:
        return [GeneratedText("", [], [], []) for _ in inputs.rows]
    return [answer(loaded, codec, g, b) for g, b in generate_rows(loaded, inputs, Toggles(), None, length)]

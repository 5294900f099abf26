"""Baseline vs toggled: the two runs every view compares.

The baseline has every head on and the default masks (padding + causal, no custom mask); the toggled run
has what the person set. With nothing toggled the toggled run is the baseline (the model runs once).
`compare_in_steps` hands over a language model's comparison as soon as its attention is known, then again
once its outputs are (see `runs.run_language_model`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from ..checkpoints import LoadedModel
from .inputs import Inputs, TextCodec, codec_for, encode_inputs
from .runs import Run, run_model
from .toggles import Toggles, head_mask


@dataclass
class Comparison:
    inputs: Inputs
    toggles: Toggles
    head_mask: dict[str, torch.Tensor] | None  # kind -> (L, H), 1 = on; None = all on
    baseline: Run
    toggled: Run  # the same object as baseline when nothing is toggled
    codec: TextCodec

    @property
    def no_toggle(self) -> bool:
        return self.toggled is self.baseline

    @property
    def notices(self) -> list[str]:
        """Every notice once, in order (cuts of the input, adjusted masks)."""
        return list(dict.fromkeys(self.inputs.notices + self.baseline.notices + self.toggled.notices))

    @property
    def complete(self) -> bool:
        """Whether both runs have their outputs (else only their attention)."""
        return self.baseline.complete and self.toggled.complete


def compare_in_steps(loaded: LoadedModel, text1: str | None, text2: str | None, toggles: Toggles, max_tokens: int,
                     new_tokens: int | None = None) -> Iterator[Comparison]:
    """Encode the sentences, run the baseline and (if anything is toggled) the toggled model. Yields the
    Comparison once its attention is known (`complete` False: a language model's outputs are still to come),
    then once more, complete; a model whose runs are complete at once yields it once. `new_tokens`: how many
    tokens a language model continues with (None: its task's default)."""
    codec = codec_for(loaded)
    inputs = encode_inputs(loaded, codec, text1, text2, max_tokens)
    hm = head_mask(loaded.config, toggles)
    baseline = run_model(loaded, codec, inputs, Toggles(), None, new_tokens=new_tokens, later=True)
    if toggles.default_masks and hm is None:
        cmp = Comparison(inputs, toggles, None, baseline, baseline, codec)
    else:
        toggled = run_model(loaded, codec, inputs, toggles, hm, baseline=baseline, new_tokens=new_tokens, later=True)
        cmp = Comparison(inputs, toggles, hm, baseline, toggled, codec)
    if not cmp.complete:
        yield cmp
        baseline.finish()
        cmp.toggled.finish(baseline)  # rates the baseline's favourites (a no-op when it is the baseline)
    yield cmp


def compare(loaded: LoadedModel, text1: str | None, text2: str | None, toggles: Toggles, max_tokens: int,
            new_tokens: int | None = None) -> Comparison:
    """The complete comparison (`compare_in_steps` without the first look)."""
    *_, cmp = compare_in_steps(loaded, text1, text2, toggles, max_tokens, new_tokens)
    return cmp

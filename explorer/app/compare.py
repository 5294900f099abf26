"""Baseline vs toggled: the two runs every view compares.

The baseline has every head on and the default masks (padding + causal, no custom mask); the toggled run
has what the person set. With nothing toggled the toggled run is the baseline (the model runs once).
"""

from __future__ import annotations

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


def compare(loaded: LoadedModel, text1: str | None, text2: str | None, toggles: Toggles, max_tokens: int,
            new_tokens: int | None = None) -> Comparison:
    """Encode the sentences, run the baseline and (if anything is toggled) the toggled model. `new_tokens`: how
    many tokens a language model continues with (None: its task's default)."""
    codec = codec_for(loaded)
    inputs = encode_inputs(loaded, codec, text1, text2, max_tokens)
    hm = head_mask(loaded.config, toggles)
    baseline = run_model(loaded, codec, inputs, Toggles(), None, new_tokens=new_tokens)
    if toggles.default_masks and hm is None:
        return Comparison(inputs, toggles, None, baseline, baseline, codec)
    toggled = run_model(loaded, codec, inputs, toggles, hm, baseline=baseline, new_tokens=new_tokens)
    return Comparison(inputs, toggles, hm, baseline, toggled, codec)

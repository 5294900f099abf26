"""Steering from a contrast (ActAdd, Turner et al. 2023, "Steering Language Models With Activation Engineering"):
the residual stream of one text minus that of a contrast text at one layer, times a coefficient, added to the
residual stream of a run at that layer. No SAE needed.

Which positions, and why: the paper (its Algorithm 1) pads the shorter of the two prompts with space tokens to the
same length n, takes the (n, D) difference of their residual streams and adds it to the first n positions of the
user's prompt only (later positions and generated tokens get nothing). Here the difference is of the two texts' LAST
tokens, one (D,) vector, and it is added at EVERY position of the run, generated tokens included (as contrastive
activation addition, Rimsky et al. 2024, adds its vector): the two texts may then have any lengths, no padding token
has to be chosen for each tokenizer, and the steering holds over a whole continuation, which is what the page shows.

    contrast_vector(model, plus (T1,), minus (T2,), site) -> (D,) residual(plus)[last] - residual(minus)[last]
    add_hook(site, vector, coefficient) -> resid_hook adding coefficient * vector at every position of `site`
    layer_site(model, layer, point) -> "decoder.{layer}.{point}" (decoder-only) / "encoder...." (encoder-only)
    contrast_steering(model, tokenizer, text, plus, minus, layer=, coefficient=) -> ContrastSteering

Shapes: T tokens, D model width.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ...model import Transformer
from ...model.stacks import ResidHook
from ...tokenizer import Tokenizer
from ..sequence import as_row
from .splice import SteeredOutputs, capture_site, steered_outputs

POINTS = ("resid_pre", "resid_mid", "resid_post")


def layer_site(model: Transformer, layer: int, point: str = "resid_pre") -> str:
    """The residual site of `layer` of a single-stack model (TransformerLens's blocks.{layer}.hook_{point})."""
    config = model.config
    if config.arch == "encoder-decoder":
        raise ValueError("contrast steering here runs on one stack: a decoder-only or encoder-only model")
    L = config.decoder_layers if config.arch == "decoder" else config.encoder_layers
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < L:
        raise ValueError(f"layer {layer!r} is not a layer of this model: layers 0..{L - 1}")
    if point not in POINTS:
        raise ValueError(f"point {point!r} is not one of {', '.join(POINTS)}")
    if point == "resid_mid" and config.parallel_residual:
        raise ValueError("this model has a parallel residual (GPT-NeoX / Pythia): there is no resid_mid point")
    return f"{'decoder' if config.arch == 'decoder' else 'encoder'}.{layer}.{point}"


@torch.no_grad()
def contrast_vector(model: Transformer, plus: Tensor, minus: Tensor, site: str) -> Tensor:
    """(D,) the residual stream at `site` of the last token of `plus` minus that of `minus` (ids (T,) | (1, T))."""
    a = capture_site(model, as_row(plus, "plus"), site)[0, -1]  # (D,)
    b = capture_site(model, as_row(minus, "minus"), site)[0, -1]
    return (a - b).float()


def add_hook(site: str, vector: Tensor, coefficient: float) -> ResidHook:
    """resid_hook adding coefficient * vector (D,) to x at every position of `site` (with a cache, every new token)."""
    if isinstance(coefficient, bool) or not isinstance(coefficient, (int, float)) or not math.isfinite(coefficient):
        raise ValueError(f"the coefficient must be a finite number, got {coefficient!r}")
    push = vector * float(coefficient)

    def add(name: str, x: Tensor) -> Tensor:
        return x + push.to(device=x.device, dtype=x.dtype) if name == site else x

    return add


@dataclass
class ContrastSteering:
    site: str  # where the vector was added, e.g. "decoder.6.resid_pre"
    coefficient: float
    vector_norm: float  # ||plus - minus|| at that site (before the coefficient)
    plus_ids: list[int]  # the two texts as the model read them
    minus_ids: list[int]
    outputs: SteeredOutputs  # next tokens and continuation, baseline vs steered


def _ids(tokenizer: Tokenizer, text: str, name: str, max_len: int) -> Tensor:
    ids = tokenizer.encode(text, max_length=max_len).ids
    if not ids:
        raise ValueError(f"the {name} text gives no tokens")
    return torch.tensor(ids)


def contrast_steering(model: Transformer, tokenizer: Tokenizer, text: str, plus: str, minus: str, *, layer: int,
                      coefficient: float, point: str = "resid_pre", position: int = -1, k: int = 10,
                      max_new_tokens: int = 20, head_mask: Mapping[str, Any] | None = None) -> ContrastSteering:
    """Steer the run on `text` with coefficient * (residual(plus) - residual(minus)) at `layer` (see the module
    docstring); baseline vs steered next tokens at `position` and greedy continuations (decoder-only LMs)."""
    site = layer_site(model, layer, point)
    max_len = model.config.max_len
    plus_ids, minus_ids = _ids(tokenizer, plus, "plus", max_len), _ids(tokenizer, minus, "contrast", max_len)
    vector = contrast_vector(model, plus_ids, minus_ids, site)
    hook = add_hook(site, vector, coefficient)
    outputs = steered_outputs(model, tokenizer, text, hook, position=position, k=k, max_new_tokens=max_new_tokens,
                              head_mask=head_mask)
    return ContrastSteering(site, float(coefficient), float(vector.norm()), plus_ids.tolist(), minus_ids.tolist(),
                            outputs)

"""What a forward pass returns. One fixed type whatever the flags: tuples are empty where an
architecture has no such attention (or weights were not requested), never a different type.

Shapes: B batch, H heads, T target length, S source length, D model width, V vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from torch import Tensor


class Attentions(NamedTuple):
    encoder: tuple[Tensor, ...]  # encoder self-attention, one (B, H, S, S) per layer
    decoder: tuple[Tensor, ...]  # decoder (or decoder-only) self-attention, one (B, H, T, T) per layer
    cross: tuple[Tensor, ...]  # encoder-decoder attention, one (B, H, T, S) per layer


class AttentionMasks(NamedTuple):
    """The boolean masks (True = may attend) a forward pass combined and applied, per attention kind,
    each broadcastable to (B, 1, Tq, Tk) (padding alone is (B, 1, 1, Tk)); None = nothing was masked.
    The app draws these, so a mask figure always shows what the model actually used."""

    encoder: Tensor | None = None
    decoder: Tensor | None = None
    cross: Tensor | None = None


class HiddenStates(NamedTuple):
    encoder: tuple[Tensor, ...]  # embeddings, then each encoder layer's output (before a final norm)
    decoder: tuple[Tensor, ...]  # the same for the decoder


@dataclass
class EncoderResult:
    memory: Tensor  # (B, S, D) encoder output after its final norm, if any
    key_mask: Tensor | None  # (B, S) True = real source token; None when padding is off
    attentions: tuple[Tensor, ...]
    hidden_states: tuple[Tensor, ...]
    mask: Tensor | None = None  # the self-attention mask applied (see AttentionMasks)


@dataclass
class DecoderResult:
    output: Tensor  # (B, T, D)
    self_attentions: tuple[Tensor, ...]
    cross_attentions: tuple[Tensor, ...]
    hidden_states: tuple[Tensor, ...]
    self_mask: Tensor | None = None  # masks applied to self- and cross-attention (see AttentionMasks)
    cross_mask: Tensor | None = None


@dataclass
class TransformerOutput:
    logits: Tensor | None  # (B, T, V) sequence models and MLM heads, (B, C) classifier, None for a bare encoder
    attentions: Attentions
    hidden_states: HiddenStates
    last_hidden_state: Tensor  # (B, T, D) output of the last stack
    encoder_last_hidden_state: Tensor | None  # (B, S, D) encoder memory, None for decoder-only
    masks: AttentionMasks = AttentionMasks()  # what each attention kind was masked with

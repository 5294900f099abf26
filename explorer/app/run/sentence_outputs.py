"""What one run of the model produced for one sentence, by the kind of model: generated text (sequence models), a
language model's next tokens and continuation, a masked LM's fillers, class probabilities, a sentence embedding.

Shapes: T tokens of the sentence, k tokens listed per position, D model width.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

from ...outputs import causal_lm


@dataclass(frozen=True)
class GeneratedText:
    text: str
    ids: list[int]  # generated ids, up to and including the end token
    labels: list[str]
    probs: list[float]  # probability of each generated token when it was chosen


@dataclass(frozen=True)
class Embedding:
    vector: Tensor  # (D,) pooled last hidden state


@dataclass(frozen=True)
class ClassProbabilities:
    probs: dict[str, float]  # class name -> probability


@dataclass(frozen=True)
class MaskFillers:
    """A masked language model on one sentence: the most probable fillers of each of its M mask tokens."""

    fillers: list[causal_lm.NextTokens]  # per mask token, in order: its position, the top-k ids, labels, probabilities
    favourite_probs: list[float] | None  # per mask token, the probability of the baseline's top filler (toggled run)
    mask_token: str  # the model's mask token ([MASK], <mask>), for a sentence that has none


@dataclass(frozen=True)
class NextTokens:
    """A causal language model on one sentence: what it expects after each of its T tokens."""

    top_ids: Tensor  # (T, k) the most probable next tokens after each position
    top_probs: Tensor  # (T, k)
    surprisal: Tensor  # (T - 1,) nats of each token but the first, given the ones before
    favourite_probs: Tensor | None  # (T,) probability of the baseline's favourite after each position (toggled run)
    continuation: GeneratedText  # continuation of the whole sentence (greedy, or sampled: run.sampled)


Output = GeneratedText | Embedding | ClassProbabilities | NextTokens | MaskFillers

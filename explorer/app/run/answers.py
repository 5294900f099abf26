"""Sentence 1's output as one text per run, baseline and toggled: what the lesson panel's checks read of a Run
(page.lesson_format.RunFacts). Generated text as generated; a language model's continuation (its top next token when
it continues with none); a masked LM's top filler; a classifier's top class; no text for an embedding.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...labels import printable
from .pair import Comparison
from .sentence_outputs import ClassProbabilities, GeneratedText, MaskFillers, NextTokens


@dataclass(frozen=True)
class Answers:
    baseline: str  # every head on, the model's own masks
    toggled: str  # with the toggles (the same text when nothing is toggled)


def output_text(out: object, codec: object) -> str:
    if isinstance(out, GeneratedText):
        return printable(out.text)
    if isinstance(out, NextTokens):
        if out.continuation.ids:
            return printable(out.continuation.text).strip()
        return codec.labels([int(out.top_ids[-1, 0])])[0]  # type: ignore[attr-defined]
    if isinstance(out, MaskFillers):
        return out.fillers[0].labels[0] if out.fillers else ""
    if isinstance(out, ClassProbabilities):
        return max(out.probs, key=out.probs.get) if out.probs else ""
    return ""


def answers(cmp: Comparison) -> Answers:
    base = output_text(cmp.baseline.outputs[0], cmp.codec)
    return Answers(base, base if cmp.no_toggle else output_text(cmp.toggled.outputs[0], cmp.codec))

"""The Compare models tab's typed forms: /set_model2's and /compare_models' parameters, in the documented order
(docs/compare.md); `CompareForm.side_forms` splits one comparison into the two models' page Runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...forms import RunForm


@dataclass(frozen=True)
class SecondModelForm:
    """/set_model2: check and load the second model; its attention kinds, layers, heads and head labels (all on)."""

    session: Any
    model2: Any


@dataclass(frozen=True)
class CompareForm:
    """/compare_models: the page's Run settings for the first model, and the second model's own view and switches."""

    session: Any
    model2: Any
    sentence1: Any
    sentence2: Any
    padding_mask: Any
    causal_mask: Any
    custom_mask: Any
    blocked_position: Any
    window: Any
    encoder_heads_on: Any
    decoder_heads_on: Any
    cross_heads_on: Any
    kind: Any
    layer: Any
    head: Any
    sentence: Any
    predict_after: Any
    continue_tokens: Any
    measure: Any
    kind2: Any
    layer2: Any
    head2: Any
    encoder_heads_on2: Any
    decoder_heads_on2: Any
    cross_heads_on2: Any

    def side_forms(self) -> tuple[RunForm, RunForm]:
        """The first and the second model's Runs as the page's RunForm: shared sentences, masks, sentence, position,
        measure and continuation; each its own view and head switches."""
        shared = dict(sentence1=self.sentence1, sentence2=self.sentence2, padding_mask=self.padding_mask,
                      causal_mask=self.causal_mask, custom_mask=self.custom_mask,
                      blocked_position=self.blocked_position, window=self.window, sentence=self.sentence,
                      predict_after=self.predict_after, continue_tokens=self.continue_tokens, measure=self.measure)
        first = RunForm(session=self.session, encoder_heads_on=self.encoder_heads_on,
                        decoder_heads_on=self.decoder_heads_on, cross_heads_on=self.cross_heads_on, kind=self.kind,
                        layer=self.layer, head=self.head, **shared)
        second = RunForm(session=None, encoder_heads_on=self.encoder_heads_on2, decoder_heads_on=self.decoder_heads_on2,
                         cross_heads_on=self.cross_heads_on2, kind=self.kind2, layer=self.layer2, head=self.head2,
                         **shared)
        return first, second

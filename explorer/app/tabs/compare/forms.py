"""The Compare models tab's typed forms: /set_model2's and /compare_models' parameters, in the documented order
(docs/compare.md); `CompareForm.side_forms` splits one comparison into the two models' page Runs."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ...forms import PageView, RunForm


@dataclass(frozen=True)
class ModelPair:
    """A suggested pair of models, as its dropdown's value "first|second" (tab.PAIRS)."""

    first: str
    second: str

    @classmethod
    def parse(cls, text: Any) -> "ModelPair":
        """ValueError for a value that is not two names."""
        first, bar, second = str(text or "").partition("|")
        if not (bar and first.strip() and second.strip()):
            raise ValueError(f"not a pair of models: {str(text)[:60]!r}")
        return cls(first, second)


@dataclass(frozen=True)
class SecondModelForm:
    """/set_model2: check and load the second model; its attention kinds, layers, heads and head labels (all on)."""

    session: Any
    model2: Any
    lang: Any = "en"  # the page's language: what the tab refuses is said in it (i18n.messages)


@dataclass(frozen=True)
class CompareForm:
    """/compare_models: the page's Run settings for the first model (its view part, the position, continuation and
    measure), and the second model's own view and switches."""

    session: Any
    model2: Any
    view: PageView
    predict_after: Any
    continue_tokens: Any
    measure: Any
    kind2: Any
    layer2: Any
    head2: Any
    encoder_heads_on2: Any
    decoder_heads_on2: Any
    cross_heads_on2: Any
    lang: Any = "en"  # the page's language: what the tab refuses is said in it (i18n.messages)

    def side_forms(self) -> tuple[RunForm, RunForm]:
        """The first and the second model's Runs as the page's RunForm: shared sentences, masks, sentence, position,
        measure and continuation; each its own view and head switches (greedy: no sampling)."""
        second = replace(self.view, kind=self.kind2, layer=self.layer2, head=self.head2,
                         encoder_heads_on=self.encoder_heads_on2, decoder_heads_on=self.decoder_heads_on2,
                         cross_heads_on=self.cross_heads_on2)
        shared = dict(predict_after=self.predict_after, continue_tokens=self.continue_tokens, measure=self.measure)
        return (RunForm(session=self.session, **vars(self.view), **shared),
                RunForm(session=None, **vars(second), **shared))

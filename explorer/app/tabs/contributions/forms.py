"""The Contributions tab's form: /contributions' parameters, in order (docs/contributions.md), and the request they
make (app.tabs.contributions.result.ContributionRequest)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...run.request import number_of, page_heads, toggles_from, whole_number
from .result import DEFAULT_THRESHOLD, ContributionRequest
from .token_attribution import DEFAULT_STEPS


@dataclass(frozen=True)
class ContributionForm:
    """/contributions: where the prediction at `position` of sentence 1 comes from, baseline vs the head switches."""

    session: Any
    sentence1: Any
    position: Any = -1
    target_token: Any = ""
    minus_token: Any = ""
    method: Any = "integrated_gradients"
    steps: Any = DEFAULT_STEPS
    encoder_heads_on: Any = None
    decoder_heads_on: Any = None
    cross_heads_on: Any = None
    threshold: Any = DEFAULT_THRESHOLD
    lang: Any = "en"  # the page's language: what the tab refuses is said in it (i18n.messages)

    def request(self, kinds: Any, extend: Any = (), asked: Any = "") -> ContributionRequest:
        toggles = toggles_from(True, True, "none", 0, 0, page_heads(kinds, self.encoder_heads_on,
                                                                    self.decoder_heads_on, self.cross_heads_on))
        threshold = number_of(self.threshold, DEFAULT_THRESHOLD, "the graph's threshold")
        return ContributionRequest(str(self.sentence1 or ""), whole_number(self.position, -1),
                                   str(self.target_token or ""), str(self.minus_token or ""),
                                   str(self.method or "integrated_gradients"), whole_number(self.steps, DEFAULT_STEPS),
                                   toggles.heads_on, threshold, tuple(int(i) for i in extend or ()), str(asked or ""))

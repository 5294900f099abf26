"""The Inside a head tab's endpoint as a typed form (explorer.app.forms.endpoint): /head_computation's parameters, the
fields of `HeadForm` in order; and what its link keys accept (`*_key`: link.values' contract, a value refused raises
Invalid completing the notice "key 'value' ..."). Pure: no Gradio, no model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...link.values import Invalid, whole
from ...run.request import page_heads, toggles_from, whole_number
from ...serving.limits import DEFAULT_CONTINUATION
from .computation import LINES_MAX, BlockRequest


@dataclass(frozen=True)
class HeadForm:
    """/head_computation: the page's view and toggles (named as /analyze names them), the query and the lines' heads."""

    session: Any
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
    continue_tokens: Any = DEFAULT_CONTINUATION
    measure: Any = "weights"
    query: Any = -1
    lines_heads: Any = None

    def block(self, kinds: Any) -> BlockRequest:
        toggles = toggles_from(self.padding_mask, self.causal_mask, self.custom_mask, self.blocked_position,
                               self.window, page_heads(kinds, self.encoder_heads_on, self.decoder_heads_on,
                                                       self.cross_heads_on))
        return BlockRequest(str(self.sentence1 or ""), str(self.sentence2 or ""), toggles, str(self.kind or ""),
                            whole_number(self.layer, 0), whole_number(self.sentence, 1),
                            whole_number(self.continue_tokens, DEFAULT_CONTINUATION))


def query_key(text: str, check_model: Any) -> int:
    return whole(text, -10**6, 10**6)


def lines_key(text: str, check_model: Any) -> list[int]:
    """"0,2,5" (or the page's "[0, 2, 5]") -> head numbers."""
    heads = [whole(h, 0, 255) for h in text.strip("[] ").replace(",", " ").split()]
    if len(heads) > LINES_MAX:
        raise Invalid(f"names more than {LINES_MAX} heads")
    return heads

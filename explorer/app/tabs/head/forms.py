"""The Inside a head tab's endpoint as a typed form (explorer.app.forms.endpoint): /head_computation's parameters, the
fields of `HeadForm` in order (its `view` part: the page's, as /analyze names them); the click that opens the tab on
a query (`HeadClick`); and what its link keys accept (`*_key`: link.values' contract, a value refused raises Invalid
completing the notice "key 'value' ..."). Pure: no Gradio, no model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...forms import PageView
from ...link.values import Invalid, whole
from ...page.settings import default_of
from ...run.request import whole_number
from ...serving.errors import AppError
from ...serving.limits import DEFAULT_CONTINUATION
from ....interpret.head_steps import MAX_KEYS
from .computation import LINES_MAX, BlockRequest


@dataclass(frozen=True)
class HeadForm:
    """/head_computation: the page's view and toggles, how far a language model continues, what the lines measure,
    the query and the lines' heads (the page's part fixed: a new page setting does not shift these); then the keys
    worked through step by step (empty: the 3 strongest, the query itself and the first masked key) and the words
    ("plain" or "details")."""

    session: Any
    view: PageView
    continue_tokens: Any = default_of("continue_tokens")
    measure: Any = default_of("measure")
    query: Any = -1
    lines_heads: Any = None
    keys: Any = None
    words: Any = "plain"
    lang: Any = "en"  # the page's language: what the tab refuses is said in it (i18n.messages)

    @property
    def plain(self) -> bool:
        """Plain words (the default), else every detail ("details")."""
        if self.words not in (None, "", "plain", "details"):
            raise AppError(f"words must be 'plain' or 'details', got {str(self.words)[:20]!r}")
        return self.words != "details"

    def block(self, kinds: Any) -> BlockRequest:
        v = self.view
        return BlockRequest(str(v.sentence1 or ""), str(v.sentence2 or ""), v.toggles(kinds), str(v.kind or ""),
                            whole_number(v.layer, 0), whole_number(v.sentence, 1),
                            whole_number(self.continue_tokens, DEFAULT_CONTINUATION))


@dataclass(frozen=True)
class HeadClick:
    """A query clicked (on a row of the Attention tab's heatmap, on a query of the lines view or of the query-key
    map): the page script writes "kind|layer|head|query|stamp" (kind, layer, head: the page's controls at the
    click)."""

    kind: str
    layer: str
    head: str
    query: int
    stamp: str

    @classmethod
    def parse(cls, text: Any) -> "HeadClick":
        """ValueError for anything the script does not write."""
        parts = str(text or "").split("|")
        if len(parts) != 5 or not parts[3].isdigit():
            raise ValueError(f"not a clicked query: {str(text)[:40]!r}")
        kind, layer, head, query, stamp = parts
        return cls(kind, layer, head, int(query), stamp)


def query_key(text: str, check_model: Any) -> int:
    return whole(text, -10**6, 10**6)


def lines_key(text: str, check_model: Any) -> list[int]:
    """"0,2,5" (or the page's "[0, 2, 5]") -> head numbers."""
    heads = [whole(h, 0, 255) for h in text.strip("[] ").replace(",", " ").split()]
    if len(heads) > LINES_MAX:
        raise Invalid(f"names more than {LINES_MAX} heads")
    return heads


def keys_key(text: str, check_model: Any) -> list[int]:
    """"0,4,7" (or the page's "[0, 4, 7]") -> the key positions worked through, at most MAX_KEYS."""
    keys = [whole(k, 0, 10**6) for k in text.strip("[] ").replace(",", " ").split()]
    if len(keys) > MAX_KEYS:
        raise Invalid(f"names more than {MAX_KEYS} keys")
    return keys


def words_key(text: str, check_model: Any) -> str:
    """"plain" or "details"."""
    if text not in ("plain", "details"):
        raise Invalid("is not 'plain' or 'details'")
    return text

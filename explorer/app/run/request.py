"""What the page asks for, typed once at the Gradio boundary: `Session`, which model a session looks at, and
`RunRequest`, one Run: that session, the sentences, the masks and head switches, the view, and how many tokens a
language model continues with.

The page's /analyze event has many inputs (their names and order are the HTTP API); `RunRequest.from_page` turns
them into this object, and everything after the boundary (the memory gate, the runs, the kept result and a tab
computed again from it) reads its fields by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
import json
from typing import Any

from .build import BuildSpec
from .errors import AppError
from .head_labels import parse_heads
from .limits import DEFAULT_CONTINUATION, MAX_NEW_TOKENS
from .toggles import Toggles
from .views import View



def whole_number(value: Any, default: int) -> int:
    """A page number field's value as an int (empty -> default); AppError for anything else."""
    if value is None or value == "":
        return default
    try:
        return int(value)
    except (TypeError, ValueError) as err:
        raise AppError(f"expected a whole number, got {str(value)[:20]!r}") from err


def toggles_from(padding: Any, causal: Any, custom: Any, block_token: Any, window: Any,
                 heads_on: Mapping[str, Any] | None = None) -> Toggles:
    """Component values -> Toggles; `heads_on` maps kind -> checkbox labels that are on (None = all on)."""
    try:
        block, win = int(block_token or 0), int(window or 0)
    except (TypeError, ValueError) as err:
        raise AppError(f"mask settings must be whole numbers: {err}") from err
    heads = None if heads_on is None else {k: parse_heads(v) for k, v in heads_on.items()}
    return Toggles(bool(padding), bool(causal), custom or "none", block, win, heads)


@dataclass(frozen=True)
class Session:
    """Which model a session looks at: a loaded `source`, or a `build` spec; and on which device."""

    source: str = ""  # shipped name, Hub id or allowed folder ("" for a built model)
    device: str = "auto"
    build: BuildSpec | None = None

    @property
    def key(self) -> str:
        """The registry key: equal sessions share one model."""
        if self.build is not None:
            return f"build:{json.dumps(self.build.to_dict(), sort_keys=True)}@{self.device}"
        return f"load:{self.source}@{self.device}"


@dataclass(frozen=True)
class RunRequest:
    session: Session  # which model, on which device
    text1: str
    text2: str
    toggles: Toggles  # masks and heads as set (the baseline run has the defaults)
    view: View  # kind, layer, head, sentence, and the next-token position of a language model
    new_tokens: int  # tokens a language model continues with (a Hub encoder-decoder generates at most)

    @classmethod
    def from_page(cls, session: Session, kinds: Mapping[str, Any], sentence1: Any, sentence2: Any, padding: Any,
                  causal: Any, custom: Any, blocked_position: Any, window: Any, heads_on: Mapping[str, Any],
                  kind: Any, layer: Any, head: Any, sentence: Any, predict_after: Any,
                  continue_tokens: Any, measure: Any = "weights") -> "RunRequest":
        """The page's values (`heads_on`: kind -> the labels of the heads switched on) for a model whose attention
        kinds are `kinds`; AppError naming a value that is not a number."""
        toggles = toggles_from(padding, causal, custom, blocked_position, window,
                               {k: heads_on.get(k) or [] for k in kinds})
        view = View(str(kind or ""), whole_number(layer, 0), whole_number(head, 0), whole_number(sentence, 1),
                    whole_number(predict_after, -1), str(measure or "weights"))
        new_tokens = min(max(whole_number(continue_tokens, DEFAULT_CONTINUATION), 0), MAX_NEW_TOKENS)
        return cls(session, str(sentence1 or ""), str(sentence2 or ""), toggles, view, new_tokens)

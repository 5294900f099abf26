"""What the page asks for, typed once at the Gradio boundary: `Session`, which model a session looks at, and
`RunRequest`, one Run: that session, the sentences, the masks and head switches, the view, how many tokens a
language model continues with, and how they are drawn (greedy, or sampled: run.sampled).

The page's /analyze event has many inputs (their names and order are the HTTP API); `forms.RunForm` turns them into
this object, and everything after the boundary (the memory gate, the runs, the kept result and a tab computed again
from it) reads its fields by name.
"""

from __future__ import annotations

from collections.abc import Mapping
import json
import math
from dataclasses import dataclass
from typing import Any

from ...outputs.sampling import Sampling
from ..page.head_labels import parse_heads
from ..serving.build import BuildSpec
from ..serving.errors import AppError
from ..serving.limits import DEFAULT_CONTINUATION, MAX_NEW_TOKENS
from .toggles import Toggles
from .view import View


def whole_number(value: Any, default: int) -> int:
    """A page number field's value as an int (empty -> default); AppError for anything else."""
    if value is None or value == "":
        return default
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError) as err:  # OverflowError: infinity
        raise AppError(f"expected a whole number, got {str(value)[:20]!r}") from err


def number_of(value: Any, default: float, what: str) -> float:
    """A page number field's value as a finite float (empty -> default); AppError naming `what` for anything else."""
    try:
        number = float(default if value is None or value == "" else value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond float's range
        number = math.nan
    if not math.isfinite(number):
        raise AppError(f"{what} must be a finite number, got {str(value)[:40]!r}")
    return number


def toggles_from(padding: Any, causal: Any, custom: Any, block_token: Any, window: Any,
                 heads_on: Mapping[str, Any] | None = None) -> Toggles:
    """Component values -> Toggles; `heads_on` maps kind -> checkbox labels that are on (None = all on)."""
    try:
        block, win = int(block_token or 0), int(window or 0)
    except (TypeError, ValueError) as err:
        raise AppError(f"mask settings must be whole numbers: {err}") from err
    heads = None if heads_on is None else {k: parse_heads(v) for k, v in heads_on.items()}
    return Toggles(bool(padding), bool(causal), custom or "none", block, win, heads)


def page_heads(kinds: Mapping[str, Any], encoder: Any, decoder: Any, cross: Any) -> dict[str, list[str]]:
    """The page's three head-switch values -> kind -> the labels of the heads on, for the kinds a model has (a kind
    whose switches are empty or missing has every head off)."""
    given = {"encoder": encoder, "decoder": decoder, "cross": cross}
    return {k: list(given.get(k) or []) for k in kinds}


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
    sampling: Sampling | None = None  # how generated tokens are drawn; None: greedy (the most probable)
    lang: str = "en"  # the page's language (explorer.app.i18n): its state line's and notices' words

    @classmethod
    def of(cls, session: Session, text1: Any, text2: Any, toggles: Toggles, view: View,
           continue_tokens: Any = DEFAULT_CONTINUATION, sampling: Sampling | None = None,
           lang: str = "en") -> "RunRequest":
        """A Run of the page's texts (any value; None = empty) with tokens to continue clamped to the page's range."""
        new_tokens = min(max(whole_number(continue_tokens, DEFAULT_CONTINUATION), 0), MAX_NEW_TOKENS)
        return cls(session, str(text1 or ""), str(text2 or ""), toggles, view, new_tokens, sampling, lang)

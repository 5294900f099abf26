"""The values a link's keys take, as text and back: whole numbers in a range, choices, flags, sentences, and the
heads switched off ("decoder:L1H2,L1H3;cross:L0H0"). A value a key does not accept raises `Invalid`, whose message
ends the notice "key 'value' ..."; nothing here raises anything else. Pure: no Gradio, no files.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl

from ...outputs.sampling import Sampling
from ..run.toggles import Head
from ..run.view import KIND_TITLES
from ..serving.limits import MAX_CHARS

KINDS = tuple(KIND_TITLES)  # encoder, decoder, cross: the order `off` lists them in
SHOWN_CHARS = 30  # of a rejected value, in its notice
_WHOLE = re.compile(r"[+-]?\d{1,7}")
_SEED = re.compile(r"[+-]?\d{1,10}")  # a seed is up to 2**31 - 1
_HEAD = re.compile(r"L(\d{1,4}) ?H(\d{1,4})")
_FLAGS = {"1": True, "true": True, "on": True, "yes": True, "0": False, "false": False, "off": False, "no": False}


class Invalid(ValueError):
    """A value a key does not accept; its message completes "key 'value' ...": the notice."""


def show(value: str) -> str:
    """A rejected value for its notice: quoted, control characters escaped, at most SHOWN_CHARS characters."""
    return repr(value[:SHOWN_CHARS] + ("…" if len(value) > SHOWN_CHARS else ""))


def whole(text: str, low: int, high: int) -> int:
    if not _WHOLE.fullmatch(text.strip()):
        raise Invalid("is not a whole number")
    value = int(text)
    if not low <= value <= high:
        raise Invalid(f"is not between {low:,} and {high:,}")
    return value


def sampling_value(key: str, text: str) -> float | int:
    """A sampling setting (`temperature`, `top_k`, `top_p`, `seed`) as outputs.sampling.Sampling checks it."""
    whole_number = key in ("top_k", "seed")
    try:
        if whole_number and not _SEED.fullmatch(text.strip()):
            raise ValueError
        value: float | int = int(text) if whole_number else float(text)
    except ValueError:
        raise Invalid("is not a whole number" if whole_number else "is not a number") from None
    try:
        Sampling(**{key: value})
    except ValueError as err:
        raise Invalid(f"is refused: {str(err).split(' (for greedy')[0]}") from None  # the page's words suffice
    return value


def choice(text: str, choices: Collection[str]) -> str:
    if text not in choices:
        raise Invalid(f"is not one of {', '.join(choices)}")
    return text


def flag(text: str) -> bool:
    try:
        return _FLAGS[text.strip().lower()]
    except KeyError:
        raise Invalid("is not 1 or 0") from None


def sentence_text(text: str, notices: list[str], key: str) -> str:
    """A sentence as typed: any text; beyond MAX_CHARS it is cut (the page's Run cuts there too)."""
    if len(text) > MAX_CHARS:
        notices.append(f"{key} has {len(text):,} characters; only the first {MAX_CHARS:,} are used")
        return text[:MAX_CHARS]
    return text


def format_heads(heads: Iterable[Head]) -> str:
    return ",".join(f"L{layer}H{head}" for layer, head in sorted(heads))


def format_off(off: Mapping[str, Collection[Head]]) -> str:
    """{"decoder": {(1, 2), (1, 3)}, "cross": {(0, 0)}} -> "decoder:L1H2,L1H3;cross:L0H0" (kinds in KINDS order,
    heads sorted; kinds with no head off left out)."""
    return ";".join(f"{k}:{format_heads(off[k])}" for k in KINDS if off.get(k))


def parse_off(text: str) -> dict[str, frozenset[Head]]:
    """"decoder:L1H2,L1H3;cross:L0H0" -> kind -> heads off. "L1 H2" (the page's label) is accepted too."""
    off: dict[str, set[Head]] = {}
    for group in filter(None, (g.strip() for g in text.split(";"))):
        kind, colon, heads = group.partition(":")
        kind = kind.strip()
        if not colon or kind not in KINDS:
            raise Invalid(f"is not of the form kind:L0H1,L0H2;kind:… with kind one of {', '.join(KINDS)}")
        for label in filter(None, (h.strip() for h in heads.split(","))):
            m = _HEAD.fullmatch(label)
            if not m:
                raise Invalid(f"names a head {show(label)} not of the form L0H1")
            off.setdefault(kind, set()).add((int(m.group(1)), int(m.group(2))))
    return {k: frozenset(v) for k, v in off.items()}


def query_pairs(query: Mapping[str, Any] | Iterable[tuple[str, Any]] | str) -> list[tuple[str, str]]:
    """A query string, a mapping (Gradio's request.query_params: str values, or lists) or pairs -> (key, value)."""
    if isinstance(query, str):
        return parse_qsl(query.lstrip("?"), keep_blank_values=True, max_num_fields=None)
    items = query.items() if isinstance(query, Mapping) else query
    pairs = []
    for key, value in items:
        values = value if isinstance(value, (list, tuple)) else [value]
        pairs.extend((str(key), "" if v is None else str(v)) for v in values)
    return pairs


def number_text(value: Any) -> str:
    """A page number (Gradio gives floats for gr.Number / gr.Slider: 3.0) as the link writes it: "3"."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


KeyParser = Callable[[str, Any], Any]  # a tab's link key: (text, check_model) -> value, Invalid if refused


def whole_key(low: int, high: int) -> KeyParser:
    """A link key taking a whole number from `low` to `high`."""
    return lambda text, check_model: whole(text, low, high)


def number_key(low: float, high: float) -> KeyParser:
    """A link key taking a number from `low` to `high`."""
    def parse(text: str, check_model: Any) -> float:
        try:
            value = float(text)
        except ValueError:
            raise Invalid("is not a number") from None
        if not low <= value <= high:
            raise Invalid(f"is not between {low:g} and {high:g}")
        return value
    return parse


def choice_key(choices: Collection[str]) -> KeyParser:
    """A link key taking one of `choices`."""
    return lambda text, check_model: choice(text, choices)


def text_key(most: int) -> KeyParser:
    """A link key taking any text of at most `most` characters."""
    def parse(text: str, check_model: Any) -> str:
        if len(text) > most:
            raise Invalid(f"is longer than {most} characters")
        return text
    return parse

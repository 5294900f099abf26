"""Words computed now and said later in a language: `Said(key, values)` holds a catalogue key and its values (a
number as `Num`, another `Said`, or text said as it is: a token, a model's output), and `in_language(lang)` writes
them. A Run's result is computed once and kept (explorer.app.serving.kept) for whatever language asks; so what it says
is kept as keys and values, never as English words (run.unchanged: the "why nothing changed" line). Plain data:
pickled with the result from a GPU worker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .words import ENGLISH, language, number, t

_DECIMAL = re.compile(r"-?\d+(?:\.(\d+))?")


class Num(str):
    """A number as English writes it ("0.98", "12"): said the language's way with the same decimals ("0,98")."""

    def in_language(self, lang: str) -> str:
        m = _DECIMAL.fullmatch(self)
        if lang == ENGLISH or m is None:
            return str(self)
        return number(float(self), lang, digits=len(m.group(1) or ""))


@dataclass(frozen=True)
class Said:
    """The words of catalogue key `key` with `values` (name, value) filled in, in any language."""

    key: str
    values: tuple[tuple[str, Any], ...] = ()

    def in_language(self, lang: Any = ENGLISH) -> str:
        lang = language(lang)
        return t(self.key, lang, **{name: value.in_language(lang) if isinstance(value, (Said, Num)) else value
                                    for name, value in self.values})

    def __str__(self) -> str:
        return self.in_language(ENGLISH)


def said(key: str, **values: Any) -> Said:
    """Said(key, values): `said("why.stayed", name=..., p=Num("0.98"))`."""
    return Said(key, tuple(values.items()))

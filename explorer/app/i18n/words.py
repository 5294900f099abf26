"""The catalogues and their look-up: `t(key, lang, **values)` gives the string of `key` (dotted: "state.nothing")
in `lang`'s catalogue (`<lang>.toml` beside this module and its parts `<lang>.<part>.toml`, read once with
tomllib; a key in two files is an error), its `{placeholders}` filled;
`number(x, lang)` formats a number the language's way (babel: 0,62 in French, 1.234 in German). The language is an
argument, never state here: it travels with each request (the page's `lang` setting, a Run's `RunRequest.lang`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import tomllib
from babel import Locale
from babel.numbers import format_decimal, get_decimal_symbol, get_group_symbol, parse_pattern

LANGS = ("en", "fr", "de", "es")  # English first: the page's source language and every look-up's fallback
NAMES = {"en": "English", "fr": "Français", "de": "Deutsch", "es": "Español"}  # the menu: each in its own language
ENGLISH = "en"
HERE = Path(__file__).parent


def flat(table: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    """A TOML table's strings by dotted key ({"state": {"off": "x"}} -> ("state.off", "x"))."""
    for key, value in table.items():
        if isinstance(value, Mapping):
            yield from flat(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", str(value)


@functools.cache
def catalogue(lang: str) -> dict[str, str]:
    """Every string of `lang` (one of LANGS) by dotted key, from `<lang>.toml` and its parts (`<lang>.lessons.toml`:
    one file per area, so that each area's words are kept together)."""
    strings: dict[str, str] = {}
    for path in [HERE / f"{lang}.toml", *sorted(HERE.glob(f"{lang}.*.toml"))]:
        with open(path, "rb") as f:
            for key, text in flat(tomllib.load(f)):
                if key in strings:
                    raise ValueError(f"{path.name}: the key {key} is already in another {lang} catalogue file")
                strings[key] = text
    return strings


def language(value: Any) -> str:
    """A page or API value -> one of LANGS (anything else: English, so an old client's Run still works)."""
    return value if isinstance(value, str) and value in LANGS else ENGLISH


def t(key: str, lang: Any = ENGLISH, /, **values: Any) -> str:
    """The string of `key` in `lang` (English where the language lacks it), `{name}`s filled from `values`
    (KeyError naming the key when the English catalogue has no such key: a typo fails where it is used)."""
    english = catalogue(ENGLISH)[key]
    text = catalogue(language(lang)).get(key, english)
    return text.format(**values) if values else text


def number(value: float, lang: Any = ENGLISH, digits: int | None = None, max_digits: int = 3) -> str:
    """`value` formatted the language's way (decimal comma in French, German and Spanish, their own grouping;
    `digits`: exactly that many decimals, None: as many as it has, up to `max_digits`)."""
    decimals = "0" * digits if digits is not None else "#" * max_digits
    return format_decimal(value, format=_pattern("#,##0" + ("." + decimals if decimals else "")),
                          locale=_locale(language(lang)))


@functools.cache
def _pattern(text: str) -> Any:
    """A babel number pattern, parsed once (a hover text of 1,024 tokens writes thousands of numbers)."""
    return parse_pattern(text)


@functools.cache
def _locale(lang: str) -> Locale:
    return Locale.parse(lang)


def counted(n: int, noun: str, lang: Any = ENGLISH) -> str:
    """`n` things in `lang` ("1 point", "3 points"; "0 point" in French): the catalogue's `count.<noun>.one` or
    `.other`, chosen by the language's plural rule (babel's CLDR rules; their "many" says "other")."""
    form = _locale(language(lang)).plural_form(n)
    return t(f"count.{noun}.{'one' if form == 'one' else 'other'}", lang, n=number(n, lang))


def decimal_point(text: str, lang: Any = ENGLISH) -> str:
    """A number already written in English (`f"{x:.3g}"`: "0.125", "1.2e-05") with the language's decimal sign
    ("0,125"): for numbers whose digits a format chose (significant digits), which `number` cannot keep."""
    lang = language(lang)
    return text if lang == ENGLISH else text.replace(".", get_decimal_symbol(lang))


def separators(lang: Any = ENGLISH) -> str:
    """Plotly's layout.separators for `lang`: its decimal sign then its thousands sign (",\u202f" in French), so that
    the numbers Plotly writes (a hover's %{z:.3f}) agree with those `number` writes."""
    lang = language(lang)
    return get_decimal_symbol(lang) + get_group_symbol(lang)


def best_language(accept: str | None) -> str:
    """The first of LANGS an Accept-Language header (or navigator.language) asks for, by its q weights ("fr-CH,
    fr;q=0.9, en;q=0.8" -> "fr"); English when it names none of them."""
    asked = []
    for n, part in enumerate((accept or "").split(",")):
        tag, _, q = part.strip().partition(";q=")
        try:
            weight = float(q) if q else 1.0
        except ValueError:
            weight = 0.0
        asked.append((-weight, n, tag.split("-")[0].lower()))
    return next((tag for weight, _, tag in sorted(asked) if tag in LANGS and weight < 0), ENGLISH)  # q=0: refused

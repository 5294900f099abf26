"""Date-translation task: a human-readable date in one of several languages -> ISO ``YYYY-MM-DD``.

Source texts are rendered by Babel from CLDR date patterns (LDML syntax), e.g.
``samedi 21 novembre 2026``, ``21. November 2026``, ``Nov 21, 2026``, ``21/11/2026``; the target is
always ``2026-11-21``. This is a small seq2seq task whose attention is easy to read: the decoder's
year digits should attend to the source's year digits, its month digits to the month name.

Choices (also summarised by :func:`describe`):

- Years 1900-2099, dates drawn uniformly over that range. Every text shows the full 4-digit year:
  a CLDR pattern with a two-digit year (``yy``, e.g. en_US short ``M/d/yy``) gets ``y`` instead.
- All-numeric dates are day-first only (``21/11/2026``, ``21.11.2026``, ``21-11-2026``). A locale
  pattern that is numeric and month-first (en_US short ``M/d/y``) is skipped for that locale,
  because ``03/04/2020`` alone cannot tell which order was meant. Year-first numeric patterns would
  be unambiguous, but the only one in these locales is the target form itself, which is skipped
  too (copying is not translating).
- Text is Unicode NFC, and every space-like character (no-break space U+00A0, narrow no-break
  space U+202F that CLDR uses in some locales, thin space...) becomes an ASCII space, so that text
  typed by a person matches the training data. Apply :func:`normalize_text` to user input.
- Splits are disjoint by text; the same calendar date may appear in two splits in different forms.
"""

from __future__ import annotations

import datetime as dt
import random
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from babel import Locale
from babel.dates import format_date

# Eight locales, seven languages (English twice: US month-first names, GB day-first).
LOCALES: tuple[str, ...] = ("en_US", "en_GB", "fr_FR", "de_DE", "es_ES", "it_IT", "pt_BR", "nl_NL")

CLDR_STYLES: tuple[str, ...] = ("full", "long", "medium", "short")
# A pattern entry is either a CLDR style (resolved per locale) or an LDML pattern used as is in
# every locale (month and weekday names still come from the locale).
PATTERNS: tuple[str, ...] = CLDR_STYLES + (
    "d MMMM y",
    "EEEE d MMMM y",
    "MMM d, y",
    "EEE, d MMM y",
    "d. MMMM y",
    "MMMM d, y",
    "dd/MM/y",
    "dd.MM.y",
)

# Dates as people type them, not as CLDR renders them (no leading zeros, lower-case months, ordinals, no commas,
# abbreviations), in the seven languages: for checks of the shipped date models on input they were not drilled on
# (token attribution's completeness on date-gpt: tests/interpret/test_attribution.py, benchmarks/attribution_ig.py).
TYPED_DATES: tuple[str, ...] = (
    "3 mars 2025", "21/11/2026", "Nov 3rd, 1999", "march 14 2015", "8 mai 1945", "7. juli 1985", "25 dic 2023",
    "1 gennaio 2000", "2 de abril 2019", "12 oktober 1987", "4th July 1976", "1.5.2020",
)

MIN_DATE = dt.date(1900, 1, 1)
MAX_DATE = dt.date(2099, 12, 31)
TARGET_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

# LDML: quoted literals ('de', '' for a quote) or runs of one pattern letter.
_LDML_TOKEN = re.compile(r"'(?:[^']|'')*'|([A-Za-z])\1*")
_SPACES = re.compile(r"[\s\u00a0\u202f\u2007\u2009\u200a]+")


@dataclass(frozen=True)
class DateExample:
    text: str  # normalised human-readable date (model source)
    target: str  # ISO YYYY-MM-DD (model target)
    locale: str  # e.g. "fr_FR"
    pattern: str  # the LDML pattern actually rendered, e.g. "EEEE d MMMM y"
    date: dt.date
    style: str = ""  # the PATTERNS entry it came from, e.g. "full" or "dd/MM/y"


def normalize_text(text: str) -> str:
    """NFC, every run of space-like characters -> one ASCII space, stripped."""
    return _SPACES.sub(" ", unicodedata.normalize("NFC", text)).strip()


def _fields(pattern: str) -> list[str]:
    """Pattern-letter runs outside quotes, in order: "EEEE, d 'de' MMMM" -> ["EEEE", "d", "MMMM"]."""
    return [m.group(0) for m in _LDML_TOKEN.finditer(pattern) if not m.group(0).startswith("'")]


def _four_digit_year(pattern: str) -> str:
    """Replace two-digit year fields (``yy``) by ``y`` (full year); quoted literals untouched."""
    return _LDML_TOKEN.sub(lambda m: "y" if m.group(0) == "yy" else m.group(0), pattern)


def _is_numeric(fields: list[str]) -> bool:
    return not any(f[0] in "EcG" or (f[0] in "ML" and len(f) >= 3) for f in fields)


@lru_cache(maxsize=None)
def _locale(name: str) -> Locale:
    return Locale.parse(name)


@lru_cache(maxsize=None)
def resolve_pattern(locale: str, style: str) -> str | None:
    """The LDML pattern rendered for (locale, PATTERNS entry), or None if that pair is excluded.

    Excluded: numeric month-first patterns, the target form itself, patterns without a year.
    """
    loc = _locale(locale)
    pattern = loc.date_formats[style].pattern if style in CLDR_STYLES else style
    pattern = _four_digit_year(pattern)
    fields = _fields(pattern)
    letters = [f[0] for f in fields]
    if "y" not in letters or "d" not in letters or not ({"M", "L"} & set(letters)):
        return None
    if _is_numeric(fields):
        month_at = next(i for i, c in enumerate(letters) if c in "ML")
        if letters[0] != "d" or month_at < letters.index("d"):
            return None  # month-first or year-first (only the target form in these locales)
    if _render(dt.date(2026, 11, 21), locale, pattern) == "2026-11-21":
        return None
    return pattern


def _render(date: dt.date, locale: str, pattern: str) -> str:
    return normalize_text(format_date(date, format=pattern, locale=_locale(locale)))


def make_example(date: dt.date, locale: str, style: str) -> DateExample:
    """Render one example; raises ValueError for an excluded (locale, style) pair."""
    pattern = resolve_pattern(locale, style)
    if pattern is None:
        raise ValueError(f"pattern {style!r} is excluded for locale {locale!r}")
    text = _render(date, locale, pattern)
    return DateExample(text, date.isoformat(), locale, pattern, date, style)


# LDML pattern letters -> the date field they render (anything else is a literal part of the text)
_FIELDS = {"d": "day", "M": "month", "L": "month", "y": "year", "E": "weekday", "c": "weekday"}


def date_parts(example: DateExample) -> list[tuple[str, str]]:
    """The example's text cut into (text, field) parts, field one of "day", "month name", "month number", "year",
    "weekday", "literal": each field of its pattern rendered alone by Babel, the literals as written; the parts join
    to example.text (ValueError if they do not)."""
    parts: list[tuple[str, str]] = []
    pattern, pos = example.pattern, 0
    for found in _LDML_TOKEN.finditer(pattern):
        if found.start() > pos:
            parts.append((pattern[pos:found.start()], "literal"))
        token = found.group(0)
        if token.startswith("'"):
            parts.append((token[1:-1].replace("''", "'") or "'", "literal"))
        else:
            field = _FIELDS.get(token[0], "literal")
            if field == "month":
                field += " name" if len(token) >= 3 else " number"
            parts.append((format_date(example.date, format=token, locale=_locale(example.locale)), field))
        pos = found.end()
    if pos < len(pattern):
        parts.append((pattern[pos:], "literal"))
    parts = [(_SPACES.sub(" ", text), field) for text, field in parts]
    if "".join(text for text, _ in parts) != example.text:
        raise ValueError(f"the fields of {example.pattern!r} do not join to {example.text!r}")
    return parts


def combinations(
    locales: tuple[str, ...] | list[str] = LOCALES, patterns: tuple[str, ...] | list[str] = PATTERNS
) -> list[tuple[str, str]]:
    """The (locale, style) pairs that generation draws from (excluded pairs left out)."""
    return [(loc, sty) for loc in locales for sty in patterns if resolve_pattern(loc, sty) is not None]


def generate_examples(
    n: int,
    seed: int = 0,
    locales: tuple[str, ...] | list[str] = LOCALES,
    patterns: tuple[str, ...] | list[str] = PATTERNS,
) -> list[DateExample]:
    """``n`` examples with distinct texts, reproducible from ``seed``.

    Each draws a date uniformly from 1900-01-01..2099-12-31 and a (locale, style) pair uniformly.
    """
    combos = combinations(locales, patterns)
    if not combos:
        raise ValueError("no usable (locale, pattern) combination")
    rng = random.Random(seed)
    lo, hi = MIN_DATE.toordinal(), MAX_DATE.toordinal()
    seen: set[str] = set()
    out: list[DateExample] = []
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > 20 * n + 1000:  # only reachable with a tiny locale/pattern selection
            raise ValueError(f"could not draw {n} distinct texts from {len(combos)} combinations")
        date = dt.date.fromordinal(rng.randint(lo, hi))
        locale, style = combos[rng.randrange(len(combos))]
        ex = make_example(date, locale, style)
        if ex.text in seen:
            continue
        seen.add(ex.text)
        out.append(ex)
    return out


def splits(
    seed: int = 0, n_train: int = 50_000, n_val: int = 2_000, n_test: int = 2_000
) -> dict[str, list[DateExample]]:
    """Train/val/test lists, reproducible from ``seed``, with no text in two splits."""
    examples = generate_examples(n_train + n_val + n_test, seed)
    return {
        "train": examples[:n_train],
        "val": examples[n_train : n_train + n_val],
        "test": examples[n_train + n_val :],
    }


def charset(locales: tuple[str, ...] | list[str] = LOCALES, patterns: tuple[str, ...] | list[str] = PATTERNS) -> set[str]:
    """Every character any source text can contain (all months and weekdays, all digits)."""
    chars: set[str] = set("0123456789")
    # 2026-01-05 is a Monday: 7 consecutive days x 12 months cover every weekday and month name.
    days = [dt.date(2026, m, d) for m in range(1, 13) for d in range(5, 12)]
    for locale, style in combinations(locales, patterns):
        for day in days:
            chars.update(make_example(day, locale, style).text)
    return chars


def describe() -> str:
    """Short human description of the data, for model cards and the UI."""
    languages = sorted({loc.split("_")[0] for loc in LOCALES})
    return (
        f"Date translation: a date written in one of {len(languages)} languages "
        f"({', '.join(languages)}; locales {', '.join(LOCALES)}) in one of {len(PATTERNS)} styles "
        "(CLDR full/long/medium/short via Babel plus custom patterns such as 'd MMMM y', "
        "'MMM d, y', 'dd/MM/y') -> ISO YYYY-MM-DD. Years 1900-2099, always written with 4 digits; "
        "all-numeric dates are day-first only; text NFC with plain ASCII spaces. "
        "Example: 'samedi 21 novembre 2026' -> '2026-11-21'."
    )


# (locale, style) for a varied showcase; the date cycles through a few memorable ones.
_UI_CHOICES: tuple[tuple[str, str, dt.date], ...] = (
    ("fr_FR", "full", dt.date(2026, 11, 21)),
    ("de_DE", "long", dt.date(2026, 11, 21)),
    ("en_US", "medium", dt.date(2026, 11, 21)),
    ("en_GB", "short", dt.date(2026, 11, 21)),
    ("es_ES", "full", dt.date(1969, 7, 20)),
    ("it_IT", "long", dt.date(1999, 12, 31)),
    ("pt_BR", "medium", dt.date(2000, 2, 29)),
    ("nl_NL", "EEE, d MMM y", dt.date(1989, 11, 9)),
    ("de_DE", "dd.MM.y", dt.date(1990, 10, 3)),
    ("en_US", "full", dt.date(1903, 12, 17)),
)


def examples_for_ui(k: int = 6) -> list[DateExample]:
    """A handful of varied, fixed examples (first four: the canonical styles of the task)."""
    return [make_example(date, loc, style) for loc, style, date in _UI_CHOICES[:k]]

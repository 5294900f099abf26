"""A table's headers in the page's language when the language changes: the layout's tables show their headers before
a first result (the why-this-token list's "head switched off", the circuit's "from", "into"), and a result's table
keeps the headers of the language it was made in. `headers_in` finds each header in any language's `[column]` and says
it in the new one (every header the page's tables write is a `[column]` word: tests/app/test_i18n.py reads them from
the code); `tables_in` gives the tables' updates (LanguageEvents chains it after the relabelling), the words of a
table's word columns (`run`, `input`, `sequence`: "baseline", "MLP input") said again too. A header or cell found in
no catalogue (a token, "#", "|v W_O|") stays as it is. Shapes: a table of R rows by C columns; only its headers and
its word columns' cells change.
"""

from __future__ import annotations

import functools
from typing import Any

from .words import LANGS, catalogue, t

WORD_KEYS = ("column.run", "column.input", "column.sequence")  # the columns whose cells are words (result_words)


@functools.cache
def _keys() -> dict[str, str]:
    """A table's header in any of LANGS -> its [column] key (the English first, where two languages share a word)."""
    found: dict[str, str] = {}
    for lang in LANGS:
        for key, text in catalogue(lang).items():
            if key.startswith("column."):
                found.setdefault(text, key)
    return found


def headers_in(headers: list[Any], lang: Any) -> list[Any]:
    """Each header (or word cell) said in `lang` (from whichever language it is in)."""
    return [t(_keys()[h], lang) if isinstance(h, str) and h in _keys() else h for h in headers]


def tables_in(lang: Any, tables: list[Any]) -> list[Any]:
    """The tables (pandas DataFrames as the page sends them; None: none shown) with their headers, and their word
    columns' cells, in `lang`."""
    said = []
    for table in tables:
        if not (hasattr(table, "rename") and hasattr(table, "columns")):
            said.append(table)
            continue
        words = [c for c in table.columns if isinstance(c, str) and _keys().get(c) in WORD_KEYS]
        table = table.assign(**{c: headers_in(list(table[c]), lang) for c in words}) if words else table
        said.append(table.rename(columns=dict(zip(table.columns, headers_in(list(table.columns), lang)))))
    return said

"""A table's headers in the page's language when the language changes: the layout's tables show their headers before
a first result (the why-this-token list's "head switched off", the circuit's "from", "into"), and a result's table
keeps the headers of the language it was made in. `headers_in` finds each header in any language's `[column]` and says
it in the new one; `tables_in` gives the tables' updates (LanguageEvents chains it after the relabelling). A header
found in no catalogue (a token, "#") stays as it is. Shapes: a table of R rows by C columns, only its headers change.
"""

from __future__ import annotations

import functools
from typing import Any

from .words import LANGS, catalogue, t


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
    """Each header said in `lang` (from whichever language it is in)."""
    return [t(_keys()[h], lang) if isinstance(h, str) and h in _keys() else h for h in headers]


def tables_in(lang: Any, tables: list[Any]) -> list[Any]:
    """The tables (pandas DataFrames as the page sends them; None: none shown) with their headers in `lang`."""
    return [table.rename(columns=dict(zip(table.columns, headers_in(list(table.columns), lang))))
            if hasattr(table, "rename") and hasattr(table, "columns") else table for table in tables]

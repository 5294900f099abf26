"""docs/link.md's table of the keys a link may carry, made from the page's settings (each entry's link key: its
value and where it is on the page) and each tab's own keys (`Tab.link_keys`), so the documentation reads the same
table and `TABS` as the parser (scripts/docs_tables.py writes it there; tests/app/test_link.py checks it)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..page.settings import SETTINGS, Setting
from .setting_keys import carried
from .state import link_keys, tab_keys

MODEL_DOC = ("a shipped checkpoint name, a Hugging Face Hub id (`owner/name`, `owner/name@revision`), or a folder "
             "inside the folders the app was started with (`--allow-dir`)", "the model panel")


def documented_keys(tabs: Iterable[Any], table: Sequence[Setting] = SETTINGS) -> list[str]:
    """Every key a link may carry, in canonical order (`tabs`: the page's)."""
    return [*link_keys(table), *tab_keys(tabs, table)]


def keys_table(tabs: Sequence[Any], table: Sequence[Setting] = SETTINGS) -> str:
    """docs/link.md's table of keys, from the page's keys and each tab's own (a tab's keys are carried while it is the
    tab shown). Keys side by side with the same words share a row."""
    rows: list[tuple[list[str], str, str]] = [(["model"], *MODEL_DOC)]
    for c in carried(table):
        doc = ", ".join(f"`{t.id}`" for t in tabs) if c.key.doc == "TABS" else c.key.doc
        if rows[-1][1:] == (doc, c.key.where):
            rows[-1][0].append(c.key.key)
        else:
            rows.append(([c.key.key], doc, c.key.where))
    lines = ["| key | value | on the page |", "|---|---|---|"]
    lines += [f"| {', '.join(f'`{k}`' for k in keys)} | {value} | {where} |" for keys, value, where in rows]
    for t in tabs:
        for k in t.link_keys:
            lines.append(f"| `{k.key}` | {k.doc} | the {t.title} tab (carried while it is shown) |")
    return "\n".join(lines) + "\n"

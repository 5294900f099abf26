"""docs/link.md's table of the keys a link may carry, made from the page's keys and each tab's own (`Tab.link_keys`),
so the documentation reads the same `TABS` as the parser (scripts/docs_tables.py writes it there;
tests/app/test_link.py checks it)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .state import KEYS, tab_keys

# The page's keys in docs/link.md: (keys, value, where on the page).
KEY_DOCS = (
    (("model",), "a shipped checkpoint name, a Hugging Face Hub id (`owner/name`, `owner/name@revision`), or a folder "
                 "inside the folders the app was started with (`--allow-dir`)", "the model panel"),
    (("s1", "s2"), "any text, at most 20,000 characters (`s2=` empty: no second sentence)",
     "Sentence, Second sentence"),
    (("tab",), "TABS", "the tab shown, computed as if its own button had been pressed"),
    (("kind",), "`encoder`, `decoder`, `cross` (one the model has)", "Attention shown"),
    (("layer", "head"), "a whole number the model has (from 0)", "Layer, Head"),
    (("sentence",), "`1` or `2`", "Sentence"),
    (("measure",), "`weights` or `values`", "Heatmaps show"),
    (("off",), "heads switched off, `kind:L1H2,L1H3;kind:L0H0` (every other head on)", "the head switches"),
    (("padding", "causal"), "`1` or `0`", "Padding mask, Causal mask"),
    (("mask",), "`none`, `block token`, `local window`, `no self` (a space is `%20`)", "Custom mask"),
    (("blocked",), "a whole number from 0", "Blocked position"),
    (("window",), "0 to 16", "Window k"),
    (("position",), "a whole number, negative from the end (`-1`: the last token)", "Predict after position"),
    (("continue",), "0 to 40", "Continue / Generate at most (tokens)"),
    (("sample",), "`1` or `0` (`0`, or no key: greedy)", "Sample"),
    (("temperature",), "a number above 0", "Temperature"),
    (("top_k",), "a whole number from 0 (`0`: off)", "Top-k"),
    (("top_p",), "above 0 and at most 1 (`1`: off)", "Top-p"),
    (("seed",), "a whole number from 0 to 2147483647", "Seed"),
)
assert [k for keys, _, _ in KEY_DOCS for k in keys] == list(KEYS.values())


def documented_keys(tabs: Iterable[Any]) -> list[str]:
    """Every key a link may carry, in canonical order (`tabs`: the page's)."""
    return [*KEYS.values(), *tab_keys(tabs)]


def keys_table(tabs: Sequence[Any]) -> str:
    """docs/link.md's table of keys, from the page's keys and each tab's own (a tab's keys are carried while it is the
    tab shown)."""
    rows = ["| key | value | on the page |", "|---|---|---|"]
    for keys, value, where in KEY_DOCS:
        value = ", ".join(f"`{t.id}`" for t in tabs) if value == "TABS" else value
        rows.append(f"| {', '.join(f'`{k}`' for k in keys)} | {value} | {where} |")
    for t in tabs:
        for k in t.link_keys:
            rows.append(f"| `{k.key}` | {k.doc} | the {t.title} tab (carried while it is shown) |")
    return "\n".join(rows) + "\n"

"""A copied link cut to a length the app can open: its sentences are cut (at a character) until its query fits, and
a notice names each cut. Pure: no Gradio."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..page.settings import SETTINGS, Setting
from .state import LinkState

# Gradio answers a bare "Internal Server Error" for a URL over 65,536 characters (measured: its root route); a copied
# link's query stays this far below, with room for the longest address the page may be at.
SAFE_QUERY = 60_000
SENTENCES = ("s1", "s2")  # the keys that may be cut


def with_value(state: LinkState, key: str, value: str) -> LinkState:
    return replace(state, values={**state.values, key: value})


def fit_length(state: LinkState, limit: int = SAFE_QUERY, table: Sequence[Setting] = SETTINGS
               ) -> tuple[LinkState, list[str]]:
    """The state with its sentences cut (at a character) until its query (`to_query(table)`) is at most `limit`
    characters, and a notice per sentence cut. The longer sentence is cut first."""
    notices: list[str] = []

    def length(s: LinkState) -> int:
        return len(s.to_query(table))

    if length(state) <= limit:
        return state, notices
    for key in sorted(SENTENCES, key=lambda k: -len(state.values.get(k) or "")):
        text = state.values.get(key) or ""
        empty = length(with_value(state, key, ""))
        if empty > limit:  # even without it the link is too long: cut it whole, then the other one
            state = with_value(state, key, "")
        else:
            low, high = 0, len(text)  # the most characters that fit
            while low < high:
                mid = (low + high + 1) // 2
                if length(with_value(state, key, text[:mid])) <= limit:
                    low = mid
                else:
                    high = mid - 1
            state = with_value(state, key, text[:low])
        kept = len(state.values.get(key) or "")
        notices.append(f"{key} was cut to its first {kept:,} of {len(text):,} characters so that the link opens")
        if length(state) <= limit:
            break
    return state, notices

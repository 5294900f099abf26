"""The Runs' results kept for their tabs: one store for every session of the app, counted in bytes.

A Run ends with an `Analysis`: what each tab draws, reduced (one head's matrices, the overview's pooled tiles, the
head-averaged attention for rollout, the generation rows, the tables), float16 where the run itself returned
float16 weights. Opening another tab draws it from there, without running the model again. Many sessions share one
Space, so those results live in one `KeptResults` store bounded by `--kept-memory` (least recently used let go
first), never in the sessions: a session's `Shown` (its gr.State) holds only a key into the store, the request of
its last Run and the tab it shows. When a session's result was let go, opening a tab runs the model again on that
session's own last request (`Shown.open`), with a one-line notice; a tab never shows an older Run's figures, nor
another session's.
"""

from __future__ import annotations

import dataclasses
import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..run.request import RunRequest
from .limits import DEFAULT_KEPT_MEMORY, format_bytes
from .lru import ByteLRU

RECOMPUTED = ("Your last Run's results had been let go to make room for other visitors, so this tab was computed "
              "again from your sentences and settings.")


def kept_bytes(value: Any) -> int:
    """Bytes a kept result takes: its arrays' buffers (each once, a view counts its base), its strings and numbers,
    and the containers holding them (dataclasses, objects, lists, tuples, dicts)."""
    seen: set[int] = set()
    total, stack = 0, [value]
    while stack:
        obj = stack.pop()
        if obj is None or isinstance(obj, (bool, type)) or id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            base = obj
            while isinstance(base.base, np.ndarray):
                base = base.base
            if base is not obj and id(base) in seen:
                continue
            seen.add(id(base))
            total += sys.getsizeof(base) if base.flags.owndata else base.nbytes
            continue
        if hasattr(obj, "untyped_storage"):  # a torch tensor (none should be kept; count it in full if one is)
            total += obj.untyped_storage().nbytes()
            continue
        total += sys.getsizeof(obj)
        if isinstance(obj, (str, bytes, int, float, complex)):
            continue
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
        elif dataclasses.is_dataclass(obj) or hasattr(obj, "__dict__"):
            stack.extend(vars(obj).values() if hasattr(obj, "__dict__") else
                         (getattr(obj, f.name) for f in dataclasses.fields(obj)))
        elif hasattr(obj, "__slots__"):
            stack.extend(getattr(obj, name) for name in obj.__slots__ if hasattr(obj, name))
    return total


@dataclass(frozen=True)
class Kept:
    seq: int  # which of its session's Runs this is (Shown.seq when it ended)
    analysis: Any  # run.result.Analysis, without drawn figures


class KeptResults:
    """`session id -> its last Run's Analysis`, within `budget_bytes` (`--kept-memory`) for all sessions together."""

    def __init__(self, budget_bytes: int = DEFAULT_KEPT_MEMORY):
        self._lru = ByteLRU(budget_bytes)

    @property
    def budget_bytes(self) -> int:
        return self._lru.budget_bytes

    @property
    def used_bytes(self) -> int:
        return self._lru.used_bytes

    @property
    def evictions(self) -> int:
        return self._lru.evictions

    def __len__(self) -> int:
        return len(self._lru)

    def budget_text(self) -> str:
        return f"{format_bytes(self.budget_bytes)} (--kept-memory)"

    def keep(self, session_id: str, seq: int, analysis: Any) -> int:
        """Keep the Run `seq` of a session (replacing its older one); -> its bytes. A result larger than the whole
        budget is not kept (its tabs are then computed again when opened)."""
        n = kept_bytes(analysis)
        self._lru.put(session_id, Kept(seq, analysis), n)
        return n

    def find(self, session_id: str | None, seq: int) -> Any | None:
        """That session's Run `seq`, or None when it was let go (or a newer one replaced it)."""
        kept = None if session_id is None else self._lru.get(session_id)
        return kept.analysis if kept is not None and kept.seq == seq else None

    def drop(self, session_id: str | None) -> None:
        if session_id is not None:
            self._lru.pop(session_id)


class Shown:
    """What one page shows, kept per session in a gr.State and changed in place by its events: a key to its last
    Run's result in the shared store, the request that made it, and the tab opened last. Small whatever the Run.

    A Run's `tab` input is the tab visible when it was clicked; the person may open another while it runs. So a
    Run ends by drawing the tab opened last (`tab`, once any was opened), and a tab opened while a Run is under way
    draws the newest result, drawing again if a Run ended meanwhile: whichever event answers last, the visible tab
    shows the newest Run."""

    def __init__(self) -> None:
        self.id: str | None = None  # the session's key in KeptResults, drawn at its first Run (gr.State copies the
        # page's default value into every session, so it cannot be drawn here)
        self.seq = 0  # Runs ended so far
        self.request: RunRequest | None = None  # the last Run's request: its tabs are computed again from it
        self.tab: str | None = None  # None until a tab is opened (the API's /analyze never opens one)
        self.opened = 0  # tabs opened so far: a Run's first look stands only if none was opened since
        self.model_notice = ""  # what the last model change said, until the Run that follows it says it again

    def visible_tab(self, clicked: str | None) -> str:
        """The tab a Run draws: the one opened last, else the one it was clicked on (API: "all" for every tab)."""
        return self.tab or clicked or "attention"

    def take_model_notice(self) -> str:
        """What the last model change said (loaded, toggles reset), once: the Run after it keeps it on the status
        line, where the Run's own notices would otherwise replace it."""
        notice, self.model_notice = self.model_notice, ""
        return notice

    def ended(self, request: RunRequest, analysis: Any, store: KeptResults) -> None:
        """A Run of this session ended with `analysis`: keep it (without drawn figures) as the newest."""
        if self.id is None:
            self.id = secrets.token_hex(16)
        self.seq += 1
        self.request = request
        store.keep(self.id, self.seq, analysis.kept())

    def result(self, store: KeptResults) -> Any | None:
        """The last Run's Analysis if the store still has it."""
        return store.find(self.id, self.seq)

    def opening(self, tab: str) -> dict[str, Any]:
        """`tab`, which a Run does not draw, was opened: the next Runs draw none of theirs meanwhile; no figures."""
        self.tab = tab
        self.opened += 1
        return {}

    def open(self, tab: str, store: KeptResults, recompute: Callable[[RunRequest], Any]
             ) -> tuple[dict[str, Any], str | None]:
        """`tab` was opened: its figures from the newest Run ({} before the first Run has ended), and a notice when
        that Run's result had been let go and was computed again (`recompute(request)` -> Analysis)."""
        self.tab = tab
        self.opened += 1
        notice = None
        while self.seq:
            seq, request = self.seq, self.request
            analysis = store.find(self.id, seq)
            if analysis is None:
                analysis = recompute(request)
                notice = RECOMPUTED
                if self.seq == seq:
                    store.keep(self.id, seq, analysis.kept())  # type: ignore[arg-type]
            figures = analysis.figures(tab)
            if self.seq == seq:  # no Run ended while drawing, else draw from the newer one
                return figures, notice
        return {}, None

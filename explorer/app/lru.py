"""A thread-safe cache bounded by bytes, least recently used evicted first: the shared models
(`registry.ModelRegistry`) and the Runs' kept results (`kept.KeptResults`) both live in one.

Every value comes with its size in bytes, given by the caller. Putting a value evicts the least recently used
entries until the total fits the budget; a value larger than the whole budget is refused (`put` returns False),
and the caller decides what that means (the registry refuses the model, the kept results simply keep nothing).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any


class ByteLRU:
    """`key -> value` within `budget_bytes`; `get` counts as a use."""

    def __init__(self, budget_bytes: int):
        if budget_bytes < 1:
            raise ValueError("a memory budget must be positive")
        self.budget_bytes = int(budget_bytes)
        self._lock = threading.Lock()
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()  # key -> (value, bytes), oldest first
        self._used = 0
        self.evictions = 0  # entries let go to make room, since the start

    def get(self, key: Hashable) -> Any | None:
        """The value (now the most recently used), or None."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: Hashable, value: Any, n_bytes: int) -> bool:
        """Keep `value` under `key` (replacing what was there), evicting the least recently used entries until it
        fits; False, and nothing kept under `key`, when it alone is larger than the budget."""
        n_bytes = max(int(n_bytes), 0)
        with self._lock:
            self._pop_locked(key)
            if n_bytes > self.budget_bytes:
                return False
            while self._used + n_bytes > self.budget_bytes:
                self._pop_locked(next(iter(self._items)))
                self.evictions += 1
            self._items[key] = (value, n_bytes)
            self._used += n_bytes
            return True

    def pop(self, key: Hashable) -> Any | None:
        with self._lock:
            return self._pop_locked(key)

    def _pop_locked(self, key: Hashable) -> Any | None:
        item = self._items.pop(key, None)
        if item is None:
            return None
        self._used -= item[1]
        return item[0]

    @property
    def used_bytes(self) -> int:
        with self._lock:
            return self._used

    def keys(self) -> list[Hashable]:
        """Oldest first."""
        with self._lock:
            return list(self._items)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

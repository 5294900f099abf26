"""A thread-safe cache bounded by bytes, least recently used evicted first: the shared models
(`registry.ModelRegistry`) and the Runs' kept results (`kept.KeptResults`) both live in one.

Every value comes with its size in bytes, given by the caller. Putting a value evicts the least recently used
entries until the total fits the budget; a value larger than the whole budget is refused (`put` returns False),
and the caller decides what that means (the registry refuses the model, the kept results simply keep nothing).
An entry may be pinned (`get(key, pin=True)`, `put(..., pin=True)`, then `unpin`): it is never evicted while pinned,
so a value that does not fit beside the pinned ones is refused too (a comparison's two models, registry.held).
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
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
        self._pins: Counter[Hashable] = Counter()  # key -> how many holders pinned it (never evicted while > 0)
        self.evictions = 0  # entries let go to make room, since the start

    def get(self, key: Hashable, pin: bool = False) -> Any | None:
        """The value (now the most recently used), or None; `pin`: pinned too (one `unpin` each), in one step."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            if pin:
                self._pins[key] += 1
            return item[0]

    def put(self, key: Hashable, value: Any, n_bytes: int, pin: bool = False) -> bool:
        """Keep `value` under `key` (replacing what was there), evicting the least recently used unpinned entries
        until it fits; False, and nothing kept under `key`, when it does not fit beside the pinned entries (or alone
        is larger than the budget). `pin`: pinned once kept."""
        n_bytes = max(int(n_bytes), 0)
        with self._lock:
            if key not in self._pins:
                self._pop_locked(key)
            pinned = sum(self._items[k][1] for k in self._pins if k in self._items and k != key)
            if key in self._pins or pinned + n_bytes > self.budget_bytes:
                return False  # (a pinned key is in use: not replaced)
            while self._used + n_bytes > self.budget_bytes:
                self._pop_locked(next(k for k in self._items if k not in self._pins))
                self.evictions += 1
            self._items[key] = (value, n_bytes)
            self._used += n_bytes
            if pin:
                self._pins[key] += 1
            return True

    def unpin(self, key: Hashable) -> None:
        """One pin of `key` let go (evictable again once none is left)."""
        with self._lock:
            self._pins[key] -= 1
            if self._pins[key] <= 0:
                del self._pins[key]

    @property
    def pinned_bytes(self) -> int:
        """Bytes of the pinned entries."""
        with self._lock:
            return sum(self._items[k][1] for k in self._pins if k in self._items)

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

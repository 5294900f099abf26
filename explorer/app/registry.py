"""Models shared by every session of the app: loaded once per source, kept in a small LRU, only read.

Sessions hold a key (which model, on which device), never the model: two users of the same
checkpoint share one copy, and nothing a request computes is stored here.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any


class ModelRegistry:
    """Thread-safe `key -> model bundle` cache with least-recently-used eviction.

    `get(key, factory)` returns the cached value or calls `factory()` once, even when several
    requests ask for the same key at the same time (a per-key lock); different keys load in parallel.
    """

    def __init__(self, capacity: int = 3):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._lock = threading.Lock()
        self._items: OrderedDict[str, Any] = OrderedDict()
        self._key_locks: dict[str, threading.Lock] = {}

    def get(self, key: str, factory: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:  # another request may have loaded it while we waited
                if key in self._items:
                    self._items.move_to_end(key)
                    return self._items[key]
            value = factory()
            with self._lock:
                self._items[key] = value
                self._items.move_to_end(key)
                while len(self._items) > self.capacity:
                    self._items.popitem(last=False)
                self._key_locks.pop(key, None)
        return value

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._items)

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._items

"""Models shared by every session of the app: loaded once per key, kept within a memory budget, only read.

Sessions hold a key (which model, on which device), never the model: two users of the same checkpoint share
one copy, and nothing a request computes is stored here. The registry keeps models up to `budget_bytes`
(parameters and buffers, each storage counted once), evicting the least recently used; a model larger than
the whole budget is refused with a message naming the budget.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .errors import AppError
from .limits import DEFAULT_MODEL_MEMORY, format_bytes


def model_bytes(value: Any) -> int:
    """Bytes of the tensors of `value.model` (a LoadedModel), each storage once (tied weights share one)."""
    seen: set[int] = set()
    total = 0
    for tensor in [*value.model.parameters(), *value.model.buffers()]:
        storage = tensor.untyped_storage()
        if storage.data_ptr() in seen:
            continue
        seen.add(storage.data_ptr())
        total += storage.nbytes()
    return total


class ModelRegistry:
    """Thread-safe `key -> model` cache bounded by bytes, least recently used evicted first.

    `get(key, factory)` returns the cached value or calls `factory()` once, even when several requests ask
    for the same key at the same time (a per-key lock); different keys load in parallel.
    """

    def __init__(self, budget_bytes: int = DEFAULT_MODEL_MEMORY, size_of: Callable[[Any], int] = model_bytes):
        if budget_bytes < 1:
            raise ValueError("the model memory budget must be positive")
        self.budget_bytes = int(budget_bytes)
        self._size_of = size_of
        self._lock = threading.Lock()
        self._items: OrderedDict[str, tuple[Any, int]] = OrderedDict()  # key -> (value, bytes), oldest first
        self._key_locks: dict[str, threading.Lock] = {}

    def budget_text(self) -> str:
        return f"{format_bytes(self.budget_bytes)} (--model-memory)"

    def _cached(self, key: str) -> Any | None:
        item = self._items.get(key)
        if item is None:
            return None
        self._items.move_to_end(key)
        return item[0]

    def get(self, key: str, factory: Callable[[], Any]) -> Any:
        with self._lock:
            value = self._cached(key)
            if value is not None:
                return value
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:  # another request may have loaded it while we waited
                value = self._cached(key)
                if value is not None:
                    return value
            value = factory()
            size = self._size_of(value)
            if size > self.budget_bytes:
                raise AppError(f"This model takes {format_bytes(size)}, more than the app's whole model memory "
                               f"budget of {self.budget_text()}.")
            with self._lock:
                self._items[key] = (value, size)
                while self.used_bytes_locked() > self.budget_bytes:
                    self._items.popitem(last=False)
                self._key_locks.pop(key, None)
        return value

    def used_bytes_locked(self) -> int:
        return sum(size for _, size in self._items.values())

    @property
    def used_bytes(self) -> int:
        with self._lock:
            return self.used_bytes_locked()

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._items)

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._items

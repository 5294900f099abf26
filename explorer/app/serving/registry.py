"""Models shared by every session of the app: loaded once per key, kept within a memory budget, only read.

Sessions hold a key (which model, on which device), never the model: two users of the same checkpoint share
one copy, and nothing a request computes is stored here. The registry keeps models up to `budget_bytes`
(parameters and buffers, each storage counted once), evicting the least recently used; a model larger than
the whole budget is refused with a message naming the budget. `held` keeps several models at once for one request
(a comparison of two models): none of them is evicted until it ends, so they count together against the budget,
and a model that does not fit beside the models held is refused.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .errors import AppError
from .limits import DEFAULT_MODEL_MEMORY, format_bytes
from .lru import ByteLRU


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
    """Thread-safe `key -> model` cache bounded by bytes, least recently used evicted first (`lru.ByteLRU`).

    `get(key, factory)` returns the cached value or calls `factory()` once, even when several requests ask
    for the same key at the same time (a per-key lock); different keys load in parallel.
    """

    def __init__(self, budget_bytes: int = DEFAULT_MODEL_MEMORY, size_of: Callable[[Any], int] = model_bytes):
        if budget_bytes < 1:
            raise ValueError("the model memory budget must be positive")
        self._models = ByteLRU(budget_bytes)
        self._size_of = size_of
        self._lock = threading.Lock()  # guards _key_locks
        self._key_locks: dict[str, threading.Lock] = {}

    @property
    def budget_bytes(self) -> int:
        return self._models.budget_bytes

    def budget_text(self) -> str:
        return f"{format_bytes(self.budget_bytes)} (--model-memory)"

    def get(self, key: str, factory: Callable[[], Any], pin: bool = False) -> Any:
        """The model under `key`, loaded by `factory()` if not kept; `pin`: pinned in the cache (`_models.unpin`)."""
        value = self._models.get(key, pin)
        if value is not None:
            return value
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            value = self._models.get(key, pin)  # another request may have loaded it while we waited
            if value is not None:
                return value
            value = factory()
            size = self._size_of(value)
            if not self._models.put(key, value, size, pin):
                if size > self.budget_bytes:
                    raise AppError(f"This model takes {format_bytes(size)}, more than the app's whole model memory "
                                   f"budget of {self.budget_text()}.")
                raise AppError(f"This model takes {format_bytes(size)}; beside the {format_bytes(self.held_bytes)} "
                               f"of models in use now (a comparison holds both of its models) it does not fit in "
                               f"the app's model memory budget of {self.budget_text()}.")
            with self._lock:
                self._key_locks.pop(key, None)
        return value

    @contextmanager
    def held(self, entries: Sequence[tuple[str, Callable[[], Any]]]) -> Iterator[list[Any]]:
        """The models of `entries` ((key, factory) pairs, got in order as `get` does), none evicted until the block
        ends: they count together against the budget (the same key twice is one model, counted once)."""
        pinned: list[str] = []
        try:
            values = []
            for key, factory in entries:
                values.append(self.get(key, factory, pin=True))
                pinned.append(key)
            yield values
        finally:
            for key in pinned:
                self._models.unpin(key)

    @property
    def held_bytes(self) -> int:
        """Bytes of the models `held` by requests now."""
        return self._models.pinned_bytes

    @property
    def used_bytes(self) -> int:
        return self._models.used_bytes

    def keys(self) -> list[str]:
        return self._models.keys()  # type: ignore[return-value]

    def __contains__(self, key: str) -> bool:
        return key in self._models

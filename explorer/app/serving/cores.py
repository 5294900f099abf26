"""How many torch threads a request computes with: the cores one request may use, shared among the requests
running at once.

One request alone gets them all (a 1,024-token Run on GPT-2 small is twice as fast with both cores of a
2-core Space as with one); requests that run together get a share each (at least one thread), so they do
not fight over the cores (two threads each for four concurrent requests on two cores made small-model
requests much slower: BENCHMARKS.md). torch's thread count belongs to the calling thread (OpenMP's and
MKL's per-thread settings), so each request sets its own and changes no other's; a request that yields
(a Run in two steps) sets it again at each step, since Gradio may resume it on another worker thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch


class CoreShare:
    """`most` threads for one request; `shared`: divided among the requests running at once (else always
    `most`, as `--threads N` asks)."""

    def __init__(self, most: int | None = None, shared: bool = False) -> None:
        self.most = max(1, int(most or torch.get_num_threads()))
        self.shared = shared
        self._running = 0
        self._lock = threading.Lock()

    def threads(self) -> int:
        """The share of one request now."""
        with self._lock:
            return max(1, self.most // max(1, self._running)) if self.shared else self.most

    @contextmanager
    def share(self) -> Iterator[Callable[[], int]]:
        """While a request runs: counts it and sets its thread's torch threads; yields `use`, which sets them
        again for the thread it is called on (at each step of a request that yields) and returns the number."""
        with self._lock:
            self._running += 1

        def use() -> int:
            n = self.threads()
            if torch.get_num_threads() != n:
                torch.set_num_threads(n)
            return n

        try:
            use()
            yield use
        finally:
            with self._lock:
                self._running -= 1

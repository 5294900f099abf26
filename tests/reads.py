"""Counting what explorer.file_reads reads: a stand-in for `open` in that module that records, per file name, the bytes
each read returned. A test asserts the bound in bytes (never a time): a refused file was read at most its limit + 1."""

from __future__ import annotations

import builtins
from collections import Counter
from typing import Any


class _Counted:
    """A file opened by file_reads: reads are counted, everything else is the file's own."""

    def __init__(self, file: Any, name: str, counts: Counter):
        self._file, self._name, self._counts = file, name, counts

    def read(self, *args: Any) -> bytes:
        data = self._file.read(*args)
        self._counts[self._name] += len(data)
        return data

    def __enter__(self) -> "_Counted":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._file.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


def count_reads(monkeypatch: Any) -> Counter:
    """From now on in this test: file name -> bytes explorer.file_reads has read from it."""
    from explorer import file_reads

    counts: Counter = Counter()

    def counted_open(path: Any, mode: str = "r", *args: Any, **kwargs: Any) -> _Counted:
        return _Counted(builtins.open(path, mode, *args, **kwargs), str(path).rsplit("/", 1)[-1], counts)

    monkeypatch.setattr(file_reads, "open", counted_open, raising=False)
    return counts

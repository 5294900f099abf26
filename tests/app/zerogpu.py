"""A test double of `spaces.GPU` as it behaves on a ZeroGPU Space (spaces/zero/wrappers.py): each call runs in a
process forked from the server, its arguments and results (each item of a generator) cross pickled, and whatever
the call changes in that process is lost. `forked(fn)` wraps a function that way; `ForkedCalls` counts the calls
and the process ids they ran in."""

from __future__ import annotations

import functools
import inspect
import multiprocessing
import os
import pickle
from collections.abc import Callable, Iterator
from typing import Any

from tests.hang import HANG_S


def _serve(fn: Callable, conn: Any, payload: bytes) -> None:
    """In the forked process: run `fn`, send back ("value", x) / ("item", x)... ("end",) / ("error", err)."""
    try:
        args, kwargs = pickle.loads(payload)
        out = fn(*args, **kwargs)
        if inspect.isgenerator(out):
            for item in out:
                conn.send_bytes(pickle.dumps(("item", item)))
            conn.send_bytes(pickle.dumps(("end", None)))
        else:
            conn.send_bytes(pickle.dumps(("value", out)))
    except Exception as err:  # noqa: BLE001 - goes back to the caller, as ZeroGPU's worker sends it
        conn.send_bytes(pickle.dumps(("error", err)))
    finally:
        conn.close()


class ForkedCalls:
    def __init__(self) -> None:
        self.pids: list[int] = []  # the process of each call

    def __call__(self, fn: Callable) -> Callable:
        calls, context = self, multiprocessing.get_context("fork")

        def messages(args: tuple, kwargs: dict) -> Iterator[tuple[str, Any]]:
            payload = pickle.dumps((args, kwargs))  # what cannot be pickled fails here, as on ZeroGPU
            ours, theirs = context.Pipe()
            process = context.Process(target=_serve, args=(fn, theirs, payload), daemon=True)
            process.start()
            calls.pids.append(process.pid)
            theirs.close()
            try:
                while True:
                    if not ours.poll(HANG_S):
                        raise AssertionError(f"the forked call of {fn.__name__} sent nothing for {HANG_S} s")
                    kind, value = pickle.loads(ours.recv_bytes())
                    yield kind, value
                    if kind in ("value", "end", "error"):
                        return
            finally:
                ours.close()
                process.join(HANG_S)

        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def steps(*args: Any, **kwargs: Any) -> Iterator[Any]:
                for kind, value in messages(args, kwargs):
                    if kind == "error":
                        raise value
                    if kind == "item":
                        yield value
            return steps

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            for kind, value in messages(args, kwargs):
                if kind == "error":
                    raise value
                return value
        return call


def in_server(server_pid: int) -> bool:
    return os.getpid() == server_pid

"""Hang guards: the only time limits the tests set.

A test waits for an event (a page condition, a threading.Event, a server-side record of a finished Run), never for a
fixed time, and asserts nothing that depends on the machine's speed or load. Where a wait needs a limit at all, so
that a stuck test fails instead of holding CI forever, it is one of these: a minute or more, far above anything a slow
or loaded machine takes. The longest single wait of the suite, a 1,024-token Run drawn in Chromium, takes about 8 s
on the idle 2-core machine (about 20 s with the suite's two workers beside it); JupyterLab starting, about 10 s; a fresh
Python process importing torch took 26 s on a loaded one (SUBPROCESS_S). A guard that fires costs its whole length
before the test's rerun, so it is no longer than it must be (120 s until 2026-11-30).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

HANG_S = 60  # a thread, a server's answer, a page's event
HANG_MS = HANG_S * 1000  # the same for Playwright, which counts milliseconds
SUBPROCESS_S = 600  # a fresh Python process (it imports torch, and sometimes Gradio, first)


def gradio_client(url: str) -> Any:
    """A gradio_client.Client whose HTTP calls wait up to HANG_S: httpx's default is 5 s per call (joining the queue,
    reading the config), which a loaded server answering 16 clients at once could take."""
    import gradio_client

    return gradio_client.Client(url, verbose=False, httpx_kwargs={"timeout": HANG_S})


def until(condition: Callable[[], bool], what: str) -> None:
    """Wait until `condition()` holds, polled (for a state nothing announces: a server's queue, files on disk); HANG_S
    is only a hang guard."""
    deadline = time.monotonic() + HANG_S
    while not condition():
        assert time.monotonic() < deadline, f"stuck waiting for {what}"
        time.sleep(0.001)

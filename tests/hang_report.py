"""What a stuck test leaves behind, for the report of a test that failed on a hang guard: every Gradio app served in
this process (its queue: events waiting per concurrency id, jobs running) and every Python thread's stack (the served
apps run in this process's threads). Printed in the test's report so that a hang in CI can be read afterwards."""

from __future__ import annotations

import os
import sys
import threading
import traceback
from collections import deque
from typing import Any

SERVED: list[Any] = []  # the Blocks that tests/app/browser.served launched and has not closed
BROWSERS: list[Any] = []  # the session's Chromium (tests/conftest.py `browser`), watched by `watch_browser`
CLOSED_LOGS: deque[list[str]] = deque(maxlen=1)  # the request log of the context closed last
WATCHDOG_FIRED: list[str] = []  # the test under way at each click of the queue stream's watchdog (page.stream_watchdog)
# A page's state: its status texts, the components whose status tracker shows them waiting, whether the first heatmap
# is drawn, what the stream watchdog sees, and its trail of joins, streams and frames (page.stream_watchdog).
STATUS_JS = """() => [...document.querySelectorAll('#status, #output-summary')]
  .map(e => e.id + ': ' + e.innerText.trim().slice(0, 120)).join(' | ')
  + ' | waiting: ' + [...document.querySelectorAll('[data-testid=status-tracker].wrap:not(.hide)')]
    .map(e => (e.closest('[id]') || {id: '?'}).id).join(', ')
  + ' | heatmap drawn: ' + !!document.querySelector('#head-plot .js-plotly-plot')
  + ' | watchdog: ' + JSON.stringify(window.explorerStreamWatchdogState ? window.explorerStreamWatchdogState() : null)
  + '\\n' + (window.explorerStreamTrail ? window.explorerStreamTrail() : '')"""


def watch_browser(browser: Any) -> None:
    """Each new context of `browser` logs its pages' HTTP requests (start, end, failure), console errors and the
    watchdog's clicks, for `report`: a page stuck waiting shows which request never ended or which never left."""
    from explorer.app.page.stream_watchdog import FIRED

    BROWSERS.append(browser)
    new_context = browser.new_context

    def logged_context(*args: Any, **kwargs: Any) -> Any:
        context = new_context(*args, **kwargs)
        log: list[str] = []
        context._hang_log = log  # read by `report`
        clock = __import__("time").monotonic
        start = clock()

        def on_console(message: Any) -> None:
            if message.text == FIRED:  # counted for the session's summary (tests/conftest.py)
                WATCHDOG_FIRED.append(os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0])
            if message.type == "error" or message.text == FIRED:
                log.append(f"console {message.type}: {message.text[:150]}")

        def note(what: str, request: Any) -> None:
            if "/assets/" in request.url or "/static/" in request.url:
                return  # the page's own files: many, and never what a page waits for
            log.append(f"{clock() - start:7.2f}s {what} {request.method} {request.url.split('?')[0][-70:]}")
            del log[:-60]

        context.on("request", lambda r: note("start", r))
        context.on("requestfinished", lambda r: note("end  ", r))
        context.on("requestfailed", lambda r: note(f"FAIL {r.failure}", r))
        context.on("console", on_console)
        context.on("close", lambda _: CLOSED_LOGS.append(log))  # a test's `finally` may close it before the report
        real_close = context.close

        def close(*args: Any, **kwargs: Any) -> Any:
            log.extend(f"at close: {state}" for state in _states(context))  # what a failed wait left, for the report
            return real_close(*args, **kwargs)

        context.close = close
        return context

    browser.new_context = logged_context


def _states(context: Any) -> list[str]:
    """Each open page of `context`: its URL and STATUS_JS (a closing page says why it cannot)."""
    from playwright.sync_api import Error as PlaywrightError

    out = []
    for page in context.pages:
        try:
            status = page.evaluate(STATUS_JS)
        except PlaywrightError as e:  # the page may be closing; the report must still print
            status = f"(not readable: {str(e)[:200]})"
        out.append(f"page {page.url}\n  {status}")
    return out


def pages_state() -> list[str]:
    """Every open page of the watched browsers: its URL, its status texts, and its context's last requests."""
    out = []
    for browser in BROWSERS:
        for context in browser.contexts:
            out.extend(_states(context))
            out.extend("  " + line for line in getattr(context, "_hang_log", []))
    if not out and CLOSED_LOGS:
        out = ["(no open page; the requests of the context closed last:)", *("  " + line for line in CLOSED_LOGS[-1])]
    return out or ["(no open page)"]


def queue_state(demo: Any) -> str:
    """One line per concurrency id with waiting or running events, and the number of busy job slots."""
    queue = getattr(demo, "_queue", None)
    if queue is None:
        return f"{demo.local_url}: no queue"
    busy = sum(j is not None for j in queue.active_jobs)
    lines = [f"{demo.local_url}: busy job slots {busy}/{len(queue.active_jobs)}"]
    for session, messages in list(getattr(queue, "pending_messages_per_session", {}).items()):
        ids = queue.pending_event_ids_session.get(session, set())
        if messages.qsize() or ids:  # messages no stream has read yet: the page is not listening for them
            lines.append(f"  session {session}: {messages.qsize()} undelivered messages, events pending {len(ids)}")
    for cid, eq in queue.event_queue_per_concurrency_id.items():
        if eq.queue or eq.current_concurrency:
            waiting = [getattr(e.fn, "name", "?") for e in eq.queue][:8]
            lines.append(f"  {cid}: running {eq.current_concurrency}/{eq.concurrency_limit}, waiting {waiting}")
    return "\n".join(lines)


def thread_stacks(limit: int = 12) -> str:
    """The innermost `limit` frames of every thread, named."""
    names = {t.ident: t.name for t in threading.enumerate()}
    out = []
    for ident, frame in sys._current_frames().items():
        frames = traceback.format_stack(frame)
        if any(f.split('"')[1].endswith(("selectors.py", "/queue.py")) for f in frames[-3:]) or "TMonitor" in frames[-3]:
            continue  # idle: an event loop waiting for I/O, a worker waiting for work
        stack = "".join(frames[-limit:])
        out.append(f"--- thread {names.get(ident, ident)}\n{stack}")
    return "\n".join(out)


def memory_gates() -> list[str]:
    """Every request-memory gate alive (explorer.app.run.request_memory.MemoryGate): bytes held, requests waiting."""
    import gc

    from explorer.app.run.request_memory import MemoryGate

    gates = [g for g in gc.get_objects() if isinstance(g, MemoryGate)]
    busy = [f"gate: {g.in_use:,} of {g.budget_bytes:,} bytes held, {g.waiting} waiting" for g in gates
            if g.in_use or g.waiting]
    return busy or [f"{len(gates)} memory gates, all free"]


def report() -> str:
    queues = [queue_state(d) for d in SERVED] or ["(no served app)"]
    return "\n".join(["queues:", *queues, *memory_gates(), "", "pages:", *pages_state(), "", thread_stacks()])

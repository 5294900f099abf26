"""What a stuck test leaves behind, for the report of a test that failed on a hang guard: every Gradio app served in
this process (its queue: events waiting per concurrency id, jobs running) and every Python thread's stack (the served
apps run in this process's threads). Printed in the test's report so that a hang in CI can be read afterwards."""

from __future__ import annotations

import sys
import threading
import traceback
from typing import Any

SERVED: list[Any] = []  # the Blocks that tests/app/browser.served launched and has not closed


def queue_state(demo: Any) -> str:
    """One line per concurrency id with waiting or running events, and the number of busy job slots."""
    queue = getattr(demo, "_queue", None)
    if queue is None:
        return f"{demo.local_url}: no queue"
    busy = sum(j is not None for j in queue.active_jobs)
    lines = [f"{demo.local_url}: busy job slots {busy}/{len(queue.active_jobs)}"]
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
        stack = "".join(traceback.format_stack(frame)[-limit:])
        out.append(f"--- thread {names.get(ident, ident)}\n{stack}")
    return "\n".join(out)


def memory_gates() -> list[str]:
    """Every request-memory gate alive (explorer.app.run.request_memory.MemoryGate): bytes held, requests waiting."""
    import gc

    from explorer.app.run.request_memory import MemoryGate

    return [f"gate: {g.in_use:,} of {g.budget_bytes:,} bytes held, {g.waiting} waiting"
            for g in gc.get_objects() if isinstance(g, MemoryGate)]


def report() -> str:
    queues = [queue_state(d) for d in SERVED] or ["(no served app)"]
    return "\n".join(["queues:", *queues, *memory_gates(), "", thread_stacks()])

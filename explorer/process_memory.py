"""Keep a long-running server's memory flat: one malloc arena, and the objects of start-up frozen out of the garbage
collector.

One arena. glibc gives each thread that contends for the allocator an arena of its own, up to 8 per core, and a
block freed in one arena serves only that arena's threads. Gradio runs each event on one of its worker threads, so
the large transient arrays of a Run (attention layers, figures) and the results kept for the sessions' tabs
(explorer.app.serving.kept) spread over many arenas, each holding on to its own freed memory. Measured with 200 sessions
each sending a 480-word text with a head off to MiniLM (kept results capped at 100 MB): the server grew by +414 MB
after 100 sessions and was still growing with 2 arenas at most (glibc's default allows 16 here), and by +232 MB
after 100 and +265 MB after 200 with one (the rest: the kept results, one Run's transient memory the heap keeps for
the next, and Gradio's ~0.26 MB per session). Calling `malloc_trim(0)` after every Run instead gave +149 MB but
made each Run ~30% slower (the next Run faulted its pages in again); one arena was as fast as the default.
`one_malloc_arena` sets glibc's M_ARENA_MAX to 1 at start-up, before any worker thread allocates.

Why. Every request builds Plotly figures, and a `go.Figure` is a web of reference cycles (figure, layout,
traces and their validators point at each other), so it is freed by the cyclic garbage collector, not
by reference counting. A figure still in use when a young-generation collection runs is promoted, and
after two such collections it sits in the oldest generation. CPython collects that generation only when
the objects promoted since its last full collection exceed 25% of the objects that survived it
(`long_lived_pending > long_lived_total / 4`, Modules/gcmodule.c). After importing torch, Gradio and
Plotly and loading a model, ~290,000 objects were long-lived (~456,000 on the app of issue 13's split), so
the dead figures of ~1,300 `/analyze` requests (~20 objects and ~7 kB each, holding their arrays and label
lists) piled up before the next full collection: the server's resident memory grew ~9 MB over 1,500
requests before levelling off (measured on the earlier app; on the split app freezing moved a 1,500-request
soak from +52.8 to +43.4 MB, the rest being Gradio's session growth: app/gradio_fixes.py).

`gc.freeze()` moves every object alive now to a permanent generation that collections skip; the full
collection right after it finds the oldest generation empty, so from then on full collections run every
few hundred promoted objects (about every 100 requests; 3 in 300 requests on the split app) and each one
walks only the objects created since start-up (a few milliseconds instead of ~0.1 s). Frozen objects are
still freed by reference counting; only cycles among them (start-up objects that become cyclic garbage
later) are never collected.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc

M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)


def one_malloc_arena() -> bool:
    """Make every thread of this process allocate from one glibc arena (see above); False where the C library is
    not glibc (nothing changes there). Process-wide: call at the start of the server process, not from a library."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(M_ARENA_MAX, 1))
    except (OSError, AttributeError):
        return False


def freeze_startup_objects() -> int:
    """Move every object alive now out of the garbage collector's reach; returns how many are frozen.

    Call once, in the server process, when start-up is done (modules imported, model loaded, app built
    and listening). Process-wide: not for library code that runs inside someone else's program.
    """
    gc.collect()  # start-up garbage is freed, not frozen
    gc.freeze()
    gc.collect()  # a full collection of the now empty oldest generation resets its long-lived count to ~0
    return gc.get_freeze_count()

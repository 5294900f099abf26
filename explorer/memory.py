"""Keep a long-running server's memory flat: freeze the objects of start-up out of the garbage collector.

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

import gc


def freeze_startup_objects() -> int:
    """Move every object alive now out of the garbage collector's reach; returns how many are frozen.

    Call once, in the server process, when start-up is done (modules imported, model loaded, app built
    and listening). Process-wide: not for library code that runs inside someone else's program.
    """
    gc.collect()  # start-up garbage is freed, not frozen
    gc.freeze()
    gc.collect()  # a full collection of the now empty oldest generation resets its long-lived count to ~0
    return gc.get_freeze_count()

"""The whole app: the starting model loaded once, the page laid out, its events wired, the queue set.

    demo = queue(build_demo(device="cpu"))
    demo.launch(**launch_kwargs())
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any

import gradio as gr
import spaces

from ..device import server_torch_threads
from .serving import api_inputs
from .events import PageEvents
from .link.guard import guard_middleware
from .page.a11y import THEME
from .page.assets import CSS, page_js
from .page.gradio_fixes import STATUS_WORDS, keep_one_entry_per_component
from .page.idle_timers import page_middleware
from .page.layout import layout
from .page.lesson_events import lesson_catalogue
from .page.model_panel import Start, model_info
from .run.request_memory import MemoryGate
from .serving.catalog import model_choices
from .serving.cores import CoreShare
from .serving.kept import KeptResults
from .serving.limits import (DEFAULT_DOWNLOAD_DISK, DEFAULT_KEPT_MEMORY, DEFAULT_MODEL_MEMORY, DEFAULT_REQUEST_MEMORY,
                             MAX_TOKENS)
from .serving.registry import ModelRegistry
from .serving.session import AppContext, Session, default_second, default_source, device_choices, get_model
from .serving.upload_guard import upload_middleware
from .tabs import TABS

log = logging.getLogger(__name__)
__all__ = ["build_demo", "launch_kwargs", "queue"]


def starting_point(ctx: AppContext, source: str, device: str) -> Start:
    """The choices the page opens with; the starting model is loaded now, so API clients can call /analyze with
    the page's defaults at once (if it fails, the page opens anyway and says why on load)."""
    from ..loading import shipped_names

    shipped = shipped_names()
    try:
        info = model_info(get_model(Session(source, device), ctx))
    except Exception as err:  # noqa: BLE001
        log.warning("could not load the starting model %s: %s", source, err)
        info = None
    second, second_kinds = default_second(source), None  # the Compare models tab's second model
    try:
        second_kinds = info.kinds if second == source and info else get_model(Session(second, device), ctx
                                                                              ).config.attention_kinds()
    except Exception as err:  # noqa: BLE001
        log.warning("could not load the second model %s: %s", second, err)
    return Start(info, source, model_choices(shipped, source), device_choices(), device, bool(ctx.allowed_dirs),
                 second, second_kinds)


def build_demo(*, allowed_dirs: Sequence[str] = (), device: str = "auto", checkpoint: str | None = None,
               registry: ModelRegistry | None = None, max_tokens: int = MAX_TOKENS,
               model_memory: int = DEFAULT_MODEL_MEMORY, request_memory: int = DEFAULT_REQUEST_MEMORY,
               kept_memory: int = DEFAULT_KEPT_MEMORY, threads: int | None = None,
               download_disk: int = DEFAULT_DOWNLOAD_DISK) -> gr.Blocks:
    """The app. `checkpoint`: the model sessions start with (default: date-translator). `request_memory`: bytes
    the /analyze requests running at once may take together (explorer.app.run.request_memory). `kept_memory`: bytes
    the Runs'
    results kept for the sessions' tabs take together (explorer.app.serving.kept). `threads`: torch threads of
    every request (None: the machine's, shared among the requests running at once, explorer.app.serving.cores).
    `download_disk`: bytes the Download's files take on disk, all sessions together
    (explorer.app.export.download_files)."""
    if device not in device_choices():
        log.warning("device %r is not available here; using auto", device)
        device = "auto"
    keep_one_entry_per_component()  # sessions would otherwise grow with every request (gradio_fixes)
    api_inputs.install()  # a value the API does not take is refused in words, naming the parameter
    # On a ZeroGPU Space Gradio would run every event handler through spaces.GPU, in a forked worker whose changes
    # (the kept results, the sessions' state) are lost; only the model computations go there
    # (explorer.app.serving.compute).
    spaces.disable_gradio_auto_wrap()
    ctx = AppContext(registry or ModelRegistry(model_memory), tuple(str(d) for d in allowed_dirs), max_tokens,
                     MemoryGate(request_memory), CoreShare(server_torch_threads(threads), shared=threads is None),
                     KeptResults(kept_memory), download_disk)
    source = checkpoint or default_source()
    lessons = lesson_catalogue(ctx.allowed_dirs, TABS)  # built in, and the allowed folders' lessons/*.toml
    page = layout(starting_point(ctx, source, device), Session(source, device), TABS, lessons=lessons)
    with page.demo:
        PageEvents(page, ctx).wire()
    return page.demo


SESSION_CAPACITY = 1000  # sessions whose state Gradio keeps (least recently used dropped first; see launch_kwargs)


def launch_kwargs() -> dict[str, Any]:
    """What `launch` needs besides the address. run_history=False: Gradio would keep every run's inputs and outputs
    (megabytes of plot JSON) in the browser's localStorage, re-serialising it after each click. No /monitoring
    dashboard (QUEUE_ENV). state_session_capacity: Gradio keeps every session, closed or not, until it is among the
    least recently used beyond this many (~0.4 MB each: docs/guarantees.md). Middleware: a link too long to open
    gets a page in words (link.guard); the page's HTML starts with a script that stops Gradio's leaked timer loops
    (idle_timers); Gradio's upload routes are refused (upload_guard: the app takes no files). i18n: words for the
    status announcement Gradio's catalogue lacks (gradio_fixes.STATUS_WORDS)."""
    return dict(css=CSS, theme=THEME, js=page_js(TABS), run_history=False, enable_monitoring=False,
                state_session_capacity=SESSION_CAPACITY, i18n=STATUS_WORDS,
                app_kwargs=dict(middleware=[*guard_middleware(), *page_middleware(), *upload_middleware()]))


# Gradio's queue records every event for its /monitoring dashboard and after each one rebuilds a summary of all it
# keeps; the app runs without that dashboard, so keep one record and never summarise (read when the queue is made;
# an operator's own values win).
QUEUE_ENV = {"GRADIO_ANALYTICS_MAX_EVENTS": "1", "GRADIO_ANALYTICS_CACHE_FREQUENCY": str(10**12)}


def queue(demo: gr.Blocks, concurrency: int = 4, max_size: int = 64) -> gr.Blocks:
    for key, value in QUEUE_ENV.items():
        os.environ.setdefault(key, value)
    return demo.queue(default_concurrency_limit=concurrency, max_size=max_size)



"""Shared plumbing of the app's browser tests: serve a demo on a free port, open it in Debian's chromium, and know
when a Run has ended (an event, never a time).

    with served(build_demo(...), free_port()) as url: ...   # or a session's app: tests/app/conftest.py
    with opened(url, browser) as (page, errors): ...   # page shows a drawn heatmap; `browser`: the session's Chromium
    runs = record_runs(monkeypatch)   # before the action; then runs.wait_for(lambda run: ..., "what")
    page.wait_for_function(IDLE_JS)   # no Run of this page under way

Every Playwright wait of a page opened here has the hang guard tests/hang.HANG_MS, not Playwright's
30 s default: a wait ends when its event happens, the limit only fails a stuck test.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

from tests.hang import HANG_MS, HANG_S

# No Run of the page under way: a Run shows its timer on the status line (events.run_progress) from the click until
# its last update has been applied, between its two steps too.
IDLE_JS = "() => !document.querySelector('#status [data-testid=\"status-tracker\"].wrap:not(.hide)')"
# Idle, and no output waiting for its event either (Gradio greys a pending component): the page as it stays.
SETTLED_JS = f"() => ({IDLE_JS})() && !document.querySelector('.pending')"
# The page's own first Run (run on load) has ended: the output summary is empty until a Run writes it.
FIRST_RUN_JS = f"""() => {{ const el = document.querySelector('#output-summary');
  return !!el && el.innerText.trim() !== '' && ({IDLE_JS})(); }}"""


# What a link to a tab adds to open it on the starting model with a result to show: Patching restores the difference
# between two sentences' answers, and the page's example pair is one date in two languages (one answer, nothing to
# restore), so its link names a sentence 2 with another date.
TAB_LINK_EXTRA = {"patching": "&s2=samedi%2028%20novembre%202026"}

# Page coordinates (the page is not scrolled) of the element a selector names, or null.
BOX = """s => { const e = document.querySelector(s); if (!e) return null; const r = e.getBoundingClientRect();
  return {x: r.x + window.scrollX, y: r.y + window.scrollY, right: r.right + window.scrollX,
          bottom: r.bottom + window.scrollY, width: r.width, height: r.height}; }"""
# Whether the element a selector names is drawn (in the layout, with a size: not hidden by the page's CSS).
SHOWN = """s => { const e = document.querySelector(s); if (!e) return false; const r = e.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== 'hidden'; }"""


@contextmanager
def served(demo: Any, port: int) -> Iterator[str]:
    """The demo queued and launched on 127.0.0.1:port (non-blocking) -> its URL; closed afterwards."""
    from explorer.app.demo import launch_kwargs, queue
    from tests.hang_report import SERVED

    queue(demo).launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                       **launch_kwargs())
    SERVED.append(demo)
    try:
        yield demo.local_url
    finally:
        SERVED.remove(demo)
        demo.close()


def new_page(browser: Any, **context_kwargs: Any) -> tuple[Any, Any]:
    """(context, page): a fresh context of the session's Chromium (the `browser` fixture) and its page, every wait of
    the page limited by the hang guard only. `context_kwargs` go to Playwright's new_context (viewport, is_mobile,
    has_touch, permissions, ...); close the context when done."""
    context = browser.new_context(**context_kwargs)
    context.set_default_timeout(HANG_MS)
    return context, context.new_page()


@contextmanager
def opened(url: str, browser: Any, init_script: str | None = None, viewport: tuple[int, int] = (1280, 900),
           **context_kwargs: Any) -> Iterator[tuple[Any, list[str]]]:
    """A page of `viewport` (width, height) on `url` in a fresh context of the session's Chromium, once its first
    heatmap is drawn and the Run it makes on load has ended, and the console / page errors it collects. `init_script`
    runs in the page before any of its own scripts; `context_kwargs` go to Playwright's new_context (e.g. is_mobile,
    has_touch, device_scale_factor)."""
    errors: list[str] = []
    context, page = new_page(browser, viewport={"width": viewport[0], "height": viewport[1]}, **context_kwargs)
    try:
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        if init_script:
            page.add_init_script(init_script)
        page.goto(url)
        page.wait_for_selector("#head-plot .js-plotly-plot")
        page.wait_for_function(FIRST_RUN_JS)
        yield page, errors
    finally:
        context.close()


class Runs:
    """The Runs (/analyze of a page or a client) the server has finished computing, in order: each a
    SimpleNamespace(text1, text2, toggles, view, source) (source: the model's, as LoadedModel.source). A Run is
    recorded before its last update is sent, and the Runs one control of a page starts run one after another (the
    page sends the next once the last has ended: trigger_mode "always_last"); so once such a Run is recorded, the next
    time its page is seen IDLE (IDLE_JS) it has applied the last update of that Run or of a later one."""

    def __init__(self) -> None:
        self.done: list[SimpleNamespace] = []
        self._cond = threading.Condition()

    def add(self, run: SimpleNamespace) -> None:
        with self._cond:
            self.done.append(run)
            self._cond.notify_all()

    def mark(self) -> int:
        """How many Runs have finished so far (for `wait_for(..., since=)`)."""
        with self._cond:
            return len(self.done)

    def wait_for(self, finished: Callable[[SimpleNamespace], bool], what: str, since: int = 0) -> SimpleNamespace:
        """The first Run (after the first `since`) for which `finished(run)` holds, once there is one (HANG_S: a hang
        guard)."""
        with self._cond:
            found = self._cond.wait_for(lambda: next((r for r in self.done[since:] if finished(r)), None), HANG_S)
        assert found is not None, (f"no Run {what} finished", [(r.source, r.toggles.heads_on) for r in self.done[-3:]])
        return found


def record_runs(monkeypatch: Any) -> Runs:
    """From now on, each Run the server computes to its end is recorded (run.result.analyze_in_steps, wrapped
    where explorer.app.serving.compute calls it)."""
    from explorer.app.serving import compute

    runs, real = Runs(), compute.analyze_in_steps

    def recorded(loaded: Any, text1: Any, text2: Any, toggles: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        yield from real(loaded, text1, text2, toggles, *args, **kwargs)
        view = args[0] if args else kwargs.get("view")
        runs.add(SimpleNamespace(text1=text1, text2=text2, toggles=toggles, view=view,
                                 source=getattr(loaded, "source", ""), sampling=kwargs.get("sampling")))

    monkeypatch.setattr(compute, "analyze_in_steps", recorded)
    return runs


def heads_on(run: SimpleNamespace, kind: str) -> frozenset[tuple[int, int]] | None:
    """The (layer, head) pairs of `kind` that were on in a recorded Run (None: all)."""
    on = run.toggles.heads_on
    return None if on is None else on.get(kind)


# A tab's result is there (an element id): its figure drawn, or its text written.
RESULT = """id => {
  const el = document.querySelector('#' + id);
  if (!el) return false;
  const gd = el.querySelector('.js-plotly-plot');
  if (gd) return !!(gd.data && gd.data.length);
  return el.innerText.trim() !== '';
}"""

"""A fix for Gradio (6.31) status trackers that keep an idle page drawing 60 frames a second.

The bug. A status tracker counts a pending event's seconds in a requestAnimationFrame loop, and stops it only
when the tracker, still on the page, sees its status leave "pending" (statustracker-*.js: `ze` runs while `W`;
nothing clears `W` when the tracker is removed). A tracker removed while pending loops for good, and the page's
own "Loading..." tracker is removed that way when the app appears: every page, idle, ran a frame each vsync,
taking CPU from everything else on the machine (on a laptop running the app, from the model's forward pass).

The fix. No tracker needs a frame while none is shown (a shown tracker drops its `hide` class), so a frame asked
for by a tracker's timer runs only if one is shown; otherwise its callback is dropped, which ends that loop, and
Gradio starts a new loop when that tracker's status turns pending again. A shown timer reads tenths of a second,
so after its first frame (at once: it shows the last Run's time until then) it gets one a tenth of a second after
it asks, not at the next vsync (the CPU it saves during a long Run: BENCHMARKS.md). The timer ignores the handle it
gets back (a timeout's). Only a frame
asked for by the tracker's own code is touched; Svelte's animation loop, wherever it was started from, is not.
Gradio's bundle keeps its own reference to requestAnimationFrame from the moment it loads, before any script Gradio
runs for the app (`js`, `head`), so the wrapper is a script placed first in the page's <head> by an ASGI
middleware (`FirstInHead`) on the page's HTML.
"""

from __future__ import annotations

from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

STOP_HIDDEN_TIMERS_JS = """(() => {
  const requestFrame = window.requestAnimationFrame.bind(window);
  const shown = '[data-testid="status-tracker"]:not(.hide)';
  window.requestAnimationFrame = (callback) => {
    // This wrapper's own line, then its caller's (Chromium heads the stack with an "Error" line; Firefox does not).
    const stack = (new Error().stack || '').split('\\n').filter((line) => line.trim() && line !== 'Error');
    if (!/statustracker/.test(stack[1] || '')) return requestFrame(callback);  // not asked by a tracker's timer
    const frame = () => requestFrame(function trackerFrame(time) { if (document.querySelector(shown)) callback(time); });
    // A timer's first frame at once (it replaces the last Run's time), the next ones a tenth of a second apart.
    return stack.some((line) => line.includes('trackerFrame')) ? setTimeout(frame, 100) : frame();
  };
})();"""


class FirstInHead:
    """ASGI middleware: the HTML page served at `/` gets `html` right after its opening <head> tag (before the
    page's own scripts); every other response passes through untouched."""

    def __init__(self, app: ASGIApp, html: str) -> None:
        self.app, self.html = app, html.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or scope["path"] != "/":
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        body: list[bytes] = []

        async def send_page(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body" or start is None:
                await send(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            page, headers = b"".join(body), MutableHeaders(raw=start["headers"])
            if headers.get("content-type", "").startswith("text/html") and "content-encoding" not in headers:
                page = page.replace(b"<head>", b"<head>" + self.html, 1)
                headers["content-length"] = str(len(page))
            await send(start)
            await send({"type": "http.response.body", "body": page})

        await self.app(scope, receive, send_page)


def page_middleware() -> list[Any]:
    """The FastAPI `middleware` that installs the fix and the queue stream's watchdog (stream_watchdog) on the page,
    before Gradio's client loads (for launch's `app_kwargs`)."""
    from .stream_watchdog import STREAM_WATCHDOG_JS

    return [Middleware(FirstInHead, html=f"<script>{STOP_HIDDEN_TIMERS_JS}\n{STREAM_WATCHDOG_JS}</script>")]

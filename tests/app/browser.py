"""Shared plumbing of the app's browser tests: serve a demo on a free port, open it in Debian's chromium.

    with served(build_demo(...), free_port()) as url: ...
    with opened(url, chromium_path, chromium_args) as (page, errors): ...   # page shows a drawn heatmap
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def served(demo: Any, port: int) -> Iterator[str]:
    """The demo queued and launched on 127.0.0.1:port (non-blocking) -> its URL; closed afterwards."""
    from explorer.app.demo import launch_kwargs, queue

    queue(demo).launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                       **launch_kwargs())
    try:
        yield demo.local_url
    finally:
        demo.close()


@contextmanager
def opened(url: str, chromium_path: str, chromium_args: list[str], init_script: str | None = None
           ) -> Iterator[tuple[Any, list[str]]]:
    """A 1280x900 page on `url`, once its first heatmap is drawn, and the console / page errors it collects.
    `init_script` runs in the page before any of its own scripts."""
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=chromium_args)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        if init_script:
            page.add_init_script(init_script)
        page.goto(url)
        page.wait_for_selector("#head-plot .js-plotly-plot", timeout=90_000)
        try:
            yield page, errors
        finally:
            browser.close()

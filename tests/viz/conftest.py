"""Pages in headless Chromium holding the plotly.js bundles the figures must draw with.

- "gradio": the plotly.js the installed Gradio serves to gr.Plot (3.3.1 for Gradio 6.31), taken out of
  its frontend chunk `PlotlyPlot-*.js`, where it sits as a UMD module inside a CommonJS wrapper;
- "plotly.py": the bundle of the installed plotly.py (4.1.1 for plotly 7.1), used by `fig.to_html`.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

_WRAPPER = re.compile(r"\(\((\w+),(\w+)\)=>\{\(function\(")  # (exports, module) => { (function(root, factory) ...
_END = re.compile(r"return window\.Plotly=(\w+),\1\}\)")


def gradio_plotly_js() -> str | None:
    """Gradio's plotly.js as a classic script that sets window.Plotly, or None if not found."""
    spec = importlib.util.find_spec("gradio")  # its files only: importing gradio takes seconds
    if spec is None or spec.origin is None:
        return None
    chunks = sorted((Path(spec.origin).parent / "templates" / "frontend" / "assets").glob("PlotlyPlot-*.js"))
    for chunk in chunks:
        text = chunk.read_text(encoding="utf-8")
        start, end = _WRAPPER.search(text), _END.search(text)
        if start and end and end.start() > start.end():
            exports, module = start.group(1), start.group(2)
            body = text[start.end() - len("(function("):end.end()]
            return f"(function({exports},{module}){{{body}}})({{}},{{exports:{{}}}});"
    return None


@pytest.fixture(scope="session")
def plotly_bundles() -> dict[str, str]:
    from plotly.offline import get_plotlyjs

    bundles = {"plotly.py": get_plotlyjs()}
    gradio_js = gradio_plotly_js()
    if gradio_js is None:  # gradio is a runtime dependency: its bundle must be there
        pytest.fail("Gradio's plotly.js chunk (templates/frontend/assets/PlotlyPlot-*.js) was not found")
    bundles["gradio"] = gradio_js
    return bundles


@pytest.fixture(scope="module", params=["gradio", "plotly.py"])
def page(request, plotly_bundles, chromium_path, chromium_args, tmp_path_factory):
    """A page with one plotly.js bundle loaded and an empty <div id="g">; page.bundle names it."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=chromium_args)
        pg = browser.new_page(viewport={"width": 1200, "height": 1000})
        pg.bundle = request.param
        pg.dialogs, pg.errors = [], []
        pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
        pg.on("pageerror", lambda e: pg.errors.append(str(e)))
        path = tmp_path_factory.mktemp("viz") / "page.html"
        path.write_text(f"<html><head><meta charset='utf-8'><script>{plotly_bundles[request.param]}</script></head>"
                        "<body style='margin:0'><div id='g'></div></body></html>", encoding="utf-8")
        pg.goto(path.as_uri())
        yield pg
        browser.close()

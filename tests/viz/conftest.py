"""Pages in headless Chromium holding the plotly.js bundles the figures must draw with (tests/viz/bundles.py):
"gradio" (what gr.Plot draws with) and "plotly.py" (what `fig.to_html` uses)."""

from __future__ import annotations

import pytest

from tests.viz.bundles import gradio_plotly_js, plotly_py_js


@pytest.fixture(scope="session")
def plotly_bundles() -> dict[str, str]:
    bundles = {"plotly.py": plotly_py_js()}
    gradio_js = gradio_plotly_js()
    if gradio_js is None:  # gradio is a runtime dependency: its bundle must be there
        pytest.fail("Gradio's plotly.js chunk (templates/frontend/assets/PlotlyPlot-*.js) was not found")
    bundles["gradio"] = gradio_js
    return bundles


@pytest.fixture(scope="module", params=["gradio", "plotly.py"])
def page(request, plotly_bundles, browser, tmp_path_factory):
    """A page with one plotly.js bundle loaded and an empty <div id="g">, in a context of the session's Chromium;
    page.bundle names it."""
    from tests.app.browser import new_page

    context, pg = new_page(browser, viewport={"width": 1200, "height": 1000})
    with context:
        pg.bundle = request.param
        pg.dialogs, pg.errors = [], []
        pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
        pg.on("pageerror", lambda e: pg.errors.append(str(e)))
        path = tmp_path_factory.mktemp("viz") / "page.html"
        path.write_text(f"<html><head><meta charset='utf-8'><script>{plotly_bundles[request.param]}</script></head>"
                        "<body style='margin:0'><div id='g'></div></body></html>", encoding="utf-8")
        pg.goto(path.as_uri())
        yield pg

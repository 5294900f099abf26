"""Headless Chromium draws the figures: token HTML shows literally, hover names the cell.

Uses plotly.py's bundled plotly.js (Gradio ships 3.3.1; tests/viz/render_screenshots.py can
render with that one). Skipped when Playwright or Chromium is missing.
"""

import json
import shutil

import numpy as np
import pytest

pytestmark = pytest.mark.browser

TOKS = ["the", "<b>cat</b>", "<img src=x onerror=alert(1)>", "<script>alert(2)</script>", "the"]


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    sync_api = pytest.importorskip("playwright.sync_api")
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("no chromium")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        pg = browser.new_page(viewport={"width": 1200, "height": 900})
        pg.dialogs = []
        pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))
        from plotly.offline import get_plotlyjs

        # Load plotly.js once; each test then draws into the same page.
        path = tmp_path_factory.mktemp("viz") / "page.html"
        path.write_text(f"<html><head><meta charset='utf-8'><script>{get_plotlyjs()}</script></head>"
                        "<body><div id='g'></div></body></html>")
        pg.goto(path.as_uri())
        yield pg
        browser.close()


def draw(page, fig):
    page.evaluate("f => Plotly.newPlot('g', f.data, f.layout)", json.loads(fig.to_json()))


def hover(page, row, col):
    """Move the mouse over cell (row, col) of the heatmap and read the hover label."""
    page.mouse.move(0, 0)
    x, y = page.evaluate(
        f"""() => {{ const gd = document.getElementById('g'), L = gd._fullLayout, r = gd.getBoundingClientRect();
        return [r.left + L.xaxis._offset + L.xaxis.l2p({col}), r.top + L.yaxis._offset + L.yaxis.l2p({row})]; }}""")
    page.mouse.move(x, y)
    page.wait_for_timeout(150)
    return page.evaluate("Array.from(document.querySelectorAll('.hovertext')).map(e => e.textContent)")


def test_head_heatmap_escapes_tokens_in_ticks_and_hover(page):
    from explorer.viz import head_heatmap

    w = np.full((5, 5), 0.2)
    mask = np.tril(np.ones((5, 5), bool))
    draw(page, head_heatmap(w, TOKS, TOKS, mask=mask))
    ticks = page.evaluate("Array.from(document.querySelectorAll('.ytick text')).map(e => e.textContent)")
    assert ticks == ["the", "<b>cat</b>", "<img src=x oner…", "<script>alert(2…", "the·2"]
    assert page.evaluate("document.querySelectorAll('#g img, #g script, #g b').length") == 0
    assert hover(page, 2, 1) == ["<img src=x onerror=alert(1)> → <b>cat</b>: 0.200"]
    assert hover(page, 1, 3) == ["<b>cat</b> → <script>alert(2)</script>: masked (weight 0.200)"]
    assert page.dialogs == []


def test_overview_hover_names_layer_head_query_key(page):
    from explorer.viz import attention_overview

    a = np.full((2, 3, 5, 5), 0.2, dtype=np.float32)
    a[1, 2, 4, 1] = 0.9
    fig = attention_overview(a, TOKS, TOKS)
    draw(page, fig)
    m = fig.layout.meta["overview_grid"]
    row, col = (5 + m["gap_rows"]) + 4, 2 * (5 + m["gap_cols"]) + 1
    assert hover(page, row, col) == ["layer 1 · query 4: the·2head 2 · key 1: <b>cat</b>weight: 0.900"]
    assert page.dialogs == []

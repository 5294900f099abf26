"""A 1,024-token input drawn in the real app, in headless Chromium (issue 16): a tiny GPT-2-layout model with a
1,064-token context (2 layers x 2 heads, random weights, loaded through the Hub path from tmp_path) reads the first
1,024 tokens of a longer text, says so, and draws the chosen head with 1,024 query rows and the all-heads overview."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser
transformers = pytest.importorskip("transformers")

from tests.app.browser import IDLE_JS, new_page
from tests.app.long_model import long_text, save_long_gpt2  # noqa: E402

TEXT_JS = "id => { const el = document.querySelector('#' + id); return el ? el.innerText : ''; }"
# The drawn heatmap of a plot: rows of z and query names on y (Plotly's full data, after drawing).
DRAWN_JS = """id => {
  const el = document.querySelector('#' + id + ' .js-plotly-plot');
  if (!el || !el._fullData || !el.querySelector('.heatmaplayer image, .heatmaplayer .hm')) return null;
  const t = el._fullData.find(d => d.type === 'heatmap');
  return t ? {rows: t.z.length, cols: t.z[0].length, y: (t.y || []).length} : null;
}"""


CELL_JS = """([row, col]) => { const gd = document.querySelector('#overview-plot .js-plotly-plot'), L = gd._fullLayout;
  const r = gd.getBoundingClientRect();
  return [r.left + L.xaxis._offset + L.xaxis.l2p(col), r.top + L.yaxis._offset + L.yaxis.l2p(row)]; }"""
LABEL_JS = """() => { const layer = document.querySelector('#overview-plot .hoverlayer');
  const text = layer && layer.querySelector('.hovertext');
  return text ? [text.textContent, getComputedStyle(layer).visibility !== 'hidden'] : null; }"""


def hover_label(page, row: int, col: int) -> tuple[str, bool] | None:
    """The overview's hover label over cell (row, col) (axis positions, gaps included) and whether it is shown: once
    the label of the mouse's last position is drawn (the one before is gone first). Its visibility is set by the page
    script's plotly_hover handler, which plotly.js calls right after drawing the label, in the same task."""
    page.locator("#overview-plot").scroll_into_view_if_needed()
    page.mouse.move(0, 0)
    page.wait_for_function(f"() => ({LABEL_JS})() === null")
    x, y = page.evaluate(CELL_JS, [row, col])
    page.mouse.move(x, y)
    return page.wait_for_function(LABEL_JS).json_value()


@pytest.fixture(scope="module")
def long_app(tmp_path_factory, serve):
    root = tmp_path_factory.mktemp("long-models")
    save_long_gpt2(root / "long-gpt2", n_layer=2, n_head=2, n_embd=16)
    return serve("long-gpt2", root)


def test_a_1024_token_input_is_drawn(long_app, browser):
    errors: list[str] = []
    context, page = new_page(browser, viewport={"width": 1280, "height": 900})
    with context:
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(long_app)
        page.wait_for_selector("#head-plot .js-plotly-plot")
        page.locator("#text2 textarea").fill("")
        page.locator("#text1 textarea").fill(long_text(1500))
        page.locator("#run").click()
        page.wait_for_function(f"() => ({TEXT_JS})('status').includes('only the first 1,024 are used')")
        head = page.wait_for_function(f"() => {{ const d = ({DRAWN_JS})('head-plot'); "
                                      "return d && d.y === 1024 ? d : null; }").json_value()
        assert head["rows"] == 1024 and head["cols"] > 0, head  # every query a row; keys pooled to the pixels

        page.get_by_role("tab", name="All heads").click()
        # The tab opened while the long Run may still be under way shows the last ended Run's overview (the short
        # first one) until the long Run ends and draws its own: wait for the overview of 1,024 queries (under load
        # the old one was drawn first, and the hovered cells were the old figure's).
        overview = page.wait_for_function(
            f"() => {{ const d = ({DRAWN_JS})('overview-plot'); const gd = document.querySelector('#overview-plot "
            ".js-plotly-plot'); const q = gd && gd.layout.meta && gd.layout.meta.overview_grid.q_edges; "
            "return d && q && q[q.length - 1] === 1024 ? d : null; }").json_value()
        page.wait_for_function(IDLE_JS)
        assert overview["rows"] > 0 and overview["cols"] > 0, overview  # 2 x 2 tiles, pooled to their pixels
        # Drawn as one image (its cells evenly spaced, the gaps between tiles included); the page hides the hover
        # label of a gap cell (its value is only the code of its transparent colour) and shows a tile cell's.
        assert page.evaluate("() => document.querySelector('#overview-plot .js-plotly-plot')._fullData[0]._islinear")
        grid = page.evaluate("() => document.querySelector('#overview-plot .js-plotly-plot').layout.meta.overview_grid")
        tile = len(grid["q_edges"]) - 1
        for row, col in ((tile + 1, 3), (3, tile + 1)):  # a gap row between layers 0 and 1, a gap column
            text, shown = hover_label(page, row, col)
            assert "gap between" in text and not shown, text
        text, shown = hover_label(page, tile + grid["gap_rows"] + 2, 2)
        assert shown and text.startswith("layer 1 · quer") and "max weight in block: ≈" in text, text
        large = page.wait_for_function(f"() => ({DRAWN_JS})('large-plot')").json_value()
        assert large["y"] == 1024, large
        assert "1,500 tokens" in page.evaluate(TEXT_JS, "status")
    assert errors == [], errors

"""The Contributions tab in headless Chromium on the starting model (date-translator): Attribute draws the DLA map
and the token-attribution strip; clicking a head's cell of the map shows that head's promoted / suppressed tokens
(the page script sends the cell to the server, which answers from the kept result). No console errors."""

from __future__ import annotations

import pytest

from tests.app.browser import IDLE_JS, opened, served

pytestmark = pytest.mark.browser

DRAWN = """id => {
  const gd = document.querySelector('#' + id + ' .js-plotly-plot');
  return !!gd && !!gd._fullData && gd._fullData.some(t => t.type === 'heatmap')
    && !!gd.querySelector('.heatmaplayer image, .heatmaplayer .hm');
}"""
TEXT = "id => { const el = document.querySelector('#' + id); return el ? el.innerText : ''; }"
# Page coordinates of the centre of cell (layer, head) of the map's first panel (the decoder's self-attention heads).
CELL = """([layer, head]) => { const gd = document.querySelector('#contrib-plot .js-plotly-plot'), L = gd._fullLayout;
  const r = gd.getBoundingClientRect();
  return [r.left + L.xaxis._offset + L.xaxis.l2p(head), r.top + L.yaxis._offset + L.yaxis.l2p(layer)]; }"""
HEAD_VALUE = "() => document.querySelector('#contrib-head input').value"


@pytest.fixture(scope="module")
def app_url(free_port):
    from explorer.app.demo import build_demo

    with served(build_demo(device="cpu"), free_port()) as url:
        yield url


def test_contributions_tab_draws_and_a_click_shows_the_heads_tokens(app_url, chromium_path, chromium_args):
    with opened(app_url, chromium_path, chromium_args) as (page, errors):
        page.locator("#views").get_by_role("tab", name="Contributions").click()
        page.locator("#contrib-steps input").fill("8")
        page.locator("#contrib-run").click()
        for plot in ("contrib-plot", "contrib-strip"):
            page.wait_for_function(f"() => ({DRAWN})('{plot}')")
        page.wait_for_function(f"() => ({TEXT})('contrib-delta').includes('Completeness')")
        page.wait_for_function(IDLE_JS)
        first = page.evaluate(HEAD_VALUE)
        target = "L0 H1" if first != "L0 H1" else "L0 H2"
        layer, head = int(target[1]), int(target[-1])
        page.locator("#contrib-plot").scroll_into_view_if_needed()
        x, y = page.evaluate(CELL, [layer, head])
        page.mouse.click(x, y)
        page.wait_for_function(f"() => ({HEAD_VALUE})() === '{target}'")
        page.wait_for_function(f"() => ({TEXT})('contrib-head-summary').includes('{target}')")
        table = page.evaluate(TEXT, "contrib-head-table")
        assert "promotes" in table and "baseline" in table, table
        assert "Traceback" not in page.content()
    assert errors == [], errors

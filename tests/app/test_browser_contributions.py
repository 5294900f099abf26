"""The Contributions tab in headless Chromium on the starting model (date-translator): Attribute draws the DLA map
and the token-attribution strip; clicking a head's cell of the map shows that head's promoted / suppressed tokens
(the page script sends the cell to the server, which answers from the kept result); its form comes before its help,
which is folded. No console errors."""

from __future__ import annotations

import pytest

from tests.app.browser import IDLE_JS, opened

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
# A head edge's midpoint in the contribution graph: its page coordinates and its customdata (explorer.viz.flow).
EDGE = """() => { const gd = document.querySelector('#contrib-graph .js-plotly-plot'); if (!gd || !gd._fullData) return null;
  const r = gd.getBoundingClientRect(), L = gd._fullLayout;
  for (const t of gd._fullData) {
    const i = (t.customdata || []).findIndex(d => Array.isArray(d) && d[0] === 'head');
    if (i < 0) continue;
    const xa = L[t.xaxis.replace('x', 'xaxis')], ya = L[t.yaxis.replace('y', 'yaxis')];
    return [r.left + xa._offset + xa.l2p(t.x[i]), r.top + ya._offset + ya.l2p(t.y[i]), t.customdata[i]];
  }
  return null; }"""
EDGES = """() => [].concat(...document.querySelector('#contrib-graph .js-plotly-plot')._fullData.map(
  t => (t.customdata || []).filter(d => Array.isArray(d) && d[0] === 'head')))"""
CLICKED = "() => (document.querySelector('#contrib-click textarea, #contrib-click input') || {}).value || ''"
HEAD_TITLE = "() => { const gd = document.querySelector('#head-plot .js-plotly-plot'); return gd && gd.layout && gd.layout.title ? String(gd.layout.title.text || '') : ''; }"


@pytest.fixture(scope="module")
def app_url(default_app):
    return default_app


def test_contributions_tab_draws_and_a_click_shows_the_heads_tokens(app_url, browser):
    with opened(app_url, browser) as (page, errors):
        page.locator("#views").get_by_role("tab", name="Contributions").click()
        # the form first, the long help folded under it ("How to read this")
        form, help_box = (page.locator(s).bounding_box() for s in ("#contrib-run", "#views .tab-help"))
        assert form["y"] < help_box["y"] and not page.get_by_text("Why the model chose a token").first.is_visible()
        page.locator("#contrib-steps input").fill("8")
        page.locator("#contrib-run").click()
        for plot in ("contrib-plot", "contrib-strip"):
            page.wait_for_function(f"() => ({DRAWN})('{plot}')")
        page.wait_for_function(f"() => ({TEXT})('contrib-delta').includes('Completeness')")
        page.wait_for_function(IDLE_JS)
        first = page.evaluate(HEAD_VALUE)
        target = "L0 H1" if first != "L0 H1" else "L0 H2"
        layer, head = int(target[1]), int(target[-1])
        # centred: the output bar pinned at the window's top (results_bar) would take a click at its edge
        page.locator("#contrib-plot").evaluate("e => e.scrollIntoView({block: 'center'})")
        x, y = page.evaluate(CELL, [layer, head])
        page.mouse.click(x, y)
        page.wait_for_function(f"() => ({HEAD_VALUE})() === '{target}'")
        page.wait_for_function(f"() => ({TEXT})('contrib-head-summary').includes('{target}')")
        table = page.evaluate(TEXT, "contrib-head-table")
        assert "promotes" in table and "baseline" in table, table
        # The contribution graph: a click on a head edge's midpoint picks that head (the nearest midpoint's: parallel
        # edges of one token pair sit a few pixels apart, so it may be a neighbour's; any head edge's head will do).
        page.wait_for_function(f"() => ({EDGE})() !== null")
        page.locator("#contrib-graph").evaluate("e => e.scrollIntoView({block: 'center'})")
        x, y, _ = page.evaluate(EDGE)
        heads = {f"{'cross ' if d[3] == 'cross' else ''}L{d[1]} H{d[2]}" for d in page.evaluate(EDGES)}
        before = page.evaluate(CLICKED)
        page.mouse.click(x, y)
        page.wait_for_function(f"() => ({CLICKED})() !== {before!r}")
        # the server's answer to the click: the head box names one of the graph's heads (idle alone can come first)
        page.wait_for_function(f"() => {sorted(heads)!r}.includes(({HEAD_VALUE})())")
        page.wait_for_function(IDLE_JS)
        edge_head = page.evaluate(HEAD_VALUE)
        assert edge_head in heads, (edge_head, heads)
        attention = "cross" if edge_head.startswith("cross") else "decoder"
        layer, head = (int(w[1:]) for w in edge_head.removeprefix("cross ").split())
        # "Open its attention": the Attention tab shows that head's heatmap after the chained Run.
        page.locator("#contrib-open").click()
        kind = "cross-attention" if attention == "cross" else "decoder self-attn."
        page.wait_for_function(f"() => ({HEAD_TITLE})().includes('{kind} L{layer} H{head}')")
        assert page.locator("#views").get_by_role("tab", name="Attention & output").get_attribute(
            "aria-selected") == "true"
        assert "Traceback" not in page.content()
    assert errors == [], errors

"""The Inside a head tab in headless Chromium on the starting model (date-translator): a link ?tab=head opens it
computed in plain words (the worked example with its strips; the details hidden); a key typed into the picker joins
the steps; "All details" shows the jargon glossed and draws the neuron view, the table, the heads as lines and the
query-key map; a click on a row of the
Attention tab's heatmap opens this tab on that query (the page script writes the row to the server); at the last
token, where nothing is masked, the mask step's button opens the middle query, whose later keys are masked. No console
errors."""

from __future__ import annotations

import re

import pytest

from tests.app.browser import IDLE_JS, new_page

pytestmark = pytest.mark.browser

DRAWN = """id => {
  const gd = document.querySelector('#' + id + ' .js-plotly-plot');
  return !!gd && !!gd._fullData && gd._fullData.length > 0 && !!gd.querySelector('.main-svg');
}"""
TEXT = "id => { const el = document.querySelector('#' + id); return el ? el.innerText : ''; }"
QUERY = "() => (document.querySelector('#head-query input') || {}).value"
# Page coordinates of the centre of cell (row, column 0) of the Attention tab's heatmap.
ROW = """(row) => { const gd = document.querySelector('#head-plot .js-plotly-plot'), L = gd._fullLayout;
  const r = gd.getBoundingClientRect();
  return [r.left + L.xaxis._offset + L.xaxis.l2p(0), r.top + L.yaxis._offset + L.yaxis.l2p(row)]; }"""
VISIBLE = "id => { const el = document.querySelector('#' + id); return !!el && el.offsetParent !== null; }"
SELECTED = "() => document.querySelector('#views [role=tab][aria-selected=true]').innerText"


@pytest.fixture(scope="module")
def app_url(default_app):
    return default_app


def test_the_tab_opens_by_link_and_a_heatmap_row_opens_it_on_that_query(app_url, browser):
    errors: list[str] = []
    context, page = new_page(browser, viewport={"width": 1280, "height": 900})
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{app_url}?tab=head&kind=decoder&layer=1&head=2")
        page.wait_for_function(f"() => ({TEXT})('head-summary').includes('decoder self-attn. L1 H2')")
        # plain words first: the worked example, the details hidden
        page.wait_for_function(f"() => ({TEXT})('head-steps').includes('(the sum) = weight')")
        page.wait_for_function(IDLE_JS)
        assert page.evaluate(SELECTED) == "Inside a head"
        steps = page.evaluate(TEXT, "head-steps")
        assert "÷ √16" in steps and "other keys" in steps and "The weights add up to 1" in steps, steps
        assert "position 11" in page.evaluate(TEXT, "head-summary")  # -1: the last of 12
        assert page.evaluate(f"() => !document.querySelector('#head-comp-plot') || !({VISIBLE})('head-details')")
        assert page.evaluate("() => document.querySelectorAll('#head-steps span[role=img]').length") >= 6  # strips
        # a key picked by typing its position: the steps follow it
        page.locator("#head-keys input").fill("7")
        page.get_by_role("option").filter(has_text=re.compile(r"(^|\s)7 ")).first.click()
        page.wait_for_function(f"() => ({TEXT})('head-steps').includes('k of 7 ')")
        page.wait_for_function(IDLE_JS)
        # all details: the symbols, glossed, and the neuron view, the table, the lines and the query-key map
        page.locator("#head-words").get_by_role("radio", name="All details").check()
        for plot in ("head-comp-plot", "head-lines-plot", "head-qk-plot"):
            page.wait_for_function(f"() => ({DRAWN})('{plot}')")
        page.wait_for_function(IDLE_JS)
        table = page.evaluate(TEXT, "head-table")
        assert "q·k" in table and "weight" in table, table
        last = page.evaluate(TEXT, "head-summary")
        assert "query 11" in last and "⚠️" not in page.evaluate(TEXT, "status"), last
        glossed = page.evaluate("() => [...document.querySelectorAll('#head-summary abbr[title], #head-steps "
                                "abbr[title]')].map(a => a.innerText)")
        assert {"residual stream", "z W_O"} <= set(glossed), glossed

        page.locator("#views").get_by_role("tab", name="Attention & output").click()
        page.wait_for_function(f"() => ({DRAWN})('head-plot')")
        page.wait_for_function(IDLE_JS)
        x, y = page.evaluate(ROW, 3)
        page.mouse.click(x, y)
        page.wait_for_function(f"() => ({SELECTED})() === 'Inside a head'")
        page.wait_for_function(f"() => ({QUERY})() === '3'")
        page.wait_for_function(f"() => ({TEXT})('head-summary').includes('query 3 ')")
        page.wait_for_function(IDLE_JS)
        assert "decoder self-attn. L1 H2" in page.evaluate(TEXT, "head-summary")
        assert "Traceback" not in page.content()
    finally:
        context.close()
    assert errors == [], errors


def test_a_link_opens_the_keys_and_all_details(app_url, browser):
    context, page = new_page(browser, viewport={"width": 1280, "height": 900})
    try:
        page.goto(f"{app_url}?tab=head&kind=decoder&layer=1&head=2&keys=0,4&words=details")
        page.wait_for_function(f"() => ({TEXT})('head-steps').includes('k of 4 ')")
        page.wait_for_function(f"() => ({DRAWN})('head-comp-plot')")
        page.wait_for_function(IDLE_JS)
        keys = [line for line in page.evaluate(TEXT, "head-steps").split("\n") if line.startswith("k of ")]
        assert [k.split()[2] for k in keys] == ["0", "4"], keys
        # the last token: nothing masked, said in the mask step; its button opens the middle query (causal: masked)
        assert "none come after the last one" in page.evaluate(TEXT, "head-steps")
        page.locator("#head-steps [data-head-masked]").click()
        page.wait_for_function(f"() => ({QUERY})() === '6' && ({TEXT})('head-steps').includes('masked (0)')")
        assert "Nothing is masked" not in page.evaluate(TEXT, "head-steps")
    finally:
        context.close()

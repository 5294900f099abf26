"""The Features tab in headless Chromium on the shipped date-gpt with an SAE in an allowed folder: a link to
?tab=features opens it computed (the heatmap drawn, the output the model's own); a click on a heatmap cell opens that
latent's dashboard; switching it off changes the output table. No console errors."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.app.browser import IDLE_JS, new_page

pytestmark = pytest.mark.browser

SENTENCE = "21/11/2026"  # the sentence the SAE's latent was chosen on (tests/app/conftest.sae_folder)
TEXT = "id => { const el = document.querySelector('#' + id); return el ? el.innerText : ''; }"
DRAWN = "() => !!document.querySelector('#features-heatmap .js-plotly-plot .heatmaplayer')"
# Page coordinates of the centre of the heatmap cell (last token, column `column`).
CELL = """(column) => { const gd = document.querySelector('#features-heatmap .js-plotly-plot'), L = gd._fullLayout;
  const r = gd.getBoundingClientRect(), rows = L.yaxis._categories.length;
  return [r.left + L.xaxis._offset + L.xaxis.l2p(column), r.top + L.yaxis._offset + L.yaxis.l2p(rows - 1)]; }"""
COLUMNS = "() => document.querySelector('#features-heatmap .js-plotly-plot')._fullData[0].x"
LATENT = "() => document.querySelector('#features-latent input').value"


@pytest.fixture(scope="module")
def app(features_app, sae_folder):
    """The app on date-gpt with the SAE folder `sae` allowed (tests/app/conftest.py): one latent (not the one shown
    first) has its decoder row scaled up, so that switching it off changes the answer. -> (url, that latent)."""
    return features_app, sae_folder[1]


def test_a_link_opens_the_tab_a_click_shows_a_latent_and_switching_it_off_changes_the_output(app, browser):
    url, latent = app
    errors: list[str] = []
    context, page = new_page(browser, viewport={"width": 1280, "height": 900})
    with context:
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{url}?tab=features&s1={quote(SENTENCE)}&sae=sae")
        page.wait_for_function(DRAWN)
        page.wait_for_function(f"() => ({TEXT})('features-output-summary').includes('Nothing is switched')")
        page.wait_for_function(IDLE_JS)
        assert "explains" in page.evaluate(TEXT, "features-summary")
        first = page.evaluate(LATENT)
        assert first != str(latent)
        column = page.evaluate(COLUMNS).index(f"latent {latent}")
        page.locator("#features-heatmap").scroll_into_view_if_needed()
        x, y = page.evaluate(CELL, column)
        page.mouse.click(x, y)
        page.wait_for_function(f"() => ({LATENT})() === '{latent}'")
        page.wait_for_function(f"() => ({TEXT})('features-latent-summary').includes('Latent {latent}')")
        page.wait_for_function(IDLE_JS)
        assert page.locator("#features-examples .tok").count() > 0  # its top examples over date-gpt's dates
        before = page.evaluate(TEXT, "features-output")
        page.locator("#features-add").click()  # "This latent": off (the default)
        page.wait_for_function(f"() => document.querySelector('#features-switches input').value === '{latent}:off'")
        page.wait_for_function(f"() => ({TEXT})('features-output-summary').includes('The switches changed the output')")
        page.wait_for_function(IDLE_JS)
        after = page.evaluate(TEXT, "features-output")
        assert after != before and "switched" in after
        cells = [c.strip() for c in after.splitlines() if c.strip()]  # the table's cells, row by row
        outputs = {run: cells[cells.index(run) + 1] for run in ("baseline", "switched")}
        assert outputs["baseline"] == "2026-11-21" and outputs["switched"] != outputs["baseline"], cells
        # The switch stays, said beside the switches, until cleared; clearing gives the model's own output again.
        assert f"latent {latent} off" in page.evaluate(TEXT, "features-switch-state")
        page.locator("#features-clear").click()
        page.wait_for_function(f"() => ({TEXT})('features-switch-state').includes('none')")
        page.wait_for_function(f"() => ({TEXT})('features-output-summary').includes('Nothing is switched')")
        assert page.locator("#features-switches input").input_value() == ""
        assert "⚠️" not in page.evaluate(TEXT, "status") and "Traceback" not in page.content()
    assert errors == [], errors

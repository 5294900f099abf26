"""The glossary's page script (explorer.app.page.glossary.GLOSS_JS) in headless Chromium on the starting model
(date-translator): a text a Run writes (the Contributions tab's summary names the logit) shows each jargon word in an
<abbr> with its gloss, again after the text is written anew, without a word doubled or lost; the tabs' help carries
its glosses from the server. No console errors."""

from __future__ import annotations

import pytest

from explorer.app.page.glossary import gloss_of
from tests.app.browser import IDLE_JS, opened

pytestmark = pytest.mark.browser

TEXT = "id => { const el = document.querySelector('#' + id); return el ? el.innerText : ''; }"
GLOSSED = """([id, word]) => [...document.querySelectorAll('#' + id + ' abbr[title]')]
  .filter(a => a.innerText.toLowerCase().startsWith(word)).map(a => a.title)"""
# Whether every "logit" of the element's text is inside an <abbr>
ALL_GLOSSED = """(id) => { const el = document.querySelector('#' + id);
  const words = (el.innerText.match(/\\blogits?\\b/gi) || []).length;
  return words > 0 && el.querySelectorAll('abbr[title]').length >= words; }"""


@pytest.fixture(scope="module")
def app_url(default_app):
    return default_app


def test_a_runs_text_and_the_help_show_their_glosses(app_url, browser):
    with opened(app_url, browser) as (page, errors):
        page.locator("#views").get_by_role("tab", name="Contributions").click()
        page.locator("#contrib-steps input").fill("8")
        page.locator("#contrib-run").click()
        page.wait_for_function(f"() => ({TEXT})('contrib-summary').toLowerCase().includes('logit')")
        page.wait_for_function(IDLE_JS)
        page.wait_for_function(f"() => ({ALL_GLOSSED})('contrib-summary')")
        assert set(page.evaluate(GLOSSED, ["contrib-summary", "logit"])) == {gloss_of("logit")}
        first = page.evaluate(TEXT, "contrib-summary")
        # the text written anew (another position): glossed again, the words as the server wrote them
        page.locator("#contrib-position input").fill("2")
        page.locator("#contrib-run").click()
        page.wait_for_function(f"() => ({TEXT})('contrib-summary') !== {first!r}")
        page.wait_for_function(IDLE_JS)
        page.wait_for_function(f"() => ({ALL_GLOSSED})('contrib-summary')")
        again = page.evaluate(TEXT, "contrib-summary")
        assert again.count(again[:40]) == 1, again  # the new text once: nothing left of the old one, nothing doubled
        assert page.evaluate("() => document.querySelectorAll('#contrib-summary abbr abbr').length") == 0
        # the help under the tab's title: its <abbr>s from the server
        helps = page.evaluate("() => [...document.querySelectorAll('.tab-text abbr[title]')].map(a => a.title)")
        assert gloss_of("logit") in helps
    assert errors == [], errors

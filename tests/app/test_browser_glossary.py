"""The glossary's page script (explorer.app.page.glossary.GLOSS_JS) in headless Chromium on the starting model
(date-translator): a text a Run writes (the Contributions tab's summary names the logit) shows each jargon word in an
<abbr> with its gloss, again after the text is written anew, without a word doubled or lost; the tabs' help carries
its glosses from the server; every table header and every figure text drawn (titles, axis and colour-bar titles,
notes) that names a jargon word carries that word's gloss as its tooltip. No console errors."""

from __future__ import annotations

import pytest

from explorer.app.page.glossary import _PATTERN, GLOSSARY, GLOSS_JS, gloss_of
from tests.app.browser import IDLE_JS, opened

pytestmark = pytest.mark.browser

TEXT = "id => { const el = document.querySelector('#' + id); return el ? el.innerText : ''; }"
GLOSSED = """([id, word]) => [...document.querySelectorAll('#' + id + ' abbr[title]')]
  .filter(a => a.innerText.toLowerCase().startsWith(word)).map(a => a.title)"""
# Whether every "logit" of the element's text is inside an <abbr>
ALL_GLOSSED = """(id) => { const el = document.querySelector('#' + id);
  const words = (el.innerText.match(/\\blogits?\\b/gi) || []).length;
  return words > 0 && el.querySelectorAll('abbr[title]').length >= words; }"""


# Every table header and figure text of the page outside Markdown (which has its <abbr>s) that names a jargon word:
# [its text, its tooltip ("" for none)]
LABELS = GLOSS_JS.split("const LABELS = ", 1)[1].split(";\n", 1)[0]
LABELLED = f"""terms => {{ const re = new RegExp(terms.map(t => '(' + t + ')').join('|'), 'i');
  return [...document.querySelectorAll({LABELS})].filter(el => !el.closest('.prose') && re.test(el.textContent))
    .map(el => [el.textContent, el.namespaceURI.endsWith('svg')
      ? (([...el.parentNode.children].find(c => c.tagName === 'title') || {{}}).textContent || '') : el.title]); }}"""
TERMS = [pattern for _, pattern, _ in GLOSSARY]


def labels_glossed(page) -> list[tuple[str, str]]:
    """Every jargon label of the page with its tooltip, once each has one (the page's script glosses them at the next
    frame after they are drawn); fails naming the labels without."""
    page.wait_for_function(f"() => ({LABELLED})({TERMS!r}).every(([, tip]) => tip !== '')")
    return page.evaluate(LABELLED, TERMS)


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
        # the tab's help, folded under its form ("How to read this", tabs.base.Tab.folded_help): its <abbr>s from the
        # server, once unfolded (Gradio renders a closed accordion's content when it opens)
        page.locator("#views .tab-help").get_by_text("How to read this").click()
        page.wait_for_selector("#views .tab-help .tab-text abbr[title]")
        helps = page.evaluate("() => [...document.querySelectorAll('.tab-text abbr[title]')].map(a => a.title)")
        assert gloss_of("logit") in helps
        # the tab's table headers and its figure's texts: each jargon word's gloss is the tooltip, the text unchanged
        labels = labels_glossed(page)
        assert any(text.startswith("Direct logit attribution") for text, _ in labels), labels  # a figure's title
        assert any("its logit share" in text for text, _ in labels), labels  # a table's header
        for text, tip in labels:
            for m in _PATTERN.finditer(text):
                assert f"{m.group(0)}: {GLOSSARY[int(m.lastgroup[1:])][2]}" in tip.split("\n"), (text, tip)
    assert errors == [], errors

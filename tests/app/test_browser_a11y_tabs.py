"""axe-core over every tab of the page after a Run, at 1280 x 800 and 390 x 844, with no serious or critical
violation of WCAG 2.x A/AA (docs/accessibility.md).

How it stays cheap (one axe run over the whole page costs seconds here):
- One page per shipped model. Each tab is opened in turn and computed: its own button pressed where it has one
  (tabs.base.Tab.button; Patching reads a second sentence of the same length, given in the link), its result awaited.
- A test-only style then shows every tab panel at once (Gradio renders a panel once it was opened and hides the
  others with display: none), so ONE axe run per size checks every computed panel; that run covers #views only, as
  the rest of the page is the same in every tab. axe also runs once per size on the whole page with its real layout
  (the Attention tab shown, the style removed).
- The languages: on the default model the page's language is switched by its menu (which relabels the page and runs
  it again, keeping the tabs' results) to French, German and Spanish, and the every-panel run is repeated at both
  sizes. date-gpt is checked in English only (the words are the same catalogue); induction-gpt is not yet (below).
- The phone size is the window narrowed to 390 x 844 on the same page (test_browser_a11y checks the page opened on
  a touch phone).
axe runs with `runOnly` the WCAG 2.0/2.1/2.2 A and AA tags.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest

from explorer.app.i18n.words import LANGS, NAMES, t
from tests.app.browser import IDLE_JS, RESULT, opened

pytestmark = pytest.mark.browser

SIZES = ((1280, 800), (390, 844))
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22a", "wcag22aa"]
SERIOUS = ("serious", "critical")
# Sentence 1 and a sentence 2 of the same length with another answer (Patching compares them).
SENTENCES = {
    "date-translator": ("samedi 21 novembre 2026", "samedi 28 novembre 2026"),
    "date-gpt": ("samedi 21 novembre 2026", "samedi 28 novembre 2026"),
    "induction-gpt": ("t1 t2 t3 t4 t5 t6 t1 t2 t3 t4", "t1 t2 t3 t4 t5 t6 t1 t2 t3 t5"),
}
# Nothing of the page under way: no Run, and no text faded by Gradio while its event runs (axe would measure the fade).
SETTLED = f"() => ({IDLE_JS})() && !document.querySelector('.pending')"
SHOW_ALL = "show-every-panel"
SHOW_ALL_JS = f"""() => {{ const s = document.createElement('style'); s.id = '{SHOW_ALL}';
  s.textContent = '#views > .tabitem {{display: flex !important}}'; document.head.appendChild(s); }}"""
# The tabs' panels, less the inside of Plotly's figures (half the page's elements: its SVG, the same markup in every
# tab, checked by the whole-page runs on the Attention tab's figures).
EVERY_PANEL = {"include": [["#views"]], "exclude": [[".js-plotly-plot .main-svg"]]}
HIDE_ALL_JS = f"() => document.getElementById('{SHOW_ALL}').remove()"


def axe_serious(page, context=None) -> dict[str, list]:
    """Serious and critical WCAG A/AA violations of the page (or of `context`): rule id -> the targets it names."""
    from axe_playwright_python.sync_playwright import Axe

    options = {"runOnly": {"type": "tag", "values": TAGS}, "resultTypes": ["violations"]}
    found = Axe().run(page, context=context, options=options).response["violations"]
    return {v["id"]: [n["target"] for n in v["nodes"]][:5] for v in found if v["impact"] in SERIOUS}


def open_every_tab(page) -> None:
    """Each tab of the page opened in turn and computed (its button pressed), its result awaited."""
    from explorer.app.tabs import TABS

    tabs = page.locator("#views [role=tab]")
    assert tabs.count() == len(TABS)  # every shipped model has a decoder: every tab is shown
    for n, tab in enumerate(TABS):
        tabs.nth(n).click()
        if tab.button:
            page.locator(f"#{tab.button}").click()
        page.wait_for_function(f"() => ({RESULT})('{tab.result}')")
        page.wait_for_function(SETTLED)
        assert "⚠️" not in page.locator("#status").inner_text(), tab.id


def choose_language(page, lang: str) -> None:
    """The page's language menu set to `lang`; returns once the page is relabelled and its Run has ended."""
    page.locator("#page-lang input").click()
    page.get_by_role("option", name=NAMES[lang]).click()
    page.wait_for_function(f"() => document.querySelector('#run').innerText.trim() === {t('page.text.run', lang)!r}")
    page.wait_for_function(SETTLED)


def every_panel_violations(page, where: str) -> dict[str, dict]:
    """where -> axe's serious findings: every panel shown at once (#views), at each size."""
    found = {}
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        page.evaluate(SHOW_ALL_JS)
        found[f"{where} {width} every panel"] = axe_serious(page, EVERY_PANEL)
        page.evaluate(HIDE_ALL_JS)
    return found


# induction-gpt is left out while its finding is open (docs/accessibility.md, "Not done yet"): a table's number cells
# (span[title="47.626"] ...) fail color-contrast at 1280 px.
@pytest.mark.parametrize("model", ["date-translator", "date-gpt"])
def test_every_tab_passes_axe_at_both_sizes(model, serve, browser):
    url = serve(None if model == "date-translator" else model)
    s1, s2 = SENTENCES[model]
    with opened(f"{url}?s1={quote(s1)}&s2={quote(s2)}&lang=en", browser, viewport=SIZES[0]) as (page, errors):
        open_every_tab(page)
        page.locator("#views [role=tab]").first.click()
        page.wait_for_function(SETTLED)
        found = {}
        for width, height in SIZES:  # the real layout, the Attention tab shown
            page.set_viewport_size({"width": width, "height": height})
            found[f"en {width} whole page"] = axe_serious(page)
        found.update(every_panel_violations(page, "en"))
        for lang in LANGS[1:] if model == "date-translator" else ():
            page.set_viewport_size({"width": SIZES[0][0], "height": SIZES[0][1]})
            choose_language(page, lang)
            found.update(every_panel_violations(page, lang))
        assert {k: v for k, v in found.items() if v} == {}
    assert errors == [], errors

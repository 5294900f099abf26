"""axe-core over every tab of the page after a Run, on each shipped model, in each language at 1280 x 800 and
390 x 844 (3 models x 4 languages x 2 sizes: 24 cells), with no serious or critical violation of WCAG 2.x A/AA
(docs/accessibility.md).

One page per model (date-translator, date-gpt, induction-gpt), not per cell:
- Each tab is opened in turn and computed: its own button pressed where it has one (tabs.base.Tab.button; Patching
  reads a second sentence of the same length, given in the link), its result awaited.
- The real layout (the Attention tab shown, the other panels hidden as Gradio hides them) is checked once per size:
  in English at 1280 x 800, in German at 390 x 844 (its long words on a phone).
- A test-only style then shows every tab panel at once (Gradio renders a panel once it was opened and hides the
  others with display: none), so ONE axe run per cell checks the whole page: the title row, the controls, the results
  bar and every computed panel, every rule of the WCAG A/AA tags; color-contrast in a third of the cells (CONTRAST:
  each (language, size) on one model, both sizes on every model), for the budget below.
- The cells follow each other with the fewest changes: the page's own language menu (it relabels the page and runs it
  again; the tabs keep their results) three times, the window's size four times: en 1280, en 390, de 390, de 1280,
  fr 1280, fr 390, es 390, es 1280. A language's cell runs once its Run button and its first tab carry that
  language's words and the page has settled; each cell's findings are kept under its name and all are asserted at the
  end, every failing cell named.
- After the last cell, the first panel's "Table" switches are opened (their tables are built only then) and axe runs
  over those tables alone, color-contrast included.
- The phone size is the same window narrowed to 390 x 844 (test_browser_a11y checks a page opened on a touch phone).
- Gradio fades an output to 20% while an event that writes it runs (the Compare tab's check after each Run writes its
  hidden summary); axe would measure that fade, so the test-only style turns it off (the settled page has none).

Where the time goes (docs/accessibility.md has the numbers; induction-gpt with color-contrast in all 8 cells, 152 s at
load 10-11 on 2 cores): the page 10 s, computing its 15 tabs 22 s, the 8 axe runs 70 s and the 2 real-layout runs 5 s,
3 language switches (a Run each) 20 s, 4 resizes 19 s. color-contrast is about 70% of an axe run (some 1,150 visible
texts; 12-16 s a run with it, 2.5-6.6 s without, at load 11-13), hence CONTRAST. Two things made it affordable:
- The Plotly SVG of the tabs after the first (about 10,000 of the page's 21,000 elements; the same markup as the
  Attention tab's figures, which are checked) is taken out of the page once the tabs are computed: axe no longer walks
  it, and a change of the window's size no longer makes Plotly redraw some 80 hidden-then-shown figures (10-14 s per
  resize on a loaded machine; 1-2 s without). Each figure's box keeps its size (Plotly sizes its container).
- A figure's numbers (the "Table" switch, a closed <details>) are built when it is opened (page.figure_alt), not with
  every figure: about 8,000 elements no one sees until then.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from urllib.parse import quote

import pytest

from explorer.app.i18n.words import LANGS, NAMES, t
from tests.app.browser import RESULT, SETTLED_JS, opened

pytestmark = pytest.mark.browser

MODELS = ("date-translator", "date-gpt", "induction-gpt")
SIZES = {1280: (1280, 800), 390: (390, 844)}
# The cells of one page, in order: each step changes the language or the size, never both (3 switches, 4 resizes).
CELLS = (("en", 1280), ("en", 390), ("de", 390), ("de", 1280), ("fr", 1280), ("fr", 390), ("es", 390), ("es", 1280))
REAL = (("en", 1280), ("de", 390))  # the real layout (one panel shown), once per size: after that cell's own run
# The cells whose run includes color-contrast (70% of a run's time), per model: each (language, size) on exactly one
# model, both sizes on each model. The colours are the page's CSS (and a model's own, such as the Features tab's shaded
# tokens) whatever the language; a language changes the words and their layout, which every cell checks with every
# other rule.
CONTRAST = {
    "date-translator": {("en", 1280), ("de", 390), ("fr", 1280)},
    "date-gpt": {("en", 390), ("de", 1280), ("es", 390)},
    "induction-gpt": {("fr", 390), ("es", 1280)},
}
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22a", "wcag22aa"]
# Sentence 1 and a sentence 2 of the same length with another answer (Patching compares them).
SENTENCES = {
    "date-translator": ("samedi 21 novembre 2026", "samedi 28 novembre 2026"),
    "date-gpt": ("samedi 21 novembre 2026", "samedi 28 novembre 2026"),
    "induction-gpt": ("t1 t2 t3 t4 t5 t6 t1 t2 t3 t4", "t1 t2 t3 t4 t5 t6 t1 t2 t3 t5"),
}
SHOW_ALL = "show-every-panel"
SHOW_ALL_JS = f"""() => {{ const s = document.createElement('style'); s.id = '{SHOW_ALL}';
  s.textContent = '#views > .tabitem {{display: flex !important}} .pending {{opacity: 1 !important}}';
  document.head.appendChild(s); }}"""
HTML_LANG = "() => document.documentElement.lang"
REAL_JS = f"() => document.getElementById('{SHOW_ALL}').remove()"
# The Plotly SVG of every tab after the first, out of the page (a figure redrawn since, e.g. by the Run a language
# switch makes, is taken out again): how many were taken.
LIGHTEN_JS = """() => { const svg = document.querySelectorAll('#views > .tabitem ~ .tabitem .js-plotly-plot .main-svg');
  svg.forEach(s => s.remove()); return svg.length; }"""
# axe, injected once per page; its answer: the serious and critical violations, rule id -> up to 5 targets.
AXE_RUN = """async (options) => {
  const found = (await axe.run(document, options)).violations;
  return Object.fromEntries(found.filter(v => v.impact === 'serious' || v.impact === 'critical')
                            .map(v => [v.id, v.nodes.slice(0, 5).map(n => [n.target, (n.failureSummary || '').slice(0, 200)])])); }"""
OPTIONS = {"runOnly": {"type": "tag", "values": TAGS}, "resultTypes": ["violations"]}
BUT_CONTRAST = {**OPTIONS, "rules": {"color-contrast": {"enabled": False}}}


# Every figure's "Table" switch of the first panel opened (its tables built then): how many opened.
OPEN_TABLES_JS = """() => { const boxes = [...document.querySelector('#views > .tabitem').querySelectorAll('details.fig-alt')];
  boxes.forEach(d => { d.setAttribute('data-axe-tables', ''); d.open = true; }); return boxes.length; }"""
TABLES_BUILT = "() => document.querySelectorAll('details[data-axe-tables] table').length"
# axe over the opened tables only (their contrast included): the rest of the page was checked in the cell's run.
AXE_TABLES = AXE_RUN.replace("axe.run(document, options)", "axe.run({include: [['details[data-axe-tables]']]}, options)")


def axe_serious(page, contrast: bool = True) -> dict[str, list]:
    """Serious and critical WCAG A/AA violations of the whole page (color-contrast only if `contrast`): rule id -> the
    targets it names."""
    if not page.evaluate("() => typeof axe === 'object'"):
        import axe_playwright_python

        page.evaluate(Path(axe_playwright_python.__file__).with_name("axe.min.js").read_text())
    # From the page's top: scrolled, the tab row passes under the pinned results bar, as content under a sticky bar
    # does, and axe's target-size counts a tab button half under it as too small (where a click left the page).
    page.evaluate("() => window.scrollTo(0, 0)")
    return page.evaluate(AXE_RUN, OPTIONS if contrast else BUT_CONTRAST)


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
        page.wait_for_function(SETTLED_JS)
        assert "⚠️" not in page.locator("#status").inner_text(), tab.id


def choose_language(page, lang: str) -> None:
    """The page's language menu set to `lang`; returns once the Run button and the first tab carry that language's
    words and the page's Run has ended."""
    from explorer.app.i18n.relabel import translated
    from explorer.app.tabs import TABS

    page.locator("#page-lang input").click()
    page.get_by_role("option", name=NAMES[lang]).click()
    words = [t("page.text.run", lang), translated(TABS[0].title, lang)]
    page.wait_for_function("""([run, tab]) => document.querySelector('#run').innerText.trim() === run &&
      document.querySelector('#views [role=tab]').innerText.trim() === tab""", arg=words)
    page.wait_for_function(SETTLED_JS)
    assert page.evaluate(HTML_LANG) == lang  # a screen reader reads the page in its language (WCAG 3.1.1)


def resize(page, width: int) -> None:
    page.set_viewport_size({"width": SIZES[width][0], "height": SIZES[width][1]})
    page.wait_for_function(f"() => window.innerWidth === {width}")
    page.wait_for_function(SETTLED_JS)


def test_the_cells_cover_every_language_at_both_sizes():
    assert sorted(CELLS) == sorted((lang, width) for lang in LANGS for width in SIZES)
    assert all(sum(a != b for a, b in zip(one, two)) == 1 for one, two in pairwise(CELLS))  # one change a step
    assert set(REAL) <= set(CELLS) and {width for _, width in REAL} == set(SIZES)
    assert sorted(CONTRAST) == sorted(MODELS) and sorted(c for cells in CONTRAST.values() for c in cells) == sorted(CELLS)
    assert all({width for _, width in cells} == set(SIZES) for cells in CONTRAST.values())


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.long
def test_every_tab_passes_axe_in_every_language_at_both_sizes(model, serve, browser):
    url = serve(None if model == "date-translator" else model)
    s1, s2 = SENTENCES[model]
    found: dict[str, dict] = {}
    with opened(f"{url}?s1={quote(s1)}&s2={quote(s2)}&lang=en", browser, viewport=SIZES[1280]) as (page, errors):
        open_every_tab(page)
        page.locator("#views [role=tab]").first.click()  # the first panel's figures as the page shows them
        page.wait_for_function(SETTLED_JS)
        assert page.evaluate(LIGHTEN_JS) > 0
        assert page.evaluate(HTML_LANG) == "en"
        page.evaluate(SHOW_ALL_JS)
        lang, width = CELLS[0]
        for cell in CELLS:
            if cell[0] != lang:
                choose_language(page, cell[0])
            page.evaluate(LIGHTEN_JS)
            if cell[1] != width:
                resize(page, cell[1])
            lang, width = cell
            contrast = cell in CONTRAST[model]
            found[f"{lang} {width}" + ("" if contrast else " (all but color-contrast)")] = axe_serious(page, contrast)
            if cell in REAL:
                page.evaluate(REAL_JS)
                page.wait_for_function(SETTLED_JS)
                found[f"{lang} {width}, real layout"] = axe_serious(page)
                page.evaluate(SHOW_ALL_JS)
        # The first panel's number tables, opened, in the last cell's language and size (built when opened, they are
        # in no cell's run): their headers, captions and scroll boxes
        assert page.evaluate(OPEN_TABLES_JS) > 0
        page.wait_for_function(f"() => ({TABLES_BUILT})() > 0")
        found[f"{lang} {width}, the first panel's tables opened"] = page.evaluate(AXE_TABLES, OPTIONS)
    assert len(found) == len(CELLS) + len(REAL) + 1
    assert {cell: rules for cell, rules in found.items() if rules} == {}, model  # the failing cells, each named
    assert errors == [], errors

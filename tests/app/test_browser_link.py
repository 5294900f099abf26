"""A link that reopens the view, in headless Chromium on the starting model (date-translator): a link restores a view
whose figures equal those of the same settings made by hand (sentences, attention kind, layer, head, sentence, heads
switched off, masks, a tab); "Copy link" on that hand-made page gives a URL that, opened, gives the same figures; a
link with invalid values names them in the notice line and restores the rest. No console errors."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

import pytest

from tests.app.browser import FIRST_RUN_JS, IDLE_JS, RESULT, TAB_LINK_EXTRA, heads_on, record_runs
from tests.hang import HANG_MS

pytestmark = pytest.mark.browser

S1, S2 = "3 May 2024", "lundi 3 mars 2025"
# The view: decoder self-attention L1 H2 of sentence 2, two heads off, no padding mask, "no self" custom mask, on the
# All heads tab; the same settings as QUERY, made by hand in `by_hand`.
QUERY = (f"model=date-translator&s1={quote(S1)}&s2={quote(S2)}&tab=overview&kind=decoder&layer=1&head=2&sentence=2"
         "&measure=values&off=decoder:L0H1;cross:L1H0&padding=0&mask=no%20self")
SNAPSHOT = """id => {
  const gd = document.querySelector('#' + id + ' .js-plotly-plot');
  if (!gd || !gd.data) return null;
  return JSON.stringify([gd.layout.title && gd.layout.title.text, gd.data.map(t => [t.type, t.z, t.x, t.y])]);
}"""
TEXT = "id => { const el = document.querySelector('#' + id); return el ? el.innerText : ''; }"
LINK_URL = "() => { const b = document.querySelector('#link-url input, #link-url textarea'); return b ? b.value : ''; }"


def the_view(run) -> bool:
    """A recorded Run with QUERY's settings."""
    v, t = run.view, run.toggles
    return (run.text1, run.text2, v.kind, v.layer, v.head, v.sentence, v.measure, t.padding, t.causal, t.custom) == \
        (S1, S2, "decoder", 1, 2, 2, "values", False, True, "no self") and \
        (0, 1) not in heads_on(run, "decoder") and (1, 0) not in heads_on(run, "cross") and \
        len(heads_on(run, "decoder")) == 7 and len(heads_on(run, "cross")) == 7 and len(heads_on(run, "encoder")) == 8


@pytest.fixture(scope="module")
def app_url(default_app):
    return default_app


class Pages:
    """Pages of one fresh context of the session's Chromium; every page's console and page errors collected."""

    def __init__(self, browser):
        self.browser = browser
        self.context = browser.new_context(viewport={"width": 1280, "height": 900},
                                           permissions=["clipboard-read", "clipboard-write"])
        self.context.set_default_timeout(HANG_MS)  # the hang guard only
        self.errors: list[str] = []

    def open(self, url: str, first_run: bool = True):
        """`url` once the Run the page makes on load has ended (`first_run`: judged by the Attention tab's output, which
        a page opened on another tab does not lay out)."""
        page = self.context.new_page()
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.goto(url)
        if first_run:
            page.wait_for_function(FIRST_RUN_JS)
        return page


@pytest.fixture
def chromium(browser):
    pages = Pages(browser)
    try:
        yield pages
    finally:
        pages.context.close()
    assert pages.errors == [], pages.errors


def figures(page, tab: str, plots: tuple[str, ...]) -> dict[str, str]:
    """The plots of `tab` once it is open and drawn."""
    page.locator("#views").get_by_role("tab", name=tab, exact=True).click()
    for plot in plots:
        page.wait_for_function(f"() => ({SNAPSHOT})('{plot}') !== null")
    page.wait_for_function(IDLE_JS)
    return {plot: page.evaluate(SNAPSHOT, plot) for plot in plots}


OVERVIEW = ("overview-plot", "large-plot")
ATTENTION = ("head-plot", "mask-plot", "baseline-plot", "diff-plot")


def view_of(page) -> dict:
    """The figures of the All heads and Attention tabs, and the output table."""
    return {"overview": figures(page, "All heads", OVERVIEW),
            "attention": figures(page, "Attention & output", ATTENTION), "output": page.evaluate(TEXT, "output-table")}


def by_hand(page, runs) -> None:
    """QUERY's settings made with the page's controls, each change a Run."""

    def step(action: Callable[[], None], finished: Callable, what: str) -> None:
        since = runs.mark()
        action()
        runs.wait_for(finished, what, since)
        page.wait_for_function(IDLE_JS)

    def choose(dropdown: str, option: str) -> Callable[[], None]:
        return lambda: (page.locator(f"#{dropdown} input").click(),
                        page.get_by_role("option", name=option, exact=True).click())

    def enter(box: str, text: str) -> Callable[[], None]:
        field = page.locator(f"#{box} textarea")
        return lambda: (field.fill(text), field.press("Enter"))

    step(enter("text1", S1), lambda r: r.text1 == S1, "of sentence 1")
    step(enter("text2", S2), lambda r: r.text2 == S2, "of sentence 2")
    step(choose("kind", "decoder"), lambda r: r.view.kind == "decoder", "on the decoder")
    step(choose("layer", "1"), lambda r: r.view.layer == 1, "on layer 1")
    step(choose("head", "2"), lambda r: r.view.head == 2, "on head 2")
    step(choose("sentence", "2"), lambda r: r.view.sentence == 2, "on sentence 2")
    step(lambda: page.locator("#dec-heads").get_by_label("L0 H1").uncheck(),
         lambda r: (0, 1) not in heads_on(r, "decoder"), "with decoder L0 H1 off")
    step(lambda: page.locator("#cross-heads").get_by_label("L1 H0").uncheck(),
         lambda r: (1, 0) not in heads_on(r, "cross"), "with cross L1 H0 off")
    step(lambda: page.locator("#measure").get_by_label("weight × |value written|").check(),
         lambda r: r.view.measure == "values", "of the values measure")
    step(lambda: page.locator("#padding input").uncheck(), lambda r: not r.toggles.padding, "without padding")
    step(lambda: page.locator("#custom-mask").get_by_label("no self").check(), the_view, "with QUERY's settings")


@pytest.mark.long
def test_a_link_restores_the_view_made_by_hand_and_copy_link_gives_it_back(app_url, chromium, monkeypatch):
    runs = record_runs(monkeypatch)
    # The linked page computes while the page to set by hand loads (two page loads overlapped); that page's first Run
    # (the page's defaults) cannot pass for the link's, and its own steps start once the link's view is recorded.
    linked = chromium.open(f"{app_url}?{QUERY}", first_run=False)
    hand = chromium.open(app_url)
    runs.wait_for(the_view, "of the link")
    linked.wait_for_function(IDLE_JS)
    assert linked.evaluate(TEXT, "link-notice") == ""  # everything taken
    assert linked.locator("#views [role=tab][aria-selected=true]").inner_text() == "All heads"
    assert linked.locator("#text1 textarea").input_value() == S1
    from_link = view_of(linked)

    by_hand(hand, runs)
    made = view_of(hand)
    assert made == from_link
    assert all(v is not None for tab in ("overview", "attention") for v in made[tab].values())

    hand.locator("#views").get_by_role("tab", name="All heads").click()  # the tab a copied link opens on
    hand.wait_for_function(IDLE_JS)
    hand.locator("#copy-link").click()
    url = hand.wait_for_function(f"() => ({LINK_URL})() || null").json_value()
    assert url.startswith(app_url.rstrip("/") + "/?model=date-translator&s1=3%20May%202024&"), url
    assert hand.evaluate("() => navigator.clipboard.readText()") == url  # written before the box shows it
    for part in ("tab=overview", "measure=values", "off=decoder:L0H1;cross:L1H0", "padding=0", "mask=no%20self"):
        assert part in url, (part, url)
    copied = chromium.open(url)
    runs.wait_for(the_view, "of the copied link")
    copied.wait_for_function(IDLE_JS)
    assert copied.evaluate(TEXT, "link-notice") == ""
    assert view_of(copied) == made


def test_an_invalid_value_is_named_and_the_rest_restored(app_url, chromium, monkeypatch):
    runs = record_runs(monkeypatch)
    query = (f"s1={quote(S1)}&kind=decoder&layer=7&head=zz&%3Cb%3Ecolour%3C/b%3E=red&model=..%2F..%2Fetc"
             "&padding=0&tab=weights")
    page = chromium.open(f"{app_url}?{query}")
    run = runs.wait_for(lambda r: r.text1 == S1 and r.view.kind == "decoder", "of the link")
    assert (run.view.layer, run.view.head, run.toggles.padding) == (0, 0, False)
    page.wait_for_function(IDLE_JS)
    notice = page.evaluate(TEXT, "link-notice")
    for part in ("head 'zz' is not a whole number", "unknown key '<b>colour</b>'", "model '../../etc' cannot be opened",
                 "tab 'weights' is not a tab of this page", "layer 7: the decoder attention has layers 0 to 1",
                 "The rest of the link was restored."):
        assert part in notice, (part, notice)
    assert "\n" not in notice.strip()
    assert page.evaluate("() => document.querySelectorAll('#link-notice b').length") == 0  # HTML shown as text
    assert page.locator("#text1 textarea").input_value() == S1
    assert page.locator("#kind input").input_value() == "decoder"
    assert not page.locator("#padding input").is_checked()
    assert "date-translator" in page.evaluate(TEXT, "headline")  # the page's own model


# One tab of each way a linked tab gets its result: drawn by the page's first Run (overview), its own button pressed
# by the page load (head), the same with a key of its own (patching: a sentence 2 with another answer), computed on
# opening (features). Every tab's link is checked without a browser (test_events_link: selected, no notice, its button
# pressed), and every tab is computed by its button in the browser by test_browser_a11y_tabs.
LINKED = ("overview", "head", "patching", "features")


def test_the_linked_tabs_cover_each_way_a_tab_gets_its_result():
    from explorer.app.tabs import TABS

    kinds = {(bool(t.button), t.opens_computed) for t in TABS if t.id in LINKED}
    assert kinds == {(False, False), (True, False), (True, True)} and set(LINKED) <= {t.id for t in TABS}


def test_a_link_to_a_tab_opens_it_computed(app_url, chromium):
    """?tab=<id> for one tab of each kind (LINKED): the tab is shown and its result is there (tabs a Run draws, and
    tabs with their own button: as if the button had been pressed), with no warning on the status line. One page at
    a time, in one context (each its own Gradio session): four at once hung both tries of one idle fresh-clone run
    (2026-11-29, 12:40) with the server idle, and two at once one try at load 12 (20:00), not traced (docs/tests.md)."""
    from explorer.app.tabs import TABS

    for tab in (t for t in TABS if t.id in LINKED):
        page = chromium.open(f"{app_url}?tab={tab.id}{TAB_LINK_EXTRA.get(tab.id, '')}", first_run=False)
        page.wait_for_function(f"() => ({RESULT})('{tab.result}')")
        page.wait_for_function(IDLE_JS)
        selected = page.locator("#views [role=tab][aria-selected=true]").inner_text()
        assert selected == tab.title, (tab.id, selected)
        status = page.evaluate(TEXT, "status")
        assert "⚠️" not in status and page.evaluate(TEXT, "link-notice") == "", (tab.id, status)
        page.close()

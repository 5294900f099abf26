"""The lessons and the Download button in headless Chromium: every lesson opened by its link (`?lesson=<id>`) shows
its panel in view (a column beside the results on a wide screen, covering none of them; folded to its buttons on
demand), and walking its steps by hand (a tab opened, a mask or head switched, a sentence typed) turns
each step's check from "✗ not yet" to "✓" on the learner's own Run; the Lessons menu (named "Lessons" for a screen
reader, its title never cut) opens a lesson, Copy link keeps it and its step, Leave closes it; on a phone the panel
opens folded to its title and step (at most 120 px) and does not cover the output. The downloaded file, opened from
disk with the network blocked, draws its figures and shows the settings.

The checks themselves, on real Runs both ways, without a browser: tests/app/test_lessons.py."""

from __future__ import annotations

import pytest

from explorer.app.page.lessons import LESSONS
from tests.app import test_browser_link as link_tests
from tests.app.browser import IDLE_JS
from tests.app.test_browser_link import LINK_URL, TEXT

pytestmark = pytest.mark.browser
chromium = link_tests.chromium  # the link tests' page fixture: pages with their console errors checked


@pytest.fixture(scope="module")
def app_url(default_app):
    return default_app


def untick(group: str, *heads: str):
    return [("untick", f"#{group}", h) for h in heads]


# What a learner does for each step, by hand on the page (None: the step's check holds as the lesson opens, or it
# has no check): open a tab, (un)tick a mask or a head, type sentence 1 and press Run, wait for what a tab's button
# wrote (a link presses it), press a tab's button.
WALK = {
    "positions": [None, None, [("type", "mars lundi 2025 3", None)]],
    "causal-mask": [None, [("untick", "#causal", None)], [("tick", "#causal", None)]],
    "month-heads": [None, untick("cross-heads", "L1 H3"), untick("cross-heads", "L0 H1"),
                    [("tick", "#cross-heads", "L1 H3")]],
    "induction": [None, None, untick("dec-heads", "L1 H0", "L1 H1", "L1 H2", "L1 H3")],
    "contributions": [None, None, untick("cross-heads", "L1 H3")],
    "compare": [None, None, [("type", "1 gennaio 2000", None)]],
    "month-circuit": [None, None, [("wait", "#circuit-summary", "faithfulness"), ("click", "#circuit-keep", None)]],
}
PANEL = "() => {{ const t = document.querySelector('#lesson-text'); return !!t && t.innerText.includes({!r}) && " \
        "/{}/.test(t.innerText); }}"


def panel_says(page, step: str, mark: str) -> None:
    """The panel shows `step` ("Step 2 of 4") with a verdict starting with `mark` (✓, ✗, or any line)."""
    page.wait_for_function(PANEL.format(step, mark))


def act(page, action) -> None:
    what, where, label = action
    if what == "click":
        page.locator(where).click()
    elif what == "wait":  # a tab's own computation (not a Run) has written its result
        page.wait_for_function("([s, w]) => (document.querySelector(s) || {innerText: ''}).innerText.includes(w)",
                               arg=[where, label])
    elif what == "type":
        page.locator("#text1 textarea").fill(where)
        page.locator("#run").click()
    else:
        box = page.locator(where).get_by_label(label) if label else page.locator(f"{where} input")
        box.uncheck() if what == "untick" else box.check()


RECT = "s => document.querySelector(s).getBoundingClientRect().toJSON()"
UNCUT = "s => { const e = document.querySelector(s); return e.clientWidth > 0 && e.scrollWidth <= e.clientWidth; }"
HEIGHT = "() => document.querySelector('#lesson-panel').getBoundingClientRect().height"
WHOLE = ("s => { const e = document.querySelector(s); "
         "return e.clientHeight > 0 && e.scrollHeight <= e.clientHeight + 1; }")


def apart(page, *selectors: str) -> bool:
    """Whether the lesson panel and each of `selectors` (the output bar, the tabs) share no pixel on the screen."""
    panel = page.evaluate(RECT, "#lesson-panel")
    return all(r["right"] <= panel["left"] or r["left"] >= panel["right"] or r["bottom"] <= panel["top"]
               or r["top"] >= panel["bottom"] for r in (page.evaluate(RECT, s) for s in selectors))


def in_view(page, selector: str) -> bool:
    return page.evaluate("""s => { const r = document.querySelector(s).getBoundingClientRect();
      return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight + 1; }""", selector)


# The forms beside the panel (1280 px): a lesson's tab squeezed into what the panel leaves. What is cut: a block's
# label on more than one line, a choice wider than its box, a menu's value running under its arrow.
FORMS = {"induction": "#role", "month-circuit": "#circuit-task, #circuit-generated, #circuit-held, #circuit-fresh, "
                                                 "#circuit-method, #circuit-metric, #circuit-edges"}
CUT = """sel => [...document.querySelectorAll(sel)].flatMap(b => {
  const out = [], title = b.querySelector('[data-testid="block-info"]');
  if (!title || title.getBoundingClientRect().height > 30) out.push(b.id + ': its label on several lines');
  for (const l of b.querySelectorAll('label'))
    if (l.scrollWidth > l.clientWidth + 1) out.push(b.id + ': ' + l.innerText);
  const input = b.querySelector('input[role=combobox]'), arrow = b.querySelector('.icon-wrap');
  if (input && arrow) {
    const ctx = document.createElement('canvas').getContext('2d'); ctx.font = getComputedStyle(input).font;
    const end = input.getBoundingClientRect().left + parseFloat(getComputedStyle(input).paddingLeft)
      + ctx.measureText(input.value).width;
    if (end > arrow.getBoundingClientRect().left) out.push(b.id + ': ' + input.value + ' under the arrow');
  }
  return out; })"""
WALKED = [x for x in LESSONS if x.id in WALK]  # a lesson of one unchecked step (old format) has nothing to walk


def test_every_checked_lesson_is_walked():
    assert {x.id for x in LESSONS if any(s.check for s in x.steps)} <= set(WALK)


@pytest.mark.parametrize("lesson", WALKED, ids=[x.id for x in WALKED])
def test_walk_every_lesson_with_its_checks(app_url, chromium, lesson):
    page = chromium.open(f"{app_url}?lesson={lesson.id}", first_run=False)
    n = len(lesson.steps)
    for k, (step, actions) in enumerate(zip(lesson.steps, WALK[lesson.id]), 1):
        where = f"Step {k} of {n}."
        if step.check is None:
            panel_says(page, where, "Nothing to check|last step")
        elif actions is None:
            panel_says(page, where, "✓ " + step.check.passed)
        else:
            panel_says(page, where, "✗ not yet: ")  # before the learner acts: computed, not written in advance
            for action in actions:  # one at a time, as a learner does: each change's Run ends before the next
                page.wait_for_function(IDLE_JS)
                act(page, action)
            panel_says(page, where, "✓ " + step.check.passed)
        page.wait_for_function(IDLE_JS)
        assert in_view(page, "#lesson-panel"), (lesson.id, k)
        assert apart(page, "#results-bar", "#views"), (lesson.id, k)  # a column beside the results, over none
        if k < n:
            page.locator("#lesson-next").click()
    if lesson.id in FORMS:
        assert page.evaluate(CUT, FORMS[lesson.id]) == []
    page.evaluate("() => window.scrollTo(0, document.body.scrollHeight / 2)")  # docked while the page scrolls
    assert in_view(page, "#lesson-panel")
    assert page.evaluate(TEXT, "link-notice") == ""


@pytest.mark.long
def test_the_menu_opens_a_lesson_copy_link_keeps_it_and_leave_closes_it(app_url, chromium):
    page = chromium.open(app_url)
    page.wait_for_url(lambda url: "s1=" in url)  # the address followed the first Run: no event left to cut short
    menu = page.get_by_role("combobox", name="Lessons")  # its accessible name, not "Dropdown"
    menu.click()
    lesson = next(x for x in LESSONS if x.id == "month-heads")
    page.get_by_role("option", name=f"3. {lesson.title}", exact=True).click()
    page.wait_for_url(lambda url: "lesson=month-heads" in url)  # then the address follows the view
    panel_says(page, "Step 1 of 4.", "✓ the model answers 2025-03-03")
    assert page.locator("#text1 textarea").input_value() == "lundi 3 mars 2025"
    assert page.get_by_role("combobox", name="Lessons").input_value() == f"3. {lesson.title}"
    assert page.evaluate(UNCUT, "#lessons input"), "the Lessons menu's title is cut beside the panel"
    page.locator("#lesson-next").click()
    panel_says(page, "Step 2 of 4.", "✗ not yet")
    page.locator("#lesson-prev").click()
    panel_says(page, "Step 1 of 4.", "✓")
    page.locator("#lesson-next").click()
    panel_says(page, "Step 2 of 4.", "✗")
    page.wait_for_url(lambda url: url.endswith("&lesson=month-heads&step=2"))  # the address follows the step
    wide = page.evaluate(RECT, "#results-bar")["width"]
    page.locator("#lesson-fold").click()  # folded to its buttons: the results take the room back, still uncovered
    page.wait_for_function(f"() => document.querySelector('#results-bar').getBoundingClientRect().width > {wide}")
    assert apart(page, "#results-bar", "#views") and not page.locator("#lesson-text").is_visible()
    page.locator("#lesson-unfold").click()
    page.wait_for_function(f"() => document.querySelector('#results-bar').getBoundingClientRect().width === {wide}")
    page.wait_for_function(IDLE_JS)
    page.locator("#copy-link").click()
    url = page.wait_for_function(f"() => ({LINK_URL})() || null").json_value()
    assert url.endswith("&lesson=month-heads&step=2") and "s1=lundi%203%20mars%202025" in url, url
    copied = chromium.open(url, first_run=False)
    panel_says(copied, "Step 2 of 4.", "✗ not yet: .*your Run's output")  # checked on its own first Run
    copied.wait_for_function(IDLE_JS)
    page.locator("#lesson-leave").click()
    page.wait_for_function("() => !document.querySelector('#lesson-panel')"
                           " || document.querySelector('#lesson-panel').getBoundingClientRect().height === 0")
    assert page.get_by_role("combobox", name="Lessons").input_value() == "Lessons …"
    page.wait_for_url(lambda url: "lesson=" not in url)  # and the address leaves the lesson too
    # Choosing a lesson navigates the page: a request of the page it leaves, still streaming, is aborted then (the
    # browser's doing, not the app's); any other error still fails the test.
    aborted = ("AbortError: signal is aborted without reason", "Unexpected error Connection errored out")
    chromium.errors[:] = [e for e in chromium.errors if not e.startswith(aborted)]


def test_on_a_phone_the_panel_is_folded_in_view_and_leaves_the_output_uncovered(app_url, browser):
    """Folded as it opens (its buttons, the step's first sentence and the verdict, whole: at most 120 px of 844),
    unfolded and folded on demand; the menu's title uncut."""
    from tests.app.browser import new_page

    context, page = new_page(browser, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        page.goto(f"{app_url}?lesson=month-heads")
        panel_says(page, "Step 1 of 4.", "✓")
        page.wait_for_function(IDLE_JS)
        page.evaluate("() => window.scrollTo(0, 0)")
        assert in_view(page, "#lesson-panel") and in_view(page, "#output-tokens")
        panel, output = (page.evaluate("s => document.querySelector(s).getBoundingClientRect().toJSON()", s)
                         for s in ("#lesson-panel", "#output-tokens"))
        assert panel["top"] >= output["bottom"]  # under the output, not over it
        assert panel["height"] <= 120 and page.locator("#lesson-text").is_visible(), panel
        # the step's first sentence and the verdict whole: nothing cut nor scrolled inside (the rest on Unfold)
        assert page.evaluate(WHOLE, "#lesson-text") and page.evaluate(WHOLE, "#lesson-panel")
        assert "✓" in page.evaluate("() => document.querySelector('#lesson-text').innerText")
        assert not page.locator("#lesson-about").is_visible() and page.evaluate(UNCUT, "#lessons input")
        page.locator("#lesson-unfold").click()  # the goal and what to notice too, at most a third of the screen
        page.wait_for_function(f"() => ({HEIGHT})() > 120")
        assert page.locator("#lesson-about").is_visible() and page.evaluate(HEIGHT) <= 0.34 * 844
        page.locator("#lesson-fold").click()
        page.wait_for_function(f"() => ({HEIGHT})() <= 120")
    finally:
        context.close()


def test_the_downloaded_view_opens_offline(app_url, chromium, tmp_path):
    page = chromium.open(app_url)
    with page.expect_download() as info:
        page.locator("#download-view").click()
    download = info.value
    assert download.suggested_filename.startswith("transformer-explorer-attention-")
    path = tmp_path / "view.html"
    download.save_as(path)
    offline = chromium.browser.new_context()
    blocked: list[str] = []

    def block(route):
        if route.request.url.startswith(("http://", "https://")):
            blocked.append(route.request.url)
            return route.abort()
        return route.continue_()

    offline.route("**/*", block)
    view = offline.new_page()
    errors: list[str] = []
    view.on("pageerror", lambda e: errors.append(str(e)))
    view.goto(path.as_uri())
    n = view.evaluate("() => document.querySelectorAll('script.figure-data').length")
    view.wait_for_function(f"() => document.querySelectorAll('.js-plotly-plot svg.main-svg').length >= {n}")
    assert n >= 2 and errors == [] and blocked == []  # the heatmaps; "no toggle" and "greedy" are lines of text
    assert view.locator("#tables caption").all_inner_texts() == ["Output: baseline vs toggled", "Tokens and ids"]
    settings = view.locator("#settings").inner_text()
    assert "date-translator" in settings and "samedi 21 novembre 2026" in settings and "No toggle" in settings
    assert view.locator("#view-link").get_attribute("href").startswith(app_url.rstrip("/") + "/?model=date-translator")
    offline.close()

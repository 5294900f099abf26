"""The keyboard alone does a teacher's path (issue 42, docs/accessibility.md): only keys are pressed (Tab, Shift+Tab,
Enter, Space, arrows, typing) to type a sentence and Run, switch a head off, ask "why this token?" of an output token,
open Inside a head and choose its query, and copy the link; the copied link holds that view. After every key the
focus is on something shown in the window with a visible indicator (an outline or a box shadow), never on the page's
body (focus lost), and each control is reached by a bounded number of Tab presses in the page's reading order.

What it found (docs/accessibility.md): right after a Run, Tab from Run sometimes landed on the status line and the
focus then fell to the body. Gradio's blocks are `overflow: auto`, Chromium makes a box that scrolls a Tab stop, and a
follow-up event's timer overflowed the line for a moment; the page's CSS (page.a11y) keeps the line from scrolling.
The race is checked twice: Tab then Shift+Tab right after the Run, and the line's overflow itself."""

from __future__ import annotations

import pytest

from explorer.app.i18n.words import t
from tests.app.browser import IDLE_JS, SETTLED_JS, heads_on, opened, record_runs

pytestmark = pytest.mark.browser

SENTENCE = "3 May 2024"
# The focused element: [shown in the window, visible indicator, a description for messages].
FOCUS = """() => {
  const e = document.activeElement;
  if (!e || e === document.body) return [false, false, 'body'];
  const s = getComputedStyle(e), r = e.getBoundingClientRect();
  const shown = r.width > 0 && r.height > 0 && r.bottom > 0 && r.right > 0 && r.top < innerHeight
    && r.left < innerWidth && s.visibility !== 'hidden';
  const ring = (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== 'none';
  const where = e.closest('[id]');
  const text = (e.innerText || e.value || '').trim().slice(0, 30);
  return [shown, ring, e.tagName + ' ' + text + ' in #' + (where ? where.id : '')];
}"""
TEXT = "id => document.getElementById(id).innerText"
TOKENS = "#output-tokens .token"
CHOSEN_TAB = "() => document.querySelector('#views [role=tab][aria-selected=true]')"
FOCUSED_TAB = """() => { const e = document.activeElement;
  return e.getAttribute('role') === 'tab' ? e.innerText.trim() : null; }"""
SHOWN_TABS = """() => [...document.querySelectorAll('#views [role=tab]')].filter(e => e.getClientRects().length)
  .map(e => e.innerText.trim())"""
LINK_URL = "() => { const b = document.querySelector('#link-url input, #link-url textarea'); return b ? b.value : ''; }"


def focus_visible(page) -> str:
    """The focused element's description, once asserted shown with a visible focus indicator."""
    shown, ring, what = page.evaluate(FOCUS)
    assert shown and ring, (shown, ring, what)
    return what


def press(page, key: str) -> str:
    page.keyboard.press(key)
    return focus_visible(page)


def tab_to(page, test: str, back: bool = False, limit: int = 120) -> list[str]:
    """Tab (Shift+Tab when `back`) until `test` (a JS expression on `e`, the focused element) holds, the focus visible
    after every press; the places passed."""
    passed = []
    for _ in range(limit):
        page.keyboard.press("Shift+Tab" if back else "Tab")
        shown, ring, what = page.evaluate(FOCUS)
        assert shown and ring, (shown, ring, what, "after", passed[-4:])
        passed.append(what)
        if page.evaluate(f"() => {{ const e = document.activeElement; return !!({test}); }}"):
            return passed
    raise AssertionError(f"{test} not reached in {limit} presses: {passed[-8:]}")


def type_and_run(page, runs) -> None:
    """The path's first steps: Tab to sentence 1, type SENTENCE, Tab to Run and Enter; the focus stays on Run, and
    Tab then Shift+Tab right after the Run come back to it."""
    # Type a sentence: the sentence box comes after the skip link and the title row (the closed sidebar is passed)
    passed = tab_to(page, "e.closest('#text1')")
    assert len(passed) < 20 and not any("#source" in p for p in passed), passed
    page.keyboard.press("Control+A")
    page.keyboard.type(SENTENCE)
    # Run: Enter on the Run button; the focus stays on it
    tab_to(page, "e.id === 'run'", limit=6)
    since = runs.mark()
    press(page, "Enter")
    runs.wait_for(lambda r: r.text1 == SENTENCE, "on the typed sentence", since)
    page.wait_for_function(IDLE_JS)
    assert page.evaluate("() => document.activeElement.id") == "run"
    focus_visible(page)
    # the status line, next to Run, never scrolls (a box that scrolls is a Tab stop while it overflows)
    assert page.evaluate("() => getComputedStyle(document.getElementById('status')).overflowY") == "visible"
    press(page, "Tab")  # to the next control, shown and outlined (press asserts it), and back
    press(page, "Shift+Tab")
    assert page.evaluate("() => document.activeElement.id") == "run"


def test_the_keyboard_alone_types_and_runs_on_a_phone_in_german(default_app, browser, monkeypatch):
    """The path's first steps at 390 x 844 with the page in German (its longer words wrap the title row and the
    controls differently): the same Tab order, the focus shown in the window after every key. The later steps use the
    same components in the same DOM order at every size and language (budget: docs/accessibility.md)."""
    runs = record_runs(monkeypatch)
    with opened(f"{default_app}?lang=de", browser, viewport=(390, 844)) as (page, errors):
        page.wait_for_function(f"() => document.querySelector('#run').innerText.trim() === {t('page.text.run', 'de')!r}")
        type_and_run(page, runs)
        assert page.evaluate("() => document.documentElement.lang") == "de"  # read with a German voice (WCAG 3.1.1)
    assert errors == [], errors


@pytest.mark.long
def test_the_keyboard_alone_does_the_teachers_path(default_app, browser, monkeypatch):
    runs = record_runs(monkeypatch)
    with opened(default_app, browser, viewport=(1280, 800),
                permissions=["clipboard-read", "clipboard-write"]) as (page, errors):
        type_and_run(page, runs)
        # Switch a head off: Space on the first decoder head's switch; the page runs; the focus stays on it
        tab_to(page, "e.closest('#dec-heads') && e.type === 'checkbox'", limit=80)
        since = runs.mark()
        press(page, "Space")
        runs.wait_for(lambda r: heads_on(r, "decoder") is not None and (0, 0) not in heads_on(r, "decoder"),
                      "with decoder L0 H0 off", since)
        page.wait_for_function(IDLE_JS)
        assert page.evaluate("() => !!document.activeElement.closest('#dec-heads')")
        focus_visible(page)
        # Why this token?: the output tokens are one Tab stop (the first), the arrows move along them, Enter asks
        tab_to(page, "e.closest('#output-tokens')", limit=40)
        tokens = page.evaluate(f"() => [...document.querySelectorAll({TOKENS!r})].map(t => t.innerText.trim())")
        at = page.evaluate(f"() => [...document.querySelectorAll({TOKENS!r})].indexOf(document.activeElement)")

        month = tokens.index("5")  # "2024-05-03": the month's 5
        for _ in range(month - at):
            press(page, "ArrowRight")
        assert page.evaluate("() => document.activeElement.innerText.trim()") == "5", tokens
        press(page, "Enter")
        page.wait_for_function("() => document.querySelector('#views [role=tab][aria-selected=true]')"
                               ".innerText.trim() === 'Contributions'")
        page.wait_for_function(f"() => ({TEXT})('contrib-summary').includes('of the answer')")
        page.wait_for_function(IDLE_JS)
        focus_visible(page)
        # Open Inside a head: the tab list is one Tab stop, the chosen tab (Contributions); the arrows move along the
        # tabs (End to the last and Home to the first, wrapping round), Enter opens the focused one
        tab_to(page, "e.getAttribute('role') === 'tab'", limit=60)
        assert page.evaluate(f"() => ({CHOSEN_TAB})() === document.activeElement")
        shown = page.evaluate(SHOWN_TABS)
        press(page, "Tab")
        assert page.evaluate(FOCUSED_TAB) is None  # one Tab press passes the whole list
        press(page, "Shift+Tab")
        assert page.evaluate(FOCUSED_TAB) == "Contributions"
        moved = [(press(page, key), page.evaluate(FOCUSED_TAB))[1] for key in ("End", "ArrowRight", "Home")]
        assert moved == [shown[-1], shown[0], shown[0]], (moved, shown)
        for _ in range(len(shown)):
            if page.evaluate(FOCUSED_TAB) == "Inside a head":
                break
            press(page, "ArrowRight")
        press(page, "Enter")
        page.wait_for_function(f"() => ({CHOSEN_TAB})().innerText.trim() === 'Inside a head'")
        page.wait_for_function(f"() => ({TEXT})('head-summary').trim() !== ''")
        # the tab's other parts drawn too: a part drawn between a key and the check moved the focused slider out of
        # the window (once, 2026-11-29; the page does not scroll a focused element back after a reflow)
        page.wait_for_function(SETTLED_JS)
        tab_to(page, "e.closest('#head-query') && e.tagName === 'INPUT'", limit=40)
        # the summary of the last query, read before typing: the typed query's answer (the box runs on each input) may
        # come before a read after typing, which then waited for a change already made (a 120 s hang, 2026-11-29)
        page.wait_for_function(SETTLED_JS)
        before = page.evaluate(TEXT, "head-summary")
        page.keyboard.press("Control+A")
        page.keyboard.type("2")
        press(page, "Enter")
        page.wait_for_function(f"before => ({TEXT})('head-summary') !== before", arg=before)
        page.wait_for_function(SETTLED_JS)  # the tab's parts redrawn (focus on a replaced element would be lost)
        # Copy the link: back up to its button, Enter; the link (box and clipboard) holds the view
        tab_to(page, "e.id === 'copy-link'", back=True, limit=150)
        press(page, "Enter")
        url = page.wait_for_function(f"() => ({LINK_URL})() || null").json_value()
        assert page.evaluate("() => navigator.clipboard.readText()") == url
        for part in ("s1=3%20May%202024", "off=decoder:L0H0", "tab=head", "query=2"):
            assert part in url, (part, url)
    assert errors == [], errors

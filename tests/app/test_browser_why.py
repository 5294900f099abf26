"""Toggles that change nothing, explained in headless Chromium on the starting model (date-translator): a cross head
switched off leaves "lundi 3 mars 2025" as it was, and the line under the output says what fell, with the numbers of
the same Run made here (explorer.app.run.unchanged); its button switches off two more heads, the page runs again and
the answer changes. Then Sample is ticked and a temperature typed: Enter runs the page (no Run button), which says
the draws gave the greedy answer. No console errors."""

from __future__ import annotations

import pytest

from explorer.app.run.figures import RunFigures
from explorer.app.run.pair import compare
from explorer.app.run.result import Analysis
from explorer.app.run.toggles import Toggles
from explorer.app.run.view import View
from explorer.app.serving.registry import ModelRegistry
from explorer.app.serving.session import AppContext, load_session
from explorer.app.tabs import TABS
from tests.app.browser import IDLE_JS, opened

pytestmark = pytest.mark.browser

TEXT = "lundi 3 mars 2025"
INNER = "id => { const el = document.querySelector('#' + id); return el ? el.innerText : ''; }"
CHECKED = "id => [...document.querySelectorAll('#' + id + ' input[type=checkbox]')].filter(b => b.checked).length"


@pytest.fixture(scope="module")
def expected():
    """The words of the same Run, made here: cross L1 H3 off."""
    loaded = load_session("date-translator", "cpu", AppContext(ModelRegistry()))[1]
    on = frozenset((layer, head) for layer in range(2) for head in range(4)) - {(1, 3)}
    cmp = compare(loaded, TEXT, None, Toggles(heads_on={"cross": on}), 1024)
    return Analysis(cmp, View(), RunFigures.of(TABS)).why


@pytest.mark.long
def test_a_head_off_that_changes_nothing_is_explained_and_the_next_step_clicks(default_app, browser, expected):
    with opened(default_app, browser) as (page, errors):
        page.locator("#text2 textarea").fill("")
        page.locator("#text1 textarea").fill(TEXT)
        page.locator("#text1 textarea").press("Enter")
        page.wait_for_function(f"() => ({INNER})('output-summary').includes('2025-03-03') && ({IDLE_JS})()")
        page.locator("#cross-heads label", has_text="L1 H3").click()
        page.wait_for_function(f"() => ({INNER})('why-same').includes('fell from') && ({IDLE_JS})()")
        shown = page.evaluate(INNER, "why-same")
        line = str(expected.lines[0])  # in English, as the page is
        assert line in shown, (line, shown)  # the same numbers as the Run made here
        step = page.locator("#why-step")
        assert step.is_visible() and step.inner_text() == expected.step.label
        on_before = page.evaluate(CHECKED, "dec-heads") + page.evaluate(CHECKED, "cross-heads")
        step.click()
        page.wait_for_function(f"() => ({INNER})('why-same').startsWith('Switched off') && ({IDLE_JS})()")
        assert page.evaluate(CHECKED, "dec-heads") + page.evaluate(CHECKED, "cross-heads") == on_before - 2
        page.wait_for_function(f"() => ({INNER})('output-tokens').includes('with the toggles')")
        assert not step.is_visible()  # the answer changed: nothing left to explain

        # Sampling's numbers rerun like every other control: Enter in Temperature runs the page.
        page.locator("#controls button", has_text="All on").click()
        page.wait_for_function(f"() => ({CHECKED})('cross-heads') === 8 && ({IDLE_JS})()")
        page.locator("#sample input[type=checkbox]").check()
        page.wait_for_function(f"() => ({INNER})('state-line').includes('T=1,') && ({IDLE_JS})()")
        page.locator("#temperature input").fill("1.5")
        page.locator("#temperature input").press("Enter")
        page.wait_for_function(f"() => ({INNER})('state-line').includes('T=1.5') && ({IDLE_JS})()")
        page.wait_for_function(f"() => ({INNER})('why-same').includes('Sampling (T=1.5,')")
        assert "gave the greedy answer" in page.evaluate(INNER, "why-same") and "Traceback" not in page.content()
    assert errors == [], errors

"""A teacher's hour in headless Chromium, on the shipped models (issue 34's path): type a date, click the month of
the answer to ask why, rank heads by their effect and find the pair that changes it, switch the top head off, see
the state line name every toggle on every tab, load another model (sentences kept, unreadable words named, toggles
reset), the API example with this page's address, a saved PNG's title. The same page on a phone (the state
line and the output first, one row of switches per layer) is checked on the phone's page in
tests/app/test_browser_phone.py."""

from __future__ import annotations

import pytest

from tests.app.browser import IDLE_JS, heads_on, opened, record_runs

pytestmark = pytest.mark.browser

# An element's text without its status tracker's (a Run's timer, "0.8s", which stays in the tracker once it ends).
TEXT = """id => { const el = document.querySelector('#' + id); if (!el) return '';
  const trackers = [...el.querySelectorAll('[data-testid=status-tracker]')];
  return trackers.reduce((text, t) => text.replace(t.innerText, ''), el.innerText).trim(); }"""
BOX = """s => { const r = document.querySelector(s).getBoundingClientRect();
  return {x: r.x, y: r.y, bottom: r.bottom, right: r.right, height: r.height}; }"""
CHIPS = "() => [...document.querySelectorAll('#output-tokens .token')].map(t => t.innerText.trim())"
DATE = "lundi 3 mars 2025"


@pytest.fixture(scope="module")
def app_url(default_app):
    return default_app


def on_first_screen(page, selector: str, height: int) -> None:
    box = page.evaluate(BOX, selector)
    assert box["height"] > 0 and box["bottom"] <= height, (selector, box)


def chip(page, text: str, nth: int):
    """The nth output token (from 0) whose text is `text`."""
    return page.locator("#output-tokens .token", has_text=text).nth(nth)


@pytest.mark.long
def test_a_teachers_path(app_url, browser, monkeypatch):
    runs = record_runs(monkeypatch)
    with opened(app_url, browser, viewport=(1280, 800)) as (page, errors):
        # The state and the output on the first screen, before any toggle.
        assert page.evaluate(TEXT, "state-line").startswith("No toggle is active")
        for selector in ("#state-line", "#output-tokens"):
            on_first_screen(page, selector, 800)
        assert "".join(page.evaluate(CHIPS)[1:]) == "2026-11-21[EOS]"
        # The page opens on the encoder's view of the sentence, which repeats its spaces.
        assert "“␣·2” in the figures = the 2nd “␣”" in page.evaluate(TEXT, "state-line")
        # Type a date and Run.
        page.locator("#text1 textarea").fill(DATE)
        page.locator("#run").click()
        runs.wait_for(lambda r: r.text1 == DATE, "on the typed date")
        page.wait_for_function(IDLE_JS)
        assert "".join(page.evaluate(CHIPS)[1:]) == "2025-03-03[EOS]"
        # Why this token? The month's "3" (the second "3" of the answer) opens Contributions there, computed.
        chip(page, "3", 0).click()  # "2025-03-03": the first "3" is the month's
        page.wait_for_function("() => document.querySelector('#views [role=tab][aria-selected=true]')"
                               ".innerText.trim() === 'Contributions'")
        page.wait_for_function(f"() => ({TEXT})('contrib-summary').includes('token 6 of the answer')")
        assert page.locator("#contrib-position input").input_value() == "6"
        assert page.locator("#contrib-token input").input_value() == "3"  # the token's text, not its id
        # Rank heads by their effect, searching pairs: the pair that turns March into May.
        page.locator("#contrib-pairs input").check()
        page.locator("#contrib-why").click()
        page.wait_for_function(f"() => ({TEXT})('contrib-why-summary').includes('The best pair')")
        why = page.evaluate(TEXT, "contrib-why-summary")
        assert "cross L0 H1" in why and "cross L1 H3" in why and "2025-05-03" in why, why
        # One click switches the top head off; the page runs; the state line names it on every tab.
        since = runs.mark()
        page.locator("#contrib-top-off").click()
        run = runs.wait_for(lambda r: heads_on(r, "decoder") is not None and (0, 3) not in heads_on(r, "decoder"),
                            "with decoder L0 H3 off", since)
        page.wait_for_function(IDLE_JS)
        assert page.evaluate(TEXT, "state-line").startswith("Toggles: decoder L0 H3 off")
        assert "→ with the toggles:" in page.evaluate(CHIPS)
        for title in ("All heads", "Roles", "Attention & output"):
            page.locator("#views").get_by_role("tab", name=title, exact=True).click()
            assert page.locator("#state-line").is_visible()
            assert page.evaluate(TEXT, "state-line").startswith("Toggles: decoder L0 H3 off")
        assert run.text1 == DATE
        # A saved PNG carries the model, the sentence and the toggles in its title.
        with page.expect_download():
            page.locator("#head-plot .modebar-btn[data-title^='Download plot']").click()
        saved = page.evaluate("() => document.body.dataset.savedTitle")
        assert "date-translator" in saved and DATE in saved and "decoder L0 H3 off" in saved, saved
        # The API tab's example names the address this page was opened at.
        page.locator("#views").get_by_role("tab", name="API", exact=True).click()
        page.wait_for_function(f"() => ({TEXT})('api-text').includes({app_url.rstrip('/')!r})")
        assert "7860" not in page.evaluate(TEXT, "api-text") or ":7860" in app_url
        # Another model: the sentence stays, its unreadable words are named, the toggles are reset and said so.
        page.locator("#views").get_by_role("tab", name="Attention & output", exact=True).click()
        page.locator("#text1 textarea").fill("the cat sat on the mat the cat sat on the")
        page.get_by_role("button", name="Toggle Sidebar").click()
        page.locator("#source input").click()
        page.get_by_role("option", name="induction-gpt · shipped", exact=True).click()
        page.get_by_role("button", name="Load model").click()
        every_head = 8  # induction-gpt: 2 layers of 4 heads
        runs.wait_for(lambda r: "induction-gpt" in str(r.source) and len(heads_on(r, "decoder")) == every_head,
                      "of induction-gpt with every head on")
        page.wait_for_function(IDLE_JS)
        status = page.evaluate(TEXT, "status")
        assert status.startswith("Loaded induction-gpt") and "defaults" in status, status  # above the Run's notices
        assert "[UNK]" in status and "t0 … t299" in status, status
        assert page.locator("#text1 textarea").input_value() == "the cat sat on the mat the cat sat on the"
        assert page.evaluate(TEXT, "state-line").startswith("No toggle is active")
    assert errors == [], errors

"""The page in step with itself, in headless Chromium: the address bar follows the view (the link Copy link makes, after
each Run, a model change and a tab opened), the model picker names the model loaded, and the menus and the status
announcements have words a screen reader can say (no "Dropdown", no Gradio key such as "common.complete").

What the server computes for these is tested without a browser (tests/app/test_events_link.py); here what only the
browser shows: its address, its accessibility tree, its live region."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest

from tests.app.browser import FIRST_RUN_JS, IDLE_JS, opened

pytestmark = pytest.mark.browser

# Every text the page's live regions (role=status) announce, recorded as they are written.
ANNOUNCED = """window.__announced = [];
new MutationObserver(() => document.querySelectorAll('[role=status]').forEach(e => {
  const t = e.textContent.trim(); if (t) window.__announced.push(t);
})).observe(document, {subtree: true, childList: true, characterData: true});"""


@pytest.fixture(scope="module")
def app_url(default_app):
    return default_app


def query(page) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(page.url).query, keep_blank_values=True))


def address_has(page, **keys: str) -> None:
    """Wait until the address bar's query holds `keys` (the address follows the view once its event has run)."""
    want = {k: str(v) for k, v in keys.items()}
    page.wait_for_function("""want => { const q = new URLSearchParams(window.location.search);
      return Object.entries(want).every(([k, v]) => q.get(k) === v); }""", arg=want)


def test_the_address_bar_follows_the_view_and_reopens_it(app_url, browser):
    lesson = f"{app_url.rstrip('/')}/?model=induction-gpt&s1=t1%20t2%20t3%20t1%20t2&s2=&tab=attention"
    with opened(lesson, browser) as (page, errors):
        assert query(page)["model"] == "induction-gpt"
        assert page.locator("#source input").input_value().startswith("induction-gpt")  # the picker names it
        # Another model from the panel: the address names it and the sentence the page shows, the picker too.
        page.get_by_role("button", name="Toggle Sidebar").click()
        page.get_by_label("…or a Hugging Face Hub id").fill("date-gpt")
        page.get_by_role("button", name="Load model").click()
        page.wait_for_function("() => document.querySelector('#source input').value.startsWith('date-gpt')")
        page.wait_for_function(IDLE_JS)
        shown = page.locator("#text1 textarea").input_value()
        address_has(page, model="date-gpt", s1=shown)
        # A sentence typed and Run; a tab opened: each in the address.
        page.locator("#text1 textarea").fill("3 May 2024")
        page.locator("#run").click()
        address_has(page, model="date-gpt", s1="3 May 2024")
        page.locator("#views [role=tab]", has_text="All heads").click()
        address_has(page, tab="overview", s1="3 May 2024")
        kept = query(page)
        assert "s2" in kept and kept["s2"] == page.locator("#text2 textarea").input_value()
        # The address reopens what the page showed.
        page.reload()
        page.wait_for_function(FIRST_RUN_JS)
        assert page.locator("#text1 textarea").input_value() == "3 May 2024"
        assert page.locator("#source input").input_value().startswith("date-gpt")
        assert page.locator("#views [role=tab][aria-selected=true]").inner_text() == "All heads"
        assert errors == []


def test_menus_have_names_and_the_status_announces_words(app_url, browser):
    with opened(app_url, browser, init_script=ANNOUNCED) as (page, errors):
        tree = page.locator("body").aria_snapshot()
        for name in ("Lessons", "Examples for sentence 1", "Examples for sentence 2"):
            assert f'combobox "{name}"' in tree, name
        assert 'combobox "Dropdown"' not in tree
        page.wait_for_function("() => window.__announced.includes('Done')")  # an event's end, in words
        said = page.evaluate("() => window.__announced")
        assert not [t for t in said if "common." in t or "status." in t], said
        assert errors == []

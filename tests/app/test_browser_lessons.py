"""The lessons and the Download button in headless Chromium: the Lessons menu navigates to a lesson's link, which opens
the view it names (its tab selected and computed, no warning); the downloaded file, opened from disk with the network
blocked, draws its figures and shows the settings.

Every lesson's link is checked without a browser (tests/app/test_lessons.py: parsed without a notice, opened by the
page-load handler on its model and tab, its Run without a warning), and a link to each tab opens it computed in
Chromium (tests/app/test_browser_link.py::test_a_link_to_any_tab_opens_it_computed)."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest

from explorer.app.link.state import parse_link
from explorer.app.page.lessons import LESSONS
from explorer.app.serving.session import checked_source
from explorer.app.tabs import TABS
from explorer.app.tabs import tab as tab_of
from tests.app import test_browser_link as link_tests
from tests.app.browser import IDLE_JS
from tests.app.test_browser_link import RESULT, TEXT

pytestmark = pytest.mark.browser
chromium = link_tests.chromium  # the link tests' page fixture: pages with their console errors checked


@pytest.fixture(scope="module")
def app_url(default_app):
    return default_app


def lesson_tab(query: str):
    state, _ = parse_link(query, check_model=lambda name: checked_source(name, allowed_dirs=()), tabs=TABS)
    return tab_of(state.tab)


def shows(page, tab) -> None:
    """`tab` is selected and its result drawn, with no warning on the status line nor a link notice."""
    page.wait_for_function(f"() => ({RESULT})('{tab.result}')")
    page.wait_for_function(IDLE_JS)
    assert page.locator("#views [role=tab][aria-selected=true]").inner_text() == tab.title
    status = page.evaluate(TEXT, "status")
    assert "⚠️" not in status and page.evaluate(TEXT, "link-notice") == "", (tab.id, status)


def test_the_lessons_menu_opens_a_lesson(app_url, chromium):
    page = chromium.open(app_url)
    lesson = next(x for x in LESSONS if "month" in x.title)
    page.locator("#lessons input").click()
    page.get_by_role("option", name=f"3. {lesson.title}", exact=True).click()
    asked = parse_qsl(lesson.query, keep_blank_values=True)  # the lesson's keys; once run, the address holds the
    page.wait_for_url(lambda url: set(asked) <= set(parse_qsl(urlsplit(url).query, keep_blank_values=True)))  # rest
    shows(page, lesson_tab(lesson.query))
    assert page.locator("#text1 textarea").input_value() == "lundi 3 mars 2025"
    page.wait_for_function("() => document.querySelector('#output-tokens').innerText.includes('with the toggles')")


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

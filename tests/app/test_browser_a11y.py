"""The page passes axe-core (4.12, from the axe-playwright-python package: nothing fetched) with no serious or
critical violation, keeps its text at 12 px or more, and is usable at 200% zoom (docs/accessibility.md).

What each part covers, and why not more: one axe run costs 1-3 s here, and the suite's reserve is small.
- The whole page at 390 x 844 (a phone) on each shipped model: the phone layout moves and hides parts, and each model
  has its own switches, examples and tabs; the other tabs at that size hold the same components as at 1280.
- 200% zoom: 1280 px shown at zoom 2 is a 640 CSS-px window: nothing reaches past its right edge (no sideways scroll).
- Text sizes: every visible text of the first screen at 200% zoom, measured as drawn; Plotly's figures (SVG text
  sized by the figure's layout) are left out.
Every tab at both sizes, on each model, in every language: test_browser_a11y_tabs.py; the
keys-only path: test_browser_keyboard.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app.browser import opened

pytestmark = pytest.mark.browser

SERIOUS = ("serious", "critical")
# Visible text smaller than 12 px: [font size, tag#id.class, text], Plotly's SVG left out.
SMALL_TEXT = """() => {
  const found = [], walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el || !node.textContent.trim() || el.closest('.js-plotly-plot, svg, script, style')) continue;
    const box = el.getBoundingClientRect(), style = getComputedStyle(el);
    if (!box.width || !box.height || style.visibility === 'hidden' || el.closest('[aria-hidden=true]')) continue;
    const size = parseFloat(style.fontSize);
    if (size < 12) found.push([size, el.tagName + '#' + el.id + '.' + el.className, node.textContent.trim().slice(0, 30)]);
  }
  return found; }"""
OVERFLOW = "() => [document.documentElement.scrollWidth, window.innerWidth]"


def axe_serious(page, context=None) -> dict[str, list]:
    """Serious and critical axe violations of the page (or of `context`): rule id -> the targets it names."""
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page, context=context, options={"resultTypes": ["violations"]}).response["violations"]
    return {v["id"]: [n["target"] for n in v["nodes"]][:5] for v in found if v["impact"] in SERIOUS}


def test_the_phone_page_passes_axe(default_app, browser):
    """A touch phone (390 x 844, mobile, touch) on the page as it opens: every axe rule, best practices included. Each
    shipped model's page at 390 px, every tab computed, in each language, is checked by test_browser_a11y_tabs (the
    WCAG rules); what a touch phone changes (the mobile viewport, touch) is the same whatever the model."""
    with opened(default_app, browser, viewport=(390, 844), is_mobile=True, has_touch=True) as (page, errors):
        # Gradio fades a text whose event runs to 20% opacity: its contrast would be measured mid-way
        page.wait_for_function("() => !document.querySelector('#views > .tabitem:not([style*=none]) [data-testid=markdown-wrapper].pending')")
        assert axe_serious(page) == {}
    assert errors == [], errors


def test_at_200_percent_zoom_nothing_scrolls_sideways(default_app, browser):
    with opened(default_app, browser, viewport=(640, 400)) as (page, errors):
        width, window = page.evaluate(OVERFLOW)
        assert width <= window, (width, window)
        assert page.evaluate(SMALL_TEXT) == []
    assert errors == [], errors


def test_axe_is_the_packaged_one():
    """axe-core comes from the installed package (no network): its script is there and is axe 4."""
    import axe_playwright_python

    script = Path(axe_playwright_python.__file__).with_name("axe.min.js").read_text()[:200]
    assert "axe v4." in script, script


# The focused element's outline: [style, width in px, colour as "rgb(r, g, b)"].
OUTLINE = """() => { const s = getComputedStyle(document.activeElement);
  return [s.outlineStyle, parseFloat(s.outlineWidth), s.outlineColor]; }"""


def contrast(rgb: str, against: tuple[int, int, int] = (255, 255, 255)) -> float:
    """WCAG contrast ratio of an "rgb(r, g, b)" colour against another."""
    def lum(c):
        c = [x / 255 for x in c]
        c = [x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in c]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]
    a, b = sorted((lum([int(v) for v in rgb[rgb.index("(") + 1:-1].split(",")[:3]]), lum(against)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def test_the_first_tab_press_reaches_the_skip_link_which_moves_the_focus(open_view):
    """Keys only: Tab shows "Skip to results" with a visible outline (3:1 on white at least); Enter puts the focus on
    the results bar, outlined too."""
    with open_view() as (page, errors):
        page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement.innerText") == "Skip to results"
        style, width, colour = page.evaluate(OUTLINE)
        assert style == "solid" and width >= 2 and contrast(colour) >= 3, (style, width, colour)
        page.keyboard.press("Enter")
        page.wait_for_function("() => document.activeElement.id === 'results-bar'")
        style, width, colour = page.evaluate(OUTLINE)
        assert style == "solid" and width >= 2 and contrast(colour) >= 3, (style, width, colour)
        page.screenshot(path="/tmp/a11y-focus.png")
    assert errors == [], errors

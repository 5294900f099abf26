"""A link opened on a phone: at 390 x 844 (portrait) the chosen head's heatmap comes right after the sentence and
Run, the controls after the figures; nothing is wider than the screen and no two tick labels overlap. At 1280 x 800
the desktop layout (controls left of the figures) is kept.

EXPLORER_SCREENSHOTS=1 writes the phone's first screen to docs/screenshots/phone.png (else to a temporary folder)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.app.browser import opened

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
PHONE = (390, 844)
HEATMAP_DRAWN = "#head-plot .js-plotly-plot .heatmaplayer image, #head-plot .js-plotly-plot .heatmaplayer .hm"
# Page coordinates (the page is not scrolled) of an element, or null.
BOX = """s => { const e = document.querySelector(s); if (!e) return null; const r = e.getBoundingClientRect();
  return {x: r.x + window.scrollX, y: r.y + window.scrollY, right: r.right + window.scrollX,
          bottom: r.bottom + window.scrollY, width: r.width, height: r.height}; }"""
# The tick labels shown (not hidden) on each axis of a plot: [[axis, [box, ...]], ...].
TICK_BOXES = """id => [...document.querySelectorAll('#' + id + ' .xaxislayer-above, #' + id + ' .yaxislayer-above')]
  .map(axis => [axis.getAttribute('class'), [...axis.querySelectorAll('text')]
    .filter(t => getComputedStyle(t).visibility !== 'hidden' && t.getBoundingClientRect().width > 0)
    .map(t => { const r = t.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })])"""
# Elements (not fixed-position, not inside a box that scrolls or clips sideways) reaching past the window's right edge.
OVERFLOWING = """() => [...document.querySelectorAll('body *')].filter(e => {
    const r = e.getBoundingClientRect();
    if (!r.width || r.right <= window.innerWidth + 0.5 || getComputedStyle(e).position === 'fixed') return false;
    for (let p = e.parentElement; p; p = p.parentElement)
      if (['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(p).overflowX)) return false;
    return true; }).map(e => e.tagName + '#' + e.id + '.' + e.getAttribute('class'))"""


@pytest.fixture(scope="module")
def app_url(default_app):
    return default_app


def overlapping(boxes: list[list[float]]) -> list[tuple[list[float], list[float]]]:
    """Pairs of boxes (left, top, right, bottom) that overlap by more than half a pixel."""
    return [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if min(a[2], b[2]) - max(a[0], b[0]) > 0.5 and min(a[3], b[3]) - max(a[1], b[1]) > 0.5]


def test_phone_shows_the_heatmap_after_the_sentence_and_run(app_url, browser, tmp_path):
    with opened(app_url, browser, viewport=PHONE, is_mobile=True, has_touch=True) as (page, errors):
        page.wait_for_selector(HEATMAP_DRAWN)
        assert page.evaluate("() => window.scrollY") == 0
        box = lambda selector: page.evaluate(BOX, selector)  # noqa: E731
        cells = box("#head-plot .nsewdrag")  # the heatmap's cells
        assert cells["y"] <= PHONE[1] - 150 and cells["height"] > 100, cells  # 150 px of it on the first screen
        text1, run, controls, plot = box("#text1 textarea"), box("#run"), box("#controls"), box("#head-plot")
        assert 0 <= text1["y"] < run["y"] and run["bottom"] <= plot["y"], (text1, run, plot)
        assert controls["y"] >= box("#mask-plot")["bottom"], controls  # the controls after the figures
        assert box("#text2")["y"] > plot["bottom"]  # the optional second sentence too

        # Nothing wider than the screen: the page does not scroll sideways, every figure fits.
        assert page.evaluate("() => document.documentElement.scrollWidth") <= PHONE[0]
        assert page.evaluate(OVERFLOWING) == []
        for plot_id in ("head-plot", "mask-plot"):
            figure = box(f"#{plot_id} .main-svg")
            assert figure["x"] >= 0 and figure["right"] <= PHONE[0], (plot_id, figure)
            axes = page.evaluate(TICK_BOXES, plot_id)
            assert len(axes) == 2 and all(len(shown) >= 3 for _, shown in axes), axes  # labels remain
            for axis, shown in axes:
                assert overlapping(shown) == [], (plot_id, axis)

        out = ROOT / "docs" / "screenshots" / "phone.png" if os.environ.get("EXPLORER_SCREENSHOTS") else \
            tmp_path / "phone.png"
        page.screenshot(path=str(out))
        assert out.stat().st_size > 10_000
    assert errors == [], errors


def test_desktop_keeps_the_controls_left_of_the_figures(app_url, browser):
    """The phone's CSS leaves 1280 x 800 alone: sentences and Run in one row, controls in a column left of the
    figures, the two heatmaps side by side, every tick label shown as drawn."""
    with opened(app_url, browser, viewport=(1280, 800)) as (page, errors):
        page.wait_for_selector(HEATMAP_DRAWN)
        box = lambda selector: page.evaluate(BOX, selector)  # noqa: E731
        text1, text2, run = box("#text1"), box("#text2"), box("#run")
        assert text1["y"] == text2["y"] == run["y"] and text1["right"] < text2["x"] < run["x"]
        controls, views = box("#controls"), box("#views-col")  # the results bar, then the tabs
        assert controls["y"] == views["y"] and controls["right"] < views["x"]
        head, mask = box("#head-plot"), box("#mask-plot")
        assert head["y"] == mask["y"] and head["right"] < mask["x"]
        hidden = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot .xtick text, "
                               ".js-plotly-plot .ytick text')].filter(t => t.style.visibility === 'hidden').length")
        assert hidden == 0
    assert errors == [], errors

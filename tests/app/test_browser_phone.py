"""A link opened on a phone: at 390 x 844 (portrait) the output and the chosen head's heatmap come right after the
sentence and Run, then the head switches and masks (within the first two screens), then the long tables; the output
stays in view while a switch is toggled; nothing is wider than the screen and no two tick labels overlap; the state
line and the output are on the first screen, one row of switches per layer (one page for these layout checks). At
1280 x 800 the desktop layout (controls left of the figures) is kept, every token is labelled on the heatmap's axes and
the output stays in view as the page scrolls, beside the switches, never over them.

EXPLORER_SCREENSHOTS=1 writes the phone's first screen to docs/screenshots/phone.png (else to a temporary folder)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.app.browser import BOX, SETTLED_JS

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
PHONE = (390, 844)
HEATMAP_DRAWN = "#head-plot .js-plotly-plot .heatmaplayer image, #head-plot .js-plotly-plot .heatmaplayer .hm"
# Where an element is in the window now (the page may be scrolled), or null.
IN_WINDOW = """s => { const e = document.querySelector(s); if (!e) return null; const r = e.getBoundingClientRect();
  return {x: r.x, y: r.y, right: r.right, bottom: r.bottom, height: r.height, inner: window.innerHeight}; }"""
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


def overlapping(boxes: list[list[float]]) -> list[tuple[list[float], list[float]]]:
    """Pairs of boxes (left, top, right, bottom) that overlap by more than half a pixel."""
    return [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if min(a[2], b[2]) - max(a[0], b[0]) > 0.5 and min(a[3], b[3]) - max(a[1], b[1]) > 0.5]


def test_phone_shows_the_heatmap_after_the_sentence_and_run(open_view, tmp_path):
    """The heatmap after the sentence and Run, the switches and masks on screen 1 or 2, nothing wider than the screen;
    and, on the same page (a teacher's phone, a test of its own that opened the same page until issue 39), the state
    line and the output on the first screen and one row of switches per layer."""
    with open_view(viewport=PHONE, phone=True) as (page, errors):
        page.wait_for_selector(HEATMAP_DRAWN)
        assert page.evaluate("() => window.scrollY") == 0
        box = lambda selector: page.evaluate(BOX, selector)  # noqa: E731
        cells = box("#head-plot .nsewdrag")  # the heatmap's cells
        assert cells["y"] <= PHONE[1] - 150 and cells["height"] > 100, cells  # 150 px of it on the first screen
        text1, run, output, plot = box("#text1 textarea"), box("#run"), box("#results-bar"), box("#head-plot")
        assert 0 <= text1["y"] < run["y"] < output["y"] and output["bottom"] <= plot["y"], (text1, run, output, plot)
        # the head switches right under the heatmap, on screen 1 or 2, then the masks and the mask figure, before the
        # long tables
        heads, masks, mask_plot = box("#heads-group"), box("#masks-group"), box("#mask-plot")
        assert box("#head-plot")["bottom"] <= heads["y"] < 2 * PHONE[1], heads
        assert heads["bottom"] <= masks["y"] < masks["bottom"] <= mask_plot["y"], (masks, mask_plot)
        assert mask_plot["bottom"] <= box("#view-group")["y"] <= box("#output-table")["y"], mask_plot
        assert box("#output-table")["bottom"] <= box("#tokens")["y"]
        assert box("#text2")["y"] > box("#tokens")["bottom"]  # the optional second sentence last

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

        # A teacher's phone: the state line and the output on the first screen, one row of switches per layer.
        for selector in ("#state-line", "#output-tokens"):
            shown = box(selector)
            assert shown["height"] > 0 and shown["bottom"] <= PHONE[1], (selector, shown)
        xs = page.evaluate("() => [...document.querySelectorAll('#cross-heads label')].map(l => "
                           "[l.innerText.trim(), Math.round(l.getBoundingClientRect().x), "
                           "Math.round(l.getBoundingClientRect().y)])")
        where = {label: (x, y) for label, x, y in xs}
        assert where["L1 H0"][0] == where["L0 H0"][0] and where["L1 H0"][1] > where["L0 H3"][1]  # layer 1: a new row
        assert len({where[f"L0 H{h}"][1] for h in range(4)}) == 1  # layer 0's four heads: one row

        out = ROOT / "docs" / "screenshots" / "phone.png" if os.environ.get("EXPLORER_SCREENSHOTS") else \
            tmp_path / "phone.png"
        page.screenshot(path=str(out))
        assert out.stat().st_size > 10_000
    assert errors == [], errors


def test_phone_keeps_the_output_in_view_while_a_switch_is_toggled(open_view):
    """Scrolled down to the switches (4,000 px below the output before), a switch toggled: the output bar is pinned at
    the top of the window, showing the new state, and the switch itself is not under it; the causal mask unticked
    further down: why it changed nothing is in view, inside the pinned bar."""
    with open_view(viewport=PHONE, phone=True) as (page, errors):
        switch = page.locator("#cross-heads label").filter(has_text="L1 H3")
        switch.scroll_into_view_if_needed()
        assert page.evaluate("() => window.scrollY") > PHONE[1]  # the page scrolled past the first screen
        switch.locator("input").uncheck()  # Playwright clicks only what receives the click: nothing covers it
        page.wait_for_function("() => document.querySelector('#state-line').innerText.includes('cross L1 H3 off')")
        page.wait_for_function(SETTLED_JS)
        bar, tokens = page.evaluate(IN_WINDOW, "#results-bar"), page.evaluate(IN_WINDOW, "#output-tokens")
        # within 40% of the screen: the toggle changed no output, so the bar holds why (a 168 px box and its button,
        # 299 px in all; 59 px without); measured once the Run has ended (mid-Run it had no why yet)
        assert bar["y"] == 0 and 0 < tokens["y"] and tokens["bottom"] <= bar["bottom"] <= 0.4 * bar["inner"], (
            bar, tokens)
        label = page.evaluate(IN_WINDOW, "#cross-heads")
        assert label["y"] >= bar["bottom"] and label["bottom"] <= label["inner"], (label, bar)
        # the causal mask unticked (further down): why greedy decoding cannot see it, in view in the pinned bar
        causal = page.locator("#causal input")
        causal.scroll_into_view_if_needed()
        causal.uncheck()
        page.wait_for_function("() => ((document.querySelector('#why-same') || {}).innerText || '')"
                               ".includes('causal mask')")  # (not in the page until there is a why)
        page.wait_for_function(SETTLED_JS)
        why, bar = page.evaluate(IN_WINDOW, "#why-same"), page.evaluate(IN_WINDOW, "#results-bar")
        assert bar["y"] == 0 and 0 < why["y"] and why["bottom"] <= min(bar["bottom"], why["inner"]), (why, bar)
        assert why["bottom"] <= 0.4 * why["inner"], why  # the bar leaves most of the screen to the page
    assert errors == [], errors


def test_desktop_keeps_the_controls_left_of_the_figures(open_view):
    """The phone's CSS leaves 1280 x 800 alone: sentences and Run in one row, controls in a column left of the
    figures, the two heatmaps side by side, every token labelled on the heatmap's axes (tick labels shown as drawn);
    scrolled down, the output stays at the top of the window, right of the switches."""
    with open_view(viewport=(1280, 800)) as (page, errors):
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
        # one tick label per token on each axis: the keys (the 23 characters and more) and the answer's tokens
        labels = page.evaluate("""() => { const gd = document.querySelector('#head-plot .js-plotly-plot');
          const n = (a) => gd.querySelectorAll('.' + a + 'tick text').length;
          return [n('x'), gd.data[0].x.length, n('y'), gd.data[0].y.length]; }""")
        assert labels[0] == labels[1] >= 23 and labels[2] == labels[3] >= 10, labels
        page.evaluate("() => window.scrollTo(0, document.querySelector('#tokens').getBoundingClientRect().top)")
        assert page.evaluate("() => window.scrollY") > 800
        bar = page.evaluate(IN_WINDOW, "#results-bar")
        assert bar["y"] == 0 and bar["height"] < 120 and bar["x"] >= box("#controls")["right"], bar
    assert errors == [], errors

"""A class's view and the projector size in Chromium (explorer.app.page.display): `?mode=class` shows the sentence,
Run, the output, one head's heatmap with its layer / head picker beside it and the head switches, and nothing else
until More is pressed (Class view hides it again); on a phone the same in that order. `?size=projector` makes the
page's text and every figure's fonts about 1.5 times as large, and Normal size puts them back."""

from __future__ import annotations

import pytest

from tests.app.browser import BOX, SHOWN

pytestmark = pytest.mark.browser

PHONE, PROJECTOR = (390, 844), (1920, 1080)
CLASS_SHOWN = ("#text1", "#run", "#output-tokens", "#head-plot .js-plotly-plot", "#layer", "#head", "#heads-group",
               "#causal", "#more")
CLASS_HIDDEN = ("#text2", "#ex2", "#views [role=tab]", "#mask-plot", "#output-table", "#tokens", "#baseline-plot",
                "#kind", "#measure", "#sentence", "#padding", "#custom-mask", "#lm-controls", "#class-view")
# The chosen head's figure as the page holds it: its title's font size, first x tick font size, height, scale applied.
FIGURE = """() => { const gd = document.querySelector('#head-plot .js-plotly-plot');
  return [gd.layout.title.font.size, gd.layout.xaxis.tickfont.size, gd._fullLayout.height,
          (gd.layout.meta && gd.layout.meta.explorerScale) || 1,
          parseFloat(getComputedStyle(gd.querySelector('.xtick text')).fontSize)]; }"""
TITLE = "() => document.querySelector('#head-plot .js-plotly-plot').layout.title.text"
FONT = "s => parseFloat(getComputedStyle(document.querySelector(s)).fontSize)"


def shown(page, selectors) -> dict[str, bool]:
    return {s: page.evaluate(SHOWN, s) for s in selectors}


def test_a_class_view_shows_one_head_and_the_switches_and_more_shows_the_rest(open_view):
    with open_view("mode=class") as (page, errors):
        assert all(shown(page, CLASS_SHOWN).values()), shown(page, CLASS_SHOWN)
        assert not any(shown(page, CLASS_HIDDEN).values()), shown(page, CLASS_HIDDEN)
        box = lambda s: page.evaluate(BOX, s)  # noqa: E731
        picker, plot = box("#view-group"), box("#head-plot")
        # the layer / head picker left of the heatmap, at the top of the column beside it (the output bar and the tab's
        # line above the figure); the heatmap takes the row the mask figure left
        assert picker["right"] < plot["x"] and abs(picker["y"] - plot["y"]) < 200, (picker, plot)
        assert plot["width"] > 800 and plot["y"] < 800, plot  # drawn on the first screen
        # the simplest view first: the sentence looking at itself (docs/app.md), not cross-attention
        assert "encoder self-attn. L0 H0" in page.evaluate(TITLE), page.evaluate(TITLE)

        page.locator("#causal input").uncheck()  # the masks lesson: the mask figure comes back with the mask off
        page.wait_for_function(f"() => ({SHOWN})('#mask-plot')")
        page.locator("#causal input").check()
        page.wait_for_function(f"() => !({SHOWN})('#mask-plot')")

        page.locator("#more").click()
        page.wait_for_function("() => document.documentElement.dataset.mode === 'full'")
        full = ("#text2", "#views [role=tab]", "#mask-plot", "#tokens", "#kind", "#class-view")
        assert all(shown(page, full).values()), shown(page, full)
        assert not page.evaluate(SHOWN, "#more")
        page.locator("#class-view").click()
        page.wait_for_function("() => document.documentElement.dataset.mode === 'class'")
        assert not any(shown(page, CLASS_HIDDEN).values())
    assert errors == [], errors


def test_a_class_view_on_a_phone_keeps_its_order(open_view):
    """The sentence, Run, the output, the layer / head picker right above its heatmap, then the switches."""
    with open_view("mode=class", viewport=PHONE, phone=True) as (page, errors):
        box = lambda s: page.evaluate(BOX, s)  # noqa: E731
        order = [box(s) for s in ("#text1", "#run", "#results-bar", "#view-group", "#head-plot", "#heads-group")]
        assert all(a["bottom"] <= b["y"] + 1 for a, b in zip(order, order[1:])), order
        assert order[-1]["y"] < 2 * PHONE[1] and page.evaluate("() => document.documentElement.scrollWidth") <= PHONE[0]
        assert not any(shown(page, CLASS_HIDDEN).values())
    assert errors == [], errors


def test_the_projector_size_makes_text_and_figures_larger_and_normal_puts_them_back(open_view):
    with open_view(viewport=PROJECTOR) as (page, errors):
        normal, state = page.evaluate(FIGURE), page.evaluate(FONT, "#state-line p")
        sentence = page.evaluate(FONT, "#text1 textarea")
    with open_view("size=projector", viewport=PROJECTOR) as (page, errors):
        page.wait_for_function(f"() => ({FIGURE})()[3] === 1.5")
        large = page.evaluate(FIGURE)
        assert large[0] == pytest.approx(1.5 * normal[0]) and large[1] == pytest.approx(1.5 * normal[1])
        assert large[2] == pytest.approx(1.3 * normal[2], abs=1) and large[4] >= 1.4 * normal[4], (normal, large)
        assert page.evaluate(FONT, "#state-line p") >= 1.5 * state
        assert page.evaluate(FONT, "#text1 textarea") >= 1.4 * sentence
        page.locator("#page-size input").click()  # the menu: back to the normal size, the figures drawn as they were
        page.get_by_role("option", name="Normal size").click()
        page.wait_for_function(f"() => ({FIGURE})()[3] === 1")
        assert page.evaluate(FIGURE)[:3] == pytest.approx(normal[:3], abs=1)
        assert page.evaluate(FONT, "#state-line p") == state
    assert errors == [], errors

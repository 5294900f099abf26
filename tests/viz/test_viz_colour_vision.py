"""Colour vision (explorer.viz.colour_vision): the maths against published values, and every palette of the page,
found in the code by its name, distinguishable under protanopia, deuteranopia and tritanopia (Machado et al. 2009,
severity 1) by at least MIN_DELTA_E (CIEDE2000). A colour written anywhere in explorer/viz is named, so it is
checked."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from explorer.viz import colour_vision as cv

PALETTES = cv.palettes()
ROOT = Path(cv.__file__).resolve().parents[1]


@pytest.mark.parametrize(("lab1", "lab2", "expected"), [  # Sharma, Wu & Dalal (2005), table 1: pairs 1, 7, 17
    ((50, 2.6772, -79.7751), (50, 0, -82.7485), 2.0425),
    ((50, 0, 0), (50, -1, 2), 2.3669),
    ((50, 2.5, 0), (73, 25, -18), 27.1492),
])
def test_ciede2000_matches_the_published_pairs(lab1, lab2, expected) -> None:
    assert cv.ciede2000(np.array(lab1, float), np.array(lab2, float)) == pytest.approx(expected, abs=1e-4)


def test_the_simulations_keep_greys_and_merge_red_with_green() -> None:
    for vision in cv.MACHADO:
        assert np.allclose(cv.simulate("#808080", vision), cv.rgb("#808080"), atol=2e-3)  # rows sum to 1
    red, green = "#d62728", "#2ca02c"  # Plotly's default red and green: far apart for normal vision only
    assert cv.delta_e(red, green) > 50
    assert cv.check(cv.Palette("red/green", ((red, green),)), ("deuteranopia",))  # caught


def test_every_palette_kind_of_the_page_is_found() -> None:
    names = {p.name for p in PALETTES}
    assert {"explorer.viz.common.WEIGHT_SCALE", "explorer.viz.common.DIVERGING_SCALE", "explorer.viz.flow.COLORS",
            "explorer.viz.tokens.*_COLOR", "explorer.viz.head_view.PALETTE", "explorer.viz.mask.MASK_SCALE",
            "explorer.app.page.results_bar.CHIP_COLOURS"} <= names
    tokens = next(p for p in PALETTES if p.name == "explorer.viz.tokens.*_COLOR")
    assert tokens.pairs == (("#0072B2", "#D55E00"),)  # baseline against toggled


@pytest.mark.parametrize("palette", PALETTES, ids=lambda p: p.name)
def test_each_palette_stays_apart_for_every_colour_vision(palette: cv.Palette) -> None:
    assert cv.check(palette) == []


def test_every_colour_written_in_the_figures_is_in_a_checked_palette() -> None:
    named = {c.lower() for p in PALETTES for c in p.colours}
    loose = []
    for path in sorted((ROOT / "viz").glob("*.py")):
        for colour in re.findall(r"#[0-9a-fA-F]{6}\b", path.read_text(encoding="utf-8")):
            r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
            if not (r == g == b) and colour.lower() not in named:  # greys carry no hue to lose
                loose.append(f"{path.name}: {colour}")
    assert loose == []


@pytest.mark.parametrize(("colour", "scale"), [("MASKED_COLOR", "WEIGHT_SCALE"), ("FOCUS_COLOR", "WEIGHT_SCALE")])
def test_a_colour_drawn_over_a_scale_differs_from_every_stop_of_it(colour: str, scale: str) -> None:
    """The grey of a masked cell among the weights' cells, the chosen query's vermilion over the query-key map."""
    from explorer.viz import common, query_key

    over = getattr(common, colour, None) or getattr(query_key, colour)
    pairs = tuple((over, stop) for _, stop in getattr(common, scale))
    assert cv.check(cv.Palette(f"{colour} over {scale}", pairs)) == []

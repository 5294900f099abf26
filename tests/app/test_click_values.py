"""The strings a page script writes on a click (and a suggested pair's value) are parsed once, at the boundary, into
a small typed value; anything else is refused with ValueError, and the handler then leaves the page as it is."""

from __future__ import annotations

import pytest

from explorer.app.tabs.compare.forms import ModelPair
from explorer.app.tabs.contributions.text import HeadCell, is_click
from explorer.app.tabs.features.forms import LatentClick
from explorer.app.tabs.head.forms import HeadClick


def test_a_clicked_query():
    assert HeadClick.parse("decoder|1|3|7|1717171717") == HeadClick("decoder", "1", "3", 7, "1717171717")
    for bad in (None, "", "decoder|1|3|7", "decoder|1|3|-1|5", "decoder|1|3|x|5", "a|b|c|1|2|3", "<b>|1|2|3|4x|"):
        with pytest.raises(ValueError):
            HeadClick.parse(bad)


def test_a_clicked_latent():
    assert LatentClick.parse("12|1717") == LatentClick(12, "1717")
    for bad in (None, "", "12", "x|1717", "-1|5", "|5", "1.5|5"):
        with pytest.raises(ValueError):
            LatentClick.parse(bad)


def test_a_clicked_head_cell():
    assert HeadCell.parse("cross|1|0|1717") == HeadCell("cross", 1, 0)
    assert HeadCell.parse("encoder|0|2") == HeadCell("encoder", 0, 2)
    for bad in ("mlp|1|1717", "mlp|1|0|1717", "self|1|0|5", "cross|a|0|5", "cross|1", "cross|1|0|5|6"):
        with pytest.raises(ValueError):
            HeadCell.parse(bad)
    assert is_click("cross|1|0|5") and not is_click("cross L1 H0") and not is_click(None)


def test_a_suggested_pair():
    assert ModelPair.parse("date-translator|date-gpt") == ModelPair("date-translator", "date-gpt")
    for bad in (None, "", "date-gpt", "|date-gpt", "date-gpt|", " | "):
        with pytest.raises(ValueError):
            ModelPair.parse(bad)

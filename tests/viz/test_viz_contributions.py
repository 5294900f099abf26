"""The Contributions figures (explorer.viz.contributions) from hand-made numbers: the DLA map draws each run's
heads and MLPs as given on one colour scale centred at 0, crosses out switched-off heads, names each cell for the
page's click and says the parts' sum; the token-attribution strip colours each token by its value, escaped."""

from __future__ import annotations

import numpy as np
import pytest

from explorer import viz
from tests.viz.strings import containing


def run(name="", off=None, scale=1.0):
    heads = {"decoder": scale * np.array([[1.0, -2.0, 0.5], [4.0, 0.0, -0.25]], np.float32),
             "cross": scale * np.array([[0.1, 0.2, 0.3], [-3.0, 0.0, 1.0]], np.float32)}
    return viz.DLARun(name, heads, scale * np.array([0.5, -1.5]), 0.25, -0.125, 1.0, off)


def test_dla_map_cells_scale_and_captions():
    off = {"decoder": np.zeros((2, 3), bool), "cross": np.zeros((2, 3), bool)}
    off["cross"][1, 1] = True
    fig = viz.dla_map([run("without toggles"), run("with toggles", off, scale=2.0)],
                      {"decoder": "decoder heads", "cross": "cross heads"}, title="t")
    heat = [t for t in fig.data if t.type == "heatmap"]
    assert len(heat) == 6  # per run: decoder heads, cross heads, MLP column
    np.testing.assert_array_equal(np.asarray(heat[0].z), run().heads["decoder"])
    np.testing.assert_array_equal(np.asarray(heat[2].z)[:, 0], [0.5, -1.5])
    np.testing.assert_array_equal(np.asarray(heat[4].z), 2 * run().heads["cross"])
    assert {(t.zmin, t.zmax) for t in heat} == {(-8.0, 8.0)}  # one scale for both runs, centred at 0
    assert heat[1].customdata[1][2] == "cross|1|2" and heat[2].customdata[0][0] == "mlp|0|"
    assert "of logit 1.000" in heat[0].hovertemplate and "with toggles · " in heat[3].hovertemplate
    crosses = [t for t in fig.data if t.type == "scatter"]
    assert len(crosses) == 1 and list(crosses[0].x) == ["H1"] and list(crosses[0].y) == ["L1"]
    text = " ".join(a.text for a in fig.layout.annotations)
    # baseline: heads 0.1+... ; sum = heads + MLPs + embeddings + rest
    total = sum(float(a.sum()) for a in run().heads.values()) - 1.0 + 0.25 - 0.125
    assert f"sum {total:+.3f}".replace("-", "−") in text and "embeddings +0.25" in text
    assert "without toggles" in text and "cross heads" in text


def test_dla_map_checks_shapes():
    bad = viz.DLARun("", {"decoder": np.zeros((3, 2))}, np.zeros(2), 0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="heads"):
        viz.dla_map([bad])


def test_attribution_strip_values_and_escaping():
    tokens = ["<b>a</b>", "$x$", "a"]
    fig = viz.attribution_strip([("in<put>", tokens, np.array([1.0, -3.0, 0.5]))], title="t")
    heat = fig.data[0]
    np.testing.assert_array_equal(np.asarray(heat.z), [[1.0, -3.0, 0.5]])
    assert (heat.zmin, heat.zmax) == (-3.0, 3.0)
    assert heat.customdata[0][1] == ["1", "−66.7%"]  # position, signed share of all |attribution|
    assert not containing(fig, "<b>a") and not containing(fig, "$x$") and not containing(fig, "in<put>")
    assert containing(fig, "&lt;b&gt;a") and containing(fig, "in&lt;put&gt;")
    with pytest.raises(ValueError, match="one per token"):
        viz.attribution_strip([("x", tokens, np.zeros(2))])

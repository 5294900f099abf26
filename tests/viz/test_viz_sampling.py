"""The sampling figure (explorer.viz.sampling) from a hand-made distribution: each stage's bars are the
distribution's numbers for the tokens shown, most probable first; tokens a cut-off drops are greyed; a dashed line
follows the last token each cut-off keeps; the drawn token is marked; token text is escaped."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from explorer import viz
from explorer.outputs.sampling import Sampling, next_token_distribution
from explorer.viz import sampling as vs
from tests.viz.strings import containing

PROBS = (0.05, 0.4, 0.1, 0.3, 0.15)  # by id; order 1, 3, 4, 2, 0
LABELS_BY_ID = ["e", "<b>a</b>", "$c$", "b", "d"]


def dist(**settings):
    return next_token_distribution(torch.tensor([math.log(p) for p in PROBS]), Sampling(**settings))


def test_bars_are_each_stages_numbers_most_probable_first():
    d = dist(temperature=0.5, top_k=4, top_p=0.6)
    labels = [LABELS_BY_ID[i] for i in d.top(4).tolist()]
    fig = viz.sampling_figure(d, labels, chosen=3, uniform=0.7)
    bars = [t for t in fig.data if t.type == "bar"]
    assert [b.name for b in bars] == ["model (temperature 1)", "after temperature 0.5",
                                      "drawn from (after the cut-offs, renormalised)"]
    order = [1, 3, 4, 2]
    for b, stage in zip(bars, ("probs", "tempered", "final")):
        np.testing.assert_allclose(np.asarray(b.y), getattr(d, stage)[order].numpy(), rtol=1e-6)  # float32 on the way
    assert list(bars[0].x) == ["&lt;b&gt;a&lt;/b&gt;", "b", "d", "&#36;c&#36;"]
    assert d.top_p_kept == 2  # temperature 0.5: 0.4² and 0.3² make 0.64 + 0.36 · ... of the kept mass
    assert list(bars[1].marker.color) == [vs.TEMPERED_COLOR] * 2 + [vs.CUT_COLOR] * 2
    lines = [s for s in fig.layout.shapes]
    assert [ln.x0 for ln in lines] == [1.5]  # after the 2 top-p keeps; top-k keeps 4, all shown: no line inside
    text = " ".join(a.text for a in fig.layout.annotations)
    assert "top-p 0.6: 2 kept" in text and "▼ drawn with u = 0.700: b" in text and "top-k 4 (beyond" not in text
    marker = [t for t in fig.data if t.type == "scatter"]
    assert len(marker) == 1 and list(marker[0].x) == ["b"]
    assert not containing(fig, "<b>a") and not containing(fig, "$c$")


def test_cut_offs_beyond_the_tokens_shown_and_a_drawn_token_not_shown():
    d = dist(top_k=3)
    fig = viz.sampling_figure(d, ["a", "b"], chosen=0)
    assert not fig.layout.shapes
    text = " ".join(a.text for a in fig.layout.annotations)
    assert "top-k 3 (beyond the 2 shown)" in text and "drawn: token 0, not among the 2 shown" in text
    ties = next_token_distribution(torch.tensor([0.0, 1.0, 1.0, 1.0]), Sampling(top_k=2))
    fig = viz.sampling_figure(ties, ["x", "y", "z", "w"])
    assert [s.x0 for s in fig.layout.shapes] == [2.5]
    assert "top-k 2 (keeps 3: ties)" in " ".join(a.text for a in fig.layout.annotations)


def test_labels_must_name_the_first_tokens():
    with pytest.raises(ValueError, match="labels must name the first 1..5 tokens"):
        viz.sampling_figure(dist(), [])
    with pytest.raises(ValueError, match="got 6 labels"):
        viz.sampling_figure(dist(), list("abcdef"))

"""The neuron view (explorer.viz.head_computation) draws a HeadComputation's own numbers: the keys drawn are the
strongest of either run, in position order; the bars are the scores and weights, blocked keys grey; the vectors are
the run's q, k_j, q * k_j and v_j (before rotation too, in rotary models); bad input is a clear ValueError."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.interpret import head_computation_pair
from explorer.model import Transformer, TransformerConfig
from explorer.viz import common as c
from explorer.viz.head_computation import head_computation_figure, shown_keys

T = 10
LABELS = [f"t{i}" for i in range(T)]


@pytest.fixture(scope="module", params=["sinusoidal", "rotary"])
def pair(request):
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(arch="decoder", vocab_size=30, d_model=16, n_heads=2, n_layers=2, d_ff=32,
                                          dropout=0.0, positional=request.param)).eval()
    return head_computation_pair(model, torch.randint(1, 30, (T,)), "decoder", 1, 1, 4, causal=False,
                                 head_mask={"decoder": [[1, 0], [1, 1]]})


def test_the_keys_drawn_are_the_strongest_of_either_run(pair):
    base, tog = pair.baseline, pair.toggled
    idx = shown_keys(base, tog, 3)
    strongest = np.maximum(base.weights, tog.weights)
    assert list(idx) == sorted(idx) and len(idx) == 3
    assert strongest[idx].min() >= np.sort(strongest)[-3]
    assert list(shown_keys(base, None, 99)) == list(range(T))


def test_the_figure_draws_the_computations_numbers(pair):
    base, tog = pair.baseline, pair.toggled
    fig = head_computation_figure(base, LABELS, "t4", toggled=tog, top=6)
    idx = shown_keys(base, tog, 6)
    bars = {(t.name, t.xaxis): t for t in fig.data if t.type == "bar"}
    heat = [t for t in fig.data if t.type == "heatmap"]
    rotary = base.q_unrotated is not None
    first = 2 if rotary else 1  # the axes of k_j: after k_j before rotation
    score_ax, weight_ax = c.axis_ref("x", first + 2), c.axis_ref("x", first + 3)
    blocked = [bool(base.blocked_by[j]) for j in idx]  # causal, in the baseline only (query 4)
    # a blocked key has no score: no bar, "−∞" written, its reason in the hover
    assert np.allclose(bars["baseline", score_ax].x, np.where(blocked, 0.0, base.scores[idx]))
    assert list(bars["baseline", score_ax].text) == ["−∞" if b else "" for b in blocked]
    assert all(("no score" in t) == b for t, b in zip(bars["baseline", score_ax].customdata, blocked))
    assert np.allclose(bars["with toggles", score_ax].x, tog.scores[idx])
    assert np.allclose(bars["with toggles", weight_ax].x, tog.weights[idx])
    assert any(blocked) and [col == c.MASKED_COLOR for col in bars["baseline", weight_ax].marker.color] == blocked
    assert not any(col == c.MASKED_COLOR for col in bars["with toggles", weight_ax].marker.color)
    vectors = {t.xaxis: np.asarray(t.z) for t in heat}
    assert np.allclose(vectors[c.axis_ref("x", first)], tog.keys[idx])  # the vectors are the toggled run's
    assert np.allclose(vectors[c.axis_ref("x", first + 1)], tog.products[idx])
    assert np.allclose(vectors[c.axis_ref("x", first + 4)], tog.values[idx])
    if rotary:
        assert np.allclose(vectors["x"], tog.keys_unrotated[idx])
    above = [np.asarray(t.z)[0] for t in heat if np.asarray(t.z).shape[0] == 1]
    assert any(np.allclose(v, tog.q) for v in above) and any(np.allclose(v, tog.weighted_sum) for v in above)
    assert "L1 H1" in fig.layout.title.text and "query 4" in fig.layout.title.text
    # every strip carries its scale: the k_j panel's range is the largest |k| drawn, q's its own
    k_title = fig.layout[c.axis_key("x", first)].title.text
    assert f"+{float(np.abs(tog.keys[idx]).max()):.2g}" in k_title
    assert any(f"±{float(np.abs(tog.q).max()):.2g}" in a.text for a in fig.layout.annotations if a.text.startswith("q"))


def test_bad_input(pair):
    with pytest.raises(ValueError, match="9 key labels for 10 keys"):
        head_computation_figure(pair.baseline, LABELS[:9], "q")
    with pytest.raises(ValueError, match="top must be a positive number"):
        head_computation_figure(pair.baseline, LABELS, "q", top=0)

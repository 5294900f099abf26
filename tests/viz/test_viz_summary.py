"""Difference, mask view, rollout maths, Spearman and the head-importance chart."""

import numpy as np
import pytest

from explorer.viz import (
    attention_rollout,
    difference_heatmap,
    head_importance_chart,
    mask_heatmap,
    rollout_heatmap,
    spearman,
)
from explorer.viz import common as c
from tests.viz.strings import containing

TOKS = ["a", "<i>b</i>", "a"]


def test_difference_is_centred_and_symmetric():
    a = np.array([[0.5, 0.5, 0], [0, 1, 0], [0.2, 0.2, 0.6]])
    b = np.array([[1, 0, 0], [0, 1, 0], [0.2, 0.3, 0.5]])
    fig = difference_heatmap(a, b, TOKS, TOKS, "A vs B")
    tr = fig.data[0]
    np.testing.assert_allclose(np.asarray(tr.z), a - b, atol=1e-6)
    assert (tr.zmin, tr.zmax, tr.zmid) == (-0.5, 0.5, 0.0)
    assert tr.colorscale[0][1] != tr.colorscale[-1][1]  # diverging
    assert list(tr.y) == ["a", "&lt;i&gt;b&lt;/i&gt;", "a·2"]
    assert fig.layout.title.text == "A vs B"
    same = difference_heatmap(a, a, TOKS, TOKS).data[0]
    assert (same.zmin, same.zmax) == (-1.0, 1.0)
    with pytest.raises(ValueError, match="b must have shape"):
        difference_heatmap(a, b[:2], TOKS, TOKS)


def test_mask_heatmap_two_discrete_states():
    mask = np.array([[1, 0, 0], [1, 1, 0], [1, 1, 1]], bool)
    fig = mask_heatmap(mask, TOKS, TOKS, "Causal")
    (trace,) = fig.data
    z = np.asarray(trace.z)
    assert z.dtype == np.uint8 and np.array_equal(z, mask.astype(np.uint8))  # the mask itself, a byte per cell
    assert trace.hovertemplate == "%{y} → %{x}: mask %{z} (1 = may attend, 0 = blocked)<extra></extra>"
    ca = fig.layout.coloraxis
    assert list(ca.colorbar.ticktext) == ["blocked (0)", "allowed (1)"] and (ca.cmin, ca.cmax) == (0, 1)
    assert ca.colorscale[0][1] == c.BLOCKED_COLOR and ca.colorscale[-1][1] == "#2166ac"
    assert "6 of 9 allowed" in fig.layout.title.text
    assert containing(fig, "&lt;i&gt;") and not containing(fig, "<i>")  # the figure's strings, not its JSON


def test_rollout_against_hand_computation():
    # 2 layers, 2 heads, 2 tokens.
    attn = np.array([
        [[[1.0, 0.0], [0.5, 0.5]], [[0.0, 1.0], [0.5, 0.5]]],  # layer 0: mean [[.5,.5],[.5,.5]]
        [[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [1.0, 0.0]]],  # layer 1: mean [[1,0],[.5,.5]]
    ])
    r = attention_rollout(attn)
    # layer 0: (mean + I) row-normalised = [[.75,.25],[.25,.75]]
    np.testing.assert_allclose(r[0], [[0.75, 0.25], [0.25, 0.75]])
    # layer 1: [[2,0],[.5,1.5]]/2 = [[1,0],[.25,.75]]; times layer 0
    np.testing.assert_allclose(r[1], [[0.75, 0.25], [0.375, 0.625]])
    np.testing.assert_allclose(r.sum(-1), 1.0)
    raw = attention_rollout(attn, add_residual=False)
    np.testing.assert_allclose(raw[1], np.array([[1, 0], [0.5, 0.5]]) @ np.full((2, 2), 0.5))


def test_rollout_head_mask_and_all_masked_rows():
    attn = np.zeros((1, 2, 2, 2))
    attn[0, 0] = [[0, 1], [0, 1]]
    attn[0, 1] = [[1, 0], [1, 0]]
    r = attention_rollout(attn, head_mask=np.array([[1, 0]]))
    np.testing.assert_allclose(r[0], [[0.5, 0.5], [0, 1]])
    z = attention_rollout(np.zeros((1, 1, 2, 2)), add_residual=False)
    assert np.isfinite(z).all() and (z == 0).all()
    with pytest.raises(ValueError, match=r"\(L, H, T, T\)"):
        attention_rollout(np.zeros((1, 1, 2, 3)))


def test_rollout_heatmap_slider_and_single_layer():
    r = attention_rollout(np.random.default_rng(0).dirichlet(np.ones(3), size=(3, 2, 3)))
    fig = rollout_heatmap(r, TOKS)
    assert len(fig.data) == 3 and [t.visible for t in fig.data] == [False, False, True]
    assert len(fig.layout.sliders[0].steps) == 3
    assert fig.layout.sliders[0].steps[0].args[0]["visible"] == [True, False, False]
    assert fig.data[0].zmin == 0.0
    assert [t.zmax for t in fig.data] == pytest.approx([r[i].max() for i in range(3)])  # per-layer range
    one = rollout_heatmap(r, TOKS, layer=1)
    assert len(one.data) == 1 and not one.layout.sliders and "layer 1" in one.layout.title.text
    with pytest.raises(ValueError, match="out of range"):
        rollout_heatmap(r, TOKS, layer=3)


@pytest.mark.parametrize("a, b, rho", [
    ([1, 2, 3, 4], [10, 20, 30, 40], 1.0),
    ([1, 2, 3, 4], [4, 3, 2, 1], -1.0),
    ([1, 2, 3, 4, 5], [2, 1, 4, 3, 5], 0.8),  # 1 - 6*4/(5*24)
    ([1, 2, 2, 3], [1, 2, 3, 4], 0.9486832980505138),  # ties get average ranks
])
def test_spearman_hand_cases(a, b, rho):
    assert spearman(a, b) == pytest.approx(rho)


def test_spearman_degenerate():
    assert np.isnan(spearman([1, 1, 1], [1, 2, 3]))
    assert np.isnan(spearman([1], [2]))
    assert spearman(np.eye(2), np.eye(2)) == pytest.approx(1.0)  # (L, H) arrays flatten
    with pytest.raises(ValueError):
        spearman([1, 2], [1, 2, 3])


def test_head_importance_chart_structure():
    exact = np.array([[0.1, 0.5, 0.2], [0.05, 0.3, 0.9]])
    est = np.array([[0.2, 0.4, 0.1], [0.0, 0.35, 1.2]])
    rho = spearman(exact, est)
    fig = head_importance_chart(exact, est, rho)
    assert f"Spearman ρ = {rho:.3f}" in fig.layout.title.text
    h1, h2, sc = fig.data
    assert np.asarray(h1.z).shape == (2, 3) and np.asarray(h2.z).shape == (2, 3)
    np.testing.assert_allclose(np.asarray(h1.customdata), exact, rtol=1e-6)  # hover shows raw values
    assert np.asarray(h2.z).max() == pytest.approx(1.0)
    assert (h1.zmin, h1.zmax) == (0.0, 1.0)  # all positive: sequential scale
    assert list(sc.text) == ["L0H0", "L0H1", "L0H2", "L1H0", "L1H1", "L1H2"]
    signed = head_importance_chart(exact - 0.2, est, float("nan"))
    assert signed.data[0].zmid == 0.0 and signed.data[0].zmin == -1.0
    assert "n/a" in signed.layout.title.text
    with pytest.raises(ValueError, match="estimate"):
        head_importance_chart(exact, est[:1], rho)


@pytest.mark.parametrize("value", [True, False])
def test_mask_heatmap_one_state(value):
    """A mask whose cells are all allowed (or all blocked) is the same one trace."""
    fig = mask_heatmap(np.full((3, 3), value), TOKS, TOKS)
    (trace,) = fig.data
    assert (np.asarray(trace.z) == int(value)).all()
    assert f"({9 if value else 0} of 9 allowed)" in fig.layout.title.text


def test_difference_beyond_64_tokens_is_int8_percent_of_the_largest_change():
    rng = np.random.default_rng(2)
    a, b = rng.dirichlet(np.ones(80), 80), rng.dirichlet(np.ones(80), 80)
    toks = [f"t{i}" for i in range(80)]
    tr = difference_heatmap(a, b, toks, toks, a_name="toggled", b_name="baseline").data[0]
    z, m = np.asarray(tr.z), np.abs(a - b).max()
    assert z.dtype == np.int8 and np.abs(z / 100 * m - (a - b)).max() <= 0.005 * m + 1e-6
    assert (tr.zmin, tr.zmax, tr.zmid) == (-100, 100, 0)
    assert tr.hovertemplate == f"%{{y}} → %{{x}}: ≈ %{{z:+d}}% of {m:.3g} (toggled − baseline)<extra></extra>"


def test_rollout_layers_pooled_to_the_cell_budget():
    r = attention_rollout(np.random.default_rng(0).dirichlet(np.ones(100), size=(4, 2, 100)))
    toks = [f"t{i}" for i in range(100)]
    fig = rollout_heatmap(r, toks, max_cells=4 * 70 * 70)  # 70 cells a side per layer: percent codes
    assert [np.asarray(t.z).shape for t in fig.data] == [(70, 70)] * 4
    top = r[3].max()
    assert fig.data[3].zmax == 100 and np.asarray(fig.data[3].z).max() == 100  # each layer: 0 .. its max
    assert fig.data[3].hovertemplate.endswith(f"≈ %{{z:d}}% of {top:.3g} (max in block)<extra></extra>")
    assert fig.data[0].y[:3] == ("token 0: t0", "token 1: t1", "tokens 2–3: t2 … t3")
    assert [np.asarray(t.z).shape for t in rollout_heatmap(r, toks).data] == [(100, 100)] * 4  # default: full


def test_mask_heatmap_pooled_shows_the_allowed_share_of_each_block():
    """More keys than pixels: a cell is a block of keys, coloured by the share of it that is allowed, so one
    blocked key (a custom "block token" mask) still shows."""
    t = 1024
    toks = [f"t{i}" for i in range(t)]
    m = np.ones((t, t), bool)
    m[:, 7] = False
    tr = mask_heatmap(m, toks, toks).data[0]  # default width 820: blocks of 1-2 keys
    z = np.asarray(tr.z)
    assert z.shape[0] == t and z.shape[1] < t and z.dtype == np.uint8
    col = next(i for i, name in enumerate(tr.x) if name.startswith("tokens ") and "–" in name
               and int(name.split()[1].split("–")[0]) <= 7 <= int(name.split()[1].split("–")[1].rstrip(":")))
    assert (z[:, col] == 50).all() and (np.delete(z, col, axis=1) == 100).all()
    assert tr.hovertemplate == "%{y} → %{x}: ≈ %{z}% of the block allowed<extra></extra>"


def test_rollout_from_the_head_average_is_the_same():
    from explorer.viz import attention_rollout, head_average, rollout_from_average

    rng = np.random.default_rng(4)
    attn = rng.random((3, 4, 7, 7))
    attn /= attn.sum(-1, keepdims=True)
    hm = np.ones((3, 4))
    hm[1, 2] = 0
    mean = head_average(attn, hm)
    assert mean.shape == (3, 7, 7)
    np.testing.assert_allclose(mean[1], attn[1, [0, 1, 3]].mean(0), atol=1e-6)
    np.testing.assert_allclose(rollout_from_average(mean), attention_rollout(attn, head_mask=hm), atol=1e-12)

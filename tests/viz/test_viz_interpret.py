"""Figures of explorer.interpret: role small multiples, the patching map, the logit lens. Values reach
the figure unchanged, labels are escaped, colour scales are what the docstrings say; drawing runs no model."""

import numpy as np
import pytest
import torch

from explorer.interpret import LogitLens, Patching
from explorer.viz import common as c
from explorer.viz import lens_figure, patching_figure, role_figure
from tests.viz.strings import containing

TOKS = ["<b>a</b>", "cat", "a", "$x$"]


def test_role_figure_one_panel_per_role_on_a_zero_to_one_scale():
    scores = {"previous": torch.tensor([[1.0, 0.25, 0.0], [0.1, 0.2, 0.3]]),
              "induction": torch.tensor([[0.0, 0.0, 0.0], [0.05, 0.93, 0.4]]),
              "<role>": torch.zeros(2, 3)}
    fig = role_figure(scores)
    assert len(fig.data) == 3
    for trace, (role, s) in zip(fig.data, scores.items()):
        np.testing.assert_array_equal(np.asarray(trace.z), s.numpy())
        assert (trace.zmin, trace.zmax) == (0.0, 1.0) and trace.colorscale[0][1] == c.WEIGHT_SCALE[0][1]
        assert list(trace.x) == ["H0", "H1", "H2"] and list(trace.y) == ["L0", "L1"]
    assert sum(t.showscale is not False for t in fig.data) == 1  # one shared colour bar
    titles = [a.text for a in fig.layout.annotations]
    assert "induction (best L1 H1: 0.93)" in titles and "previous token (best L0 H0: 1.00)" in titles
    assert any("&lt;role&gt;" in t for t in titles) and not containing(fig, "<role>")
    assert fig.data[1].text[1][1] == "0.93"
    with pytest.raises(ValueError, match="like the other roles"):
        role_figure({"a": torch.zeros(2, 3), "b": torch.zeros(3, 2)})


def test_patching_figure_heads_and_residual_share_one_diverging_scale():
    heads, residual = torch.tensor([[0.5, -0.25], [1.0, 0.0]]), torch.zeros(3, 4)
    residual[0, 2], residual[2, 3] = 1.0, 1.5
    p = Patching(heads, residual, 3.0, -1.0, (7, 9), "decoder")
    fig = patching_figure(p, TOKS, answer_labels=("<b>", "cat"))
    head_trace, res_trace = fig.data
    np.testing.assert_array_equal(np.asarray(head_trace.z), heads.numpy())
    np.testing.assert_array_equal(np.asarray(res_trace.z), residual.numpy())
    for t in fig.data:  # centred at 0, symmetric, as large as the largest |share| (at least 1)
        assert (t.zmin, t.zmax) == (-1.5, 1.5) and [list(x) for x in t.colorscale] == c.DIVERGING_SCALE
    assert list(res_trace.x) == ["&lt;b&gt;a&lt;/b&gt;", "cat", "a", "&#36;x&#36;"]
    assert list(res_trace.y) == ["L0 in (embeddings)", "L1 in", "output"]
    caption = [a.text for a in fig.layout.annotations if "metric" in a.text][0]
    assert "logit[&lt;b&gt;] − logit[cat]" in caption and "clean +3.000" in caption and "corrupted -1.000" in caption
    cross = patching_figure(Patching(heads, residual, 3.0, -1.0, (7, 9), "decoder", -heads), TOKS)
    assert len(cross.data) == 3 and "#7" in cross.to_json()
    np.testing.assert_array_equal(np.asarray(cross.data[1].z), -heads.numpy())
    with pytest.raises(ValueError, match="residual must have shape"):
        patching_figure(p, TOKS[:3])


def test_lens_figure_top_tokens_probabilities_and_ranks():
    top_ids = torch.tensor([[[1, 2, 3, 1]], [[0, 2, 2, 1]]])  # (L+1=2, B=1, T=4)
    probs = torch.tensor([[[0.1, 0.2, 0.3, 0.4]], [[0.5, 0.6, 0.7, 0.8]]])
    ranks = torch.tensor([[[3, 0, 120, 0]], [[0, 0, 0, 0]]])
    lens = LogitLens(top_ids, probs, top_ids[-1], probs, ranks, torch.zeros(1, 4, 5))
    vocab = ["<s>", "x", "y", "$z$", "w"]
    fig = lens_figure(lens, TOKS, token_text=vocab)
    cells, rank = fig.data
    np.testing.assert_allclose(np.asarray(cells.z), probs[:, 0].numpy())
    assert (cells.zmin, cells.zmax) == (0.0, 1.0)
    assert [list(r) for r in cells.customdata] == [["x", "y", "&#36;z&#36;", "x"], ["&lt;s&gt;", "y", "y", "x"]]
    assert list(cells.text[1]) == ["&lt;s&gt;", "y", "y", "x"]
    long = lens_figure(lens, TOKS, token_text=lambda i: "<" * 12).data[0]
    assert long.text[0][0] == "&lt;" * 7 + "…" and long.customdata[0][0] == "&lt;" * 12  # cut before escaping
    assert list(cells.y) == ["embeddings", "after L0"]
    np.testing.assert_allclose(np.asarray(rank.z), np.log10(ranks[:, 0].numpy() + 1.0), rtol=1e-6)
    assert [list(map(list, r)) for r in rank.customdata][0][2] == [120, "y"]  # rank and the final prediction
    assert containing(fig, "&lt;s&gt;") and not containing(fig, "<s>")  # the vocabulary's "<s>", as text
    assert containing(fig, "&lt;b&gt;a&lt;/b&gt;") and not containing(fig, "<b>a")  # the input token "<b>a</b>"
    assert "#3" in lens_figure(lens, TOKS).to_json()  # no vocabulary: ids
    with pytest.raises(ValueError, match="labels"):
        lens_figure(lens, TOKS[:2])

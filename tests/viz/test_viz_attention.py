"""One-head heatmap, cross and decoder views: axes, ranges, masked cells, head off, escaping."""

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from explorer.viz import cross_attention_heatmap, decoder_self_attention_heatmap, head_heatmap

TOKS = ["the", "<b>cat</b>", "the", "<img src=x onerror=alert(1)>"]


def rows(t):
    w = np.random.default_rng(0).random((t, t))
    return w / w.sum(-1, keepdims=True)


def test_axes_in_reading_order_with_repeats_kept_apart():
    fig = head_heatmap(rows(4), TOKS, TOKS, title="L0 H1")
    tr = fig.data[0]
    assert isinstance(tr, go.Heatmap)
    assert np.asarray(tr.z).shape == (4, 4)
    want = ["the", "&lt;b&gt;cat&lt;/b&gt;", "the·2", "&lt;img src=x onerror=alert(1)&gt;"]
    assert list(tr.y) == want and list(tr.x) == want
    assert list(fig.layout.yaxis.tickvals) == want
    assert fig.layout.yaxis.autorange == "reversed"  # first query on top
    assert fig.layout.xaxis.type == "category" and fig.layout.yaxis.type == "category"
    assert fig.layout.xaxis.title.text == "key (attended to)"
    assert fig.layout.yaxis.title.text == "query (attending)"


def test_fixed_colour_range_and_hover_text():
    tr = head_heatmap(rows(4), TOKS, TOKS).data[0]
    assert (tr.zmin, tr.zmax) == (0.0, 1.0)
    assert tr.hovertemplate.startswith("%{y} → %{x}: %{z:.3f}")


def test_no_raw_html_anywhere_in_figure_json():
    js = head_heatmap(rows(4), TOKS, TOKS, mask=np.tril(np.ones((4, 4), bool)), head_off=True).to_json()
    for raw in ["<b>cat", "<img", "onerror=alert(1)>"]:
        assert raw not in js
    assert "&lt;img src=x onerror=alert(1)&gt;" in js


def test_masked_cells_drawn_by_second_grey_trace():
    w = rows(4)
    mask = np.tril(np.ones((4, 4), bool))
    fig = head_heatmap(w, TOKS, TOKS, mask=mask)
    main, masked = fig.data
    z_main, z_mask = np.asarray(main.z), np.asarray(masked.z)
    assert np.isnan(z_main[0, 1]) and z_main[1, 0] == pytest.approx(w[1, 0], rel=1e-6)
    assert np.isnan(z_mask[1, 0]) and z_mask[0, 1] == pytest.approx(w[0, 1], rel=1e-6)
    assert masked.showscale is False and "masked" in masked.hovertemplate
    assert {c[1] for c in masked.colorscale} == {"#bdbdbd"}
    assert any("masked" in a.text for a in fig.layout.annotations)
    # A mask that allows everything adds nothing.
    assert len(head_heatmap(w, TOKS, TOKS, mask=np.ones((4, 4), bool)).data) == 1


def test_switched_off_head_marked():
    fig = head_heatmap(rows(4), TOKS, TOKS, head_off=True, title="L1 H2")
    assert fig.layout.title.text == "L1 H2 (switched off)"
    assert fig.data[0].opacity < 1
    assert fig.layout.shapes[0].line.dash == "dash"
    assert any("switched off" in a.text for a in fig.layout.annotations)


def test_torch_input_and_shape_errors():
    fig = head_heatmap(torch.tensor(rows(4)), TOKS, TOKS)
    assert np.asarray(fig.data[0].z).dtype == np.float32
    with pytest.raises(ValueError, match=r"weights must have shape"):
        head_heatmap(rows(4), TOKS[:3], TOKS)
    with pytest.raises(ValueError, match=r"mask must have shape"):
        head_heatmap(rows(4), TOKS, TOKS, mask=np.ones((4, 3), bool))


def test_height_grows_with_tokens_within_bounds_and_ticks_thin_out():
    small = head_heatmap(rows(4), TOKS, TOKS)
    big_toks = [f"w{i % 7}" for i in range(128)]
    big = head_heatmap(rows(128), big_toks, big_toks)
    assert 360 <= small.layout.height < big.layout.height <= 900
    assert len(big.layout.yaxis.tickvals) < 128
    assert len(big.data[0].y) == 128  # every row still a separate category


def test_cross_attention_axes_and_shape():
    src = ["a", "b", "c", "a", "<pad>"]
    gen = ["x", "y", "x"]
    w = np.full((3, 5), 0.2)
    fig = cross_attention_heatmap(w, gen, src, mask=np.array([[1, 1, 1, 1, 0]] * 3, bool))
    assert np.asarray(fig.data[0].z).shape == (3, 5)
    assert list(fig.data[0].y) == ["x", "y", "x·2"]
    assert list(fig.data[0].x) == ["a", "b", "c", "a·2", "&lt;pad&gt;"]
    assert "source" in fig.layout.xaxis.title.text and "generated" in fig.layout.yaxis.title.text


def test_decoder_self_attention_defaults_to_causal_mask():
    gen = ["<s>", "2024", "-", "01"]
    fig = decoder_self_attention_heatmap(rows(4), gen)
    assert len(fig.data) == 2
    masked = np.asarray(fig.data[1].z)
    assert np.isnan(masked[1, 0]) and not np.isnan(masked[0, 1])  # upper triangle masked
    assert "generated" in fig.layout.yaxis.title.text
    assert len(decoder_self_attention_heatmap(rows(4), gen, causal=False).data) == 1

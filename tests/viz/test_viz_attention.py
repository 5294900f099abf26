"""One-head heatmap, cross and decoder views: axes, ranges, masked cells, head off, escaping."""

import re

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from explorer.viz import cross_attention_heatmap, decoder_self_attention_heatmap, head_heatmap
from tests.viz.strings import containing

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
    """Every string of the figure (its JSON decoded: the JSON text itself writes "<" as "\\u003c")."""
    fig = head_heatmap(rows(4), TOKS, TOKS, mask=np.tril(np.ones((4, 4), bool)), head_off=True)
    for raw in ["<b>cat", "<img", "onerror=alert(1)>"]:
        assert not containing(fig, raw), raw
    assert containing(fig, "&lt;img src=x onerror=alert(1)&gt;") and containing(fig, "&lt;b&gt;cat&lt;/b&gt;")


def covered(fig, shape):
    """Cells covered in grey: by the path (category positions: cell i spans i - 0.5 .. i + 0.5), or, when
    that would cost more bytes (small figures), by a second heatmap that is grey where covered."""
    out = np.zeros(shape, bool)
    for tr in fig.data[1:]:
        assert tr.name == "masked" and tr.hoverinfo == "skip" and tr.colorscale[-1][1] == "#bdbdbd"
        out |= np.asarray(tr.z).astype(bool)
    for sh in fig.layout.shapes:
        if sh.type != "path":
            continue
        for x0, y0, x1, y1 in re.findall(r"M([-\d.]+) ([-\d.]+)H([-\d.]+)V([-\d.]+)H[-\d.]+Z", sh.path):
            out[round(float(y0) + 0.5):round(float(y1) + 0.5), round(float(x0) + 0.5):round(float(x1) + 0.5)] = True
    return out


def test_masked_cells_covered_by_a_grey_path_over_one_trace():
    w = rows(4)
    mask = np.tril(np.ones((4, 4), bool))
    fig = head_heatmap(w, TOKS, TOKS, mask=mask)
    np.testing.assert_allclose(np.asarray(fig.data[0].z), w, rtol=1e-6)  # every weight, masked ones too
    np.testing.assert_array_equal(covered(fig, (4, 4)), ~mask)  # 4 x 4: the cheaper cover is a heatmap
    assert any("masked" in a.text for a in fig.layout.annotations)
    t = 40
    toks = [f"w{i}" for i in range(t)]
    big = head_heatmap(rows(t), toks, toks, mask=np.tril(np.ones((t, t), bool)))
    (grey,) = big.layout.shapes  # 40 x 40: the path is cheaper
    assert len(big.data) == 1 and grey.fillcolor == "#bdbdbd" and grey.line.width == 0 and grey.layer == "above"
    np.testing.assert_array_equal(covered(big, (t, t)), np.triu(np.ones((t, t), bool), 1))
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
    np.testing.assert_array_equal(covered(fig, (4, 4)), np.triu(np.ones((4, 4), bool), 1))  # upper triangle
    assert "generated" in fig.layout.yaxis.title.text
    assert len(decoder_self_attention_heatmap(rows(4), gen, causal=False).data) == 1


def test_beyond_64_tokens_weights_are_one_byte_percent_codes():
    t = 128
    w = rows(t)
    toks = [f"w{i}" for i in range(t)]
    tr = head_heatmap(w, toks, toks).data[0]
    z = np.asarray(tr.z)
    assert z.dtype == np.uint8 and z.shape == (t, t)
    np.testing.assert_array_equal(z, np.rint(w * 100))
    assert (tr.zmin, tr.zmax) == (0, 100)  # colours of the weights rounded to 0.01
    assert tr.hovertemplate == "%{y} → %{x}: ≈ %{z:d}%<extra></extra>"
    assert list(tr.colorbar.ticktext) == ["0", "0.2", "0.4", "0.6", "0.8", "1"]  # weight units


def test_full_resolution_up_to_max_side_then_block_maxima():
    t = 20
    w = rows(t)
    toks = [f"w{i}" for i in range(t)]
    mask = np.tril(np.ones((t, t), bool))
    full = head_heatmap(w, toks, toks, mask=mask, max_side=20)
    assert np.asarray(full.data[0].z).shape == (20, 20) and "block" not in full.data[0].hovertemplate
    fig = head_heatmap(w, toks, toks, mask=mask, max_side=8)  # 20 tokens -> 8 blocks of 2 or 3
    tr = fig.data[0]
    z = np.asarray(tr.z)
    assert z.shape == (8, 8)
    np.testing.assert_allclose(z[0, 0], w[:2, :2].max(), rtol=1e-6)
    np.testing.assert_allclose(z[1, 2], w[2:5, 5:7].max(), rtol=1e-6)
    assert tr.y[0] == "tokens 0–1: w0 … w1" and tr.x[-1] == "tokens 17–19: w17 … w19"
    assert tr.hovertemplate.endswith("(max in block)<extra></extra>")
    # Only blocks that are masked through and through are grey: the diagonal blocks keep their colour.
    np.testing.assert_array_equal(covered(fig, (8, 8)), np.triu(np.ones((8, 8), bool), 1))


def test_a_1024_token_head_is_full_resolution_where_it_has_the_pixels():
    """Rows: all 1,024 (the figure grows to a pixel per row). Columns: as many as the plot is wide, since
    plotly drops or fades cells thinner than a pixel; all 1,024 at a width of 1,300 px."""
    t = 1024
    toks = [f"w{i}" for i in range(t)]
    w = np.full((t, t), 1 / t, dtype=np.float32)
    w[:, 0] = 0.5  # a first-token column: kept by max pooling
    mask = np.tril(np.ones((t, t), bool))
    fig = head_heatmap(w, toks, toks, mask=mask, width=1300)
    z = np.asarray(fig.data[0].z)
    assert z.shape == (t, t) and z.dtype == np.uint8
    lay = fig.layout
    assert lay.height - lay.margin.t - lay.margin.b >= t and lay.width - lay.margin.l - lay.margin.r - 70 >= t
    assert len(fig.layout.shapes[0].path) < 40_000  # the causal cover: one rectangle per row
    narrow = head_heatmap(w, toks, toks, mask=mask)  # default width 820: ~600 columns of blocks of 1-2 keys
    z = np.asarray(narrow.data[0].z)
    plot_w = 820 - narrow.layout.margin.l - narrow.layout.margin.r - 70
    assert z.shape == (t, plot_w) and (z[:, 0] == 50).all()
    assert narrow.data[0].x[:2] == ("token 0: w0", "tokens 1–2: w1 … w2") and narrow.data[0].y[5] == "w5"


@pytest.mark.parametrize("n", [23, 40, 64])
def test_every_token_is_labelled_up_to_64_a_side(n):
    """Up to 64 tokens each one has its tick on both axes (the font smaller where they are close); beyond, thinned."""
    toks = [f"w{i}" for i in range(n)]
    fig = head_heatmap(rows(n), toks, toks)
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert list(axis.ticktext) == toks and list(axis.tickvals) == list(fig.data[0].x)
        assert 7 <= axis.tickfont.size <= 11
    more = [f"w{i}" for i in range(65)]
    assert len(head_heatmap(rows(65), more, more).layout.xaxis.tickvals) < 65


def test_a_switched_off_heads_note_starts_at_the_plots_left_edge():
    """Anchored right, a narrow (phone) figure cut its start ("ead switched off"); it sits above the mask's note."""
    mask = np.tril(np.ones((4, 4), bool))
    fig = head_heatmap(rows(4), TOKS, TOKS, mask=mask, head_off=True)
    notes = {a.text: a for a in fig.layout.annotations}
    off = next(a for t, a in notes.items() if t.startswith("head switched off"))
    assert off.x == 0 and off.xanchor == "left" and off.yshift == 16

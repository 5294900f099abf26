"""Label handling, escaping, tick thinning and shape checks shared by all figures."""

import numpy as np
import pytest
import torch

from explorer.viz import common as c


def test_unique_labels_suffixes_repeats_in_order():
    assert c.unique_labels(["the", "cat", "the", "sat", "the"]) == ["the", "cat", "the·2", "sat", "the·3"]


def test_unique_labels_never_collide_with_real_tokens():
    out = c.unique_labels(["the", "the", "the·2", "the·2"])
    assert len(set(out)) == 4
    assert out[0] == "the" and out[2] == "the·2"  # the real "the·2" keeps its text


def test_blank_tokens_become_visible():
    assert c.unique_labels(["", " ", "  "]) == ["∅", "␣", "␣␣"]


def test_escape_html_and_latex():
    assert c.escape("<b>x</b>") == "&lt;b&gt;x&lt;/b&gt;"
    assert c.escape("<br>") == "&lt;br&gt;"
    assert c.escape("$x$") == "&#36;x&#36;"
    assert c.escape('a"&') == "a&quot;&amp;"


def test_display_labels_escape_after_making_unique():
    assert c.display_labels(["<s>", "<s>"]) == ["&lt;s&gt;", "&lt;s&gt;·2"]


def test_tick_step_thins_only_when_needed():
    assert c.tick_step(20, 400) == 1
    assert c.tick_step(128, 560) == 4  # 560 px / 14 px = 40 labels fit
    assert c.tick_step(0, 100) == 1


def test_category_ticks_keep_every_kth_and_cut_long_labels():
    toks = [f"t{i}" for i in range(10)] + ["a" * 40]
    names = [c.escape(t) for t in toks]
    ax = c.category_ticks(names, toks, room_px=14 * 6)  # room for 6 labels -> every 2nd
    assert ax["type"] == "category"
    assert ax["tickvals"] == names[::2]
    assert ax["ticktext"][-1] == "a" * 15 + "…"


def test_to_numpy_accepts_torch_with_grad_and_bfloat16():
    t = torch.ones(2, 3, requires_grad=True)
    assert c.to_numpy(t).shape == (2, 3)
    assert c.to_numpy(torch.ones(2, dtype=torch.bfloat16)).dtype == np.float32
    assert c.to_numpy(torch.tensor([True, False])).dtype == bool


def test_check_shape_message_names_the_expectation():
    with pytest.raises(ValueError, match=r"weights must have shape .* = \(3, \?\); got \(2, 4\)"):
        c.check_shape("weights", np.zeros((2, 4)), (3, None), "(Tq, Tk)")


def test_escape_matches_html_escape_plus_dollar():
    import html

    from explorer.viz.common import escape

    for text in ["<b>x</b>", "a & b", "\"q\" 'q'", "$x$", "plain", "", "é ✓ 日本", 12]:
        assert escape(text) == html.escape(str(text), quote=True).replace("$", "&#36;")


def test_a_long_message_is_wrapped_and_still_escaped():
    """Plotly never wraps an annotation: a long message is split into lines that fit a half-width plot."""
    from explorer import viz
    from explorer.viz.common import MESSAGE_LINE, message_text

    text = "A decoder-only model has no cross-attention: its prompt is part of the <self-attention> on the left."
    fig = viz.message_figure(text)
    lines = fig.layout.annotations[0].text.split("<br>")
    assert len(lines) == 2 and all(len(line) <= MESSAGE_LINE + 8 for line in lines)  # "&lt;" counts 4 for "<"
    assert "<self" not in fig.layout.annotations[0].text and "&lt;self-attention&gt;" in message_text(fig)
    assert message_text(fig).replace("&lt;", "<").replace("&gt;", ">") == text

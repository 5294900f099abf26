"""The Features tab's figures (explorer.viz.latents): token text is escaped everywhere (Plotly's pseudo-HTML and the
examples' HTML), the heatmap's columns name their latents for the page script, and shapes are checked."""

from __future__ import annotations

import numpy as np
import pytest

from explorer import viz
from explorer.viz.common import message_text

TOKENS = ["<b>x</b>", "the", "cat", "the", "$5$"]


def test_the_heatmaps_columns_are_latent_numbers_and_its_tokens_escaped():
    values = np.array([[0, 1], [2, 0], [0, 0], [3, 1], [0, 0.5]], np.float32)
    fig = viz.latent_heatmap(TOKENS, [12, 7], values, chosen=7)
    trace = fig.data[0]
    assert list(trace.x) == ["latent 12", "latent 7"] and trace.y[0] == "&lt;b&gt;x&lt;/b&gt;"
    assert trace.y[3] == "the·2" and trace.zmin == 0 and trace.zmax == 3
    np.testing.assert_array_equal(np.asarray(trace.z), values)  # exact values in the hover
    assert fig.layout.shapes[0].x0 == 0.5  # the chosen latent's column outlined
    with pytest.raises(ValueError, match="values must have shape"):
        viz.latent_heatmap(TOKENS, [1], values)
    assert "No latent fires" in message_text(viz.latent_heatmap(TOKENS, [], np.zeros((5, 0))))


def test_the_strip_and_the_histogram():
    strip = viz.latent_strip(TOKENS, [0, 1.5, 0, 2, 0], 3)
    assert "Latent 3 along" in strip.layout.title.text and list(strip.data[0].y) == [0, 1.5, 0, 2, 0]
    hist = viz.latent_histogram(np.linspace(0, 4, 5), [3, 0, 1, 2], density=0.012, tokens=500, sentence_max=2.5)
    assert "fires on 1.20% of 500 tokens" in hist.layout.title.text and list(hist.data[0].x) == [0.5, 1.5, 2.5, 3.5]
    assert hist.layout.shapes[0].x0 == 2.5
    with pytest.raises(ValueError, match="one more value"):
        viz.latent_histogram([0, 1], [1, 2], density=0.1, tokens=10)


def test_examples_are_text_with_every_token_escaped():
    rows = [viz.LatentExampleRow(["<script>", "a", "&amp;"], [0.0, 2.0, 1.0], 1, 2.0, 4, 9),
            viz.LatentExampleRow(["b"], [0.5], 0, 0.5, 7, 0)]
    html = viz.examples_html(rows)
    assert "<script>" not in html and "&lt;script&gt;" in html and "&amp;amp;" in html
    assert html.count('class="tok"') == 4 and "rgba(217, 72, 1, 1.00)" in html and "rgba(217, 72, 1, 0.25)" in html
    assert html.count("outline") == 2 and 'title="text 4, token 9"' in html
    assert "never fires" in viz.examples_html([])
    with pytest.raises(ValueError, match="one activation per token"):
        viz.examples_html([viz.LatentExampleRow(["a"], [1.0, 2.0], 0, 1.0, 0, 0)])


def _luminance(rgb):
    c = [x / 255 for x in rgb]
    c = [x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in c]
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]


def test_an_example_tokens_text_has_aa_contrast_on_every_shade():
    """WCAG AA (4.5:1) for the token text over its shade at every activation, the darkest (alpha 1) included: the
    shade is SHADE at alpha `share` over the white page."""
    from explorer.viz.latents import SHADE, TOKEN_TEXT

    text = tuple(int(TOKEN_TEXT[i:i + 2], 16) for i in (1, 3, 5))
    assert f"color: {TOKEN_TEXT}" in viz.examples_html([viz.LatentExampleRow(["a"], [1.0], 0, 1.0, 0, 0)])
    for share in np.linspace(0, 1, 21):
        shade = [share * s + (1 - share) * 255 for s in SHADE]
        hi, lo = sorted((_luminance(shade), _luminance(text)), reverse=True)
        assert (hi + 0.05) / (lo + 0.05) >= 4.5, (share, shade)
    # the grey-800 of the theme's text fails on the darkest shade: the check can fail
    hi, lo = _luminance(SHADE), _luminance((0x1F, 0x29, 0x37))
    assert (hi + 0.05) / (lo + 0.05) < 4.5

"""Bytes of the figures one Run sends (issue 16): at 128 tokens on a MiniLM-shaped model (6 layers x 12
heads) the attention figures together stay under 1/100 of BertViz's 53.4 MB model view of the same input.

The set is what the app's attention views send: the mask, the chosen head, its baseline and the
difference (a toggle is active), the all-heads overview and the chosen head again, large. The JSON is
`figure_json`'s, what gr.Plot sends.
"""

from __future__ import annotations

import numpy as np
import pytest

from explorer import viz

BERTVIZ_128_BYTES = 53_400_000  # BertViz model view, all-MiniLM-L6-v2, 122-128 tokens (BENCHMARKS.md)
BUDGET = BERTVIZ_128_BYTES // 100
WORDS = "the cat sat on a mat and the dog ran to the park while one bird sang in a tree near my house".split()


def attention(layers: int, heads: int, t: int, seed: int = 0, causal: bool = False) -> np.ndarray:
    """(L, H, T, T) softmax rows, peaked like real attention."""
    x = np.random.default_rng(seed).standard_normal((layers, heads, t, t), dtype=np.float32) * 2.0
    if causal:
        x = np.where(np.tril(np.ones((t, t), bool)), x, -np.inf)
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def run_figures(layers: int, heads: int, t: int, causal: bool) -> dict[str, str]:
    a, b = attention(layers, heads, t, 0, causal), attention(layers, heads, t, 1, causal)
    toks = ["[CLS]"] + [WORDS[i % len(WORDS)] for i in range(t - 2)] + ["[SEP]"]
    mask = np.tril(np.ones((t, t), bool)) if causal else np.ones((t, t), bool)
    head_mask = np.ones((layers, heads))
    head_mask[0, 0] = 0
    figs = {
        "mask": viz.mask_heatmap(mask, toks, toks),
        "head": viz.head_heatmap(a[1, 3], toks, toks, mask=mask, title="Toggled: layer 1, head 3"),
        "baseline": viz.head_heatmap(b[1, 3], toks, toks, mask=mask, title="Baseline: layer 1, head 3"),
        "difference": viz.difference_heatmap(a[1, 3], b[1, 3], toks, toks, a_name="toggled", b_name="baseline"),
        "overview": viz.attention_overview(a, toks, toks, head_mask=head_mask),
        "large head": viz.head_heatmap(a[1, 3], toks, toks, mask=mask, title="Layer 1, head 3"),
    }
    return {name: viz.figure_json(fig) for name, fig in figs.items()}


@pytest.mark.parametrize("causal", [False, True])
def test_a_run_at_128_tokens_sends_under_a_hundredth_of_bertviz(causal):
    sizes = {name: len(text.encode()) for name, text in run_figures(6, 12, 128, causal).items()}
    total = sum(sizes.values())
    assert total <= BUDGET, sizes
    # Where the bytes are: about one byte per cell (1.33 in base64) plus the token names.
    for name in ("head", "baseline", "difference", "large head", "mask"):
        assert sizes[name] < 1.33 * 128 * 128 + 12_000, (name, sizes[name])
    assert sizes["overview"] < 1.34 * viz.overview.MAX_CELLS + 100_000  # names: ~1,000 rows and columns, twice
    print(f"\n128 tokens, 6 x 12 heads, {'causal' if causal else 'no'} mask: {total:,} bytes {sizes}")


def test_the_same_figures_as_float32_would_not_fit(monkeypatch):
    """The bound above is a real one: the float32 form of the same figures (what was sent before) breaks it."""
    monkeypatch.setattr("explorer.viz.encode.EXACT_CELLS", 10**9)  # every heatmap exact, float32
    total = sum(len(text.encode()) for text in run_figures(6, 12, 128, causal=True).values())
    assert total > 2 * BUDGET


def test_a_1024_token_head_view_is_full_resolution_under_1_5_mb():
    text = viz.figure_json(viz.head_heatmap(attention(1, 1, 1024, causal=True)[0, 0], [f"w{i}" for i in range(1024)],
                                            [f"w{i}" for i in range(1024)], mask=np.tril(np.ones((1024, 1024), bool))))
    assert len(text) < 1_500_000

"""Bytes of every figure kind and of each tab of the app, at 128 / 512 / 1,024 tokens, next to BertViz.

Shapes: attention (L, H, T, T) for two model shapes: MiniLM (6 layers x 12 heads, an encoder: no
mask) and GPT-2 small (12 x 12, a decoder: causal mask). The attention is synthetic (softmax of
random logits, peaked like real attention; a second draw is the "baseline"), since the bytes of a
figure depend on its shape and token names, not on the weights: typed arrays have a fixed size per
cell. Each figure is built as the app builds it (its default width) and measured as `figure_json`
text, what gr.Plot sends. BertViz: `model_view(...)["html_action"="return"]` on the same attention
(its data inlined in the HTML) up to `bertviz_max` tokens and where the memory it needs to write the HTML
(~240 bytes per attention value) is available; beyond, not measured, with the reason.

Tabs are groups of the app's plots (explorer/app/ui.py today): the attention tab (mask, chosen head,
baseline and difference, which are one-line messages without a toggle), the all-heads tab (overview
and the chosen head again), the rollout tab; "attention figures" is the set the issue's 1/100 goal
names (mask, head, baseline, difference, overview, large head).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.common import WORDS

SHAPES = {"MiniLM-shaped (6 x 12, encoder)": (6, 12, False), "GPT-2-small-shaped (12 x 12, decoder)": (12, 12, True)}
ATTENTION_SET = ("mask", "head", "baseline", "difference", "overview", "large head")
TABS = {
    "attention, no toggle": ("mask", "head", "message", "message"),
    "attention, head off": ("mask", "head", "baseline", "difference"),
    "all heads": ("overview", "large head"),
    "rollout": ("rollout",),
    "attention figures (issue 16)": ATTENTION_SET,
}


def attention(layers: int, heads: int, t: int, seed: int = 0, causal: bool = False) -> np.ndarray:
    """(L, H, T, T) float32 rows that sum to 1, peaked like real attention (causal: no weight ahead)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((layers, heads, t, t), dtype=np.float32) * 2.0
    if causal:
        x[..., np.triu(np.ones((t, t), bool), 1)] = -np.inf
    x -= x.max(-1, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(-1, keepdims=True)
    return x


def tokens(t: int) -> list[str]:
    return ["[CLS]"] + [WORDS[i % len(WORDS)] for i in range(t - 2)] + ["[SEP]"]


def builders(layers: int, heads: int, t: int, causal: bool, seed: int = 0) -> dict[str, Callable[[], Any]]:
    """One figure of each kind, as the app makes it (head L1 H3 chosen, head L0 H0 switched off)."""
    from explorer import viz

    lay, hd = min(1, layers - 1), min(3, heads - 1)  # the chosen head (L1 H3 when the model has it)
    a, b = attention(layers, heads, t, seed, causal), attention(layers, heads, t, seed + 1, causal)
    toks = tokens(t)
    mask = np.tril(np.ones((t, t), bool)) if causal else np.ones((t, t), bool)
    off = np.ones((layers, heads))
    off[0, 0] = 0
    rng = np.random.default_rng(2)
    gen = min(t, 32)  # generation views: 32 generated tokens over the prompt
    pe = viz.sinusoidal_table(min(t, 512), 64)  # the positional tab: up to 512 positions
    return {
        "mask": lambda: viz.mask_heatmap(mask, toks, toks, title="Mask"),
        "head": lambda: viz.head_heatmap(a[lay, hd], toks, toks, mask=mask, title=f"Toggled: layer {lay}, head {hd}"),
        "baseline": lambda: viz.head_heatmap(b[lay, hd], toks, toks, mask=mask, title=f"Baseline: layer {lay}, head {hd}"),
        "difference": lambda: viz.difference_heatmap(a[lay, hd], b[lay, hd], toks, toks, a_name="toggled", b_name="baseline"),
        "head switched off": lambda: viz.head_heatmap(a[0, 0], toks, toks, mask=mask, head_off=True),
        "overview": lambda: viz.attention_overview(a, toks, toks, head_mask=off),
        "large head": lambda: viz.head_heatmap(a[lay, hd], toks, toks, mask=mask, title=f"Layer {lay}, head {hd}"),
        "head, 1,300 px wide": lambda: viz.head_heatmap(a[lay, hd], toks, toks, mask=mask, width=1300),
        "decoder self (generation)": lambda: viz.head_heatmap(a[lay, hd, :gen], toks[:gen], toks),
        "cross-attention (generation)": lambda: viz.cross_attention_heatmap(a[lay, hd, :gen], toks[:gen], toks),
        "rollout": lambda: viz.rollout_heatmap(viz.attention_rollout(a, head_mask=off), toks),
        "positional heatmap": lambda: viz.positional_heatmap(pe),
        "positional curves": lambda: viz.positional_curves(pe),
        "position similarity": lambda: viz.position_similarity(pe),
        "head importance": lambda: viz.head_importance_chart(rng.random((layers, heads)), rng.random((layers, heads)),
                                                             0.5),
        "message": lambda: viz.message_figure("No toggle is active, so the baseline is the view above."),
    }


def measure(layers: int, heads: int, t: int, causal: bool) -> dict[str, Any]:
    """Bytes (and build + serialise ms) of every kind, and the tab totals."""
    from explorer.viz import figure_json

    kinds: dict[str, int] = {}
    ms: dict[str, float] = {}
    for name, build in builders(layers, heads, t, causal).items():
        t0 = time.perf_counter()
        text = figure_json(build())
        ms[name] = round((time.perf_counter() - t0) * 1e3, 1)
        kinds[name] = len(text.encode())
    tabs = {tab: sum(kinds[k] for k in parts) for tab, parts in TABS.items()}
    return {"tokens": t, "kinds": kinds, "build_and_json_ms": ms, "tabs": tabs}


def bertviz_bytes(layers: int, heads: int, t: int, causal: bool) -> int | None:
    """Length of BertViz's model view HTML for the same attention, or None without bertviz."""
    try:
        import torch
        from bertviz import model_view
    except ImportError:
        return None
    a = attention(layers, heads, t, 0, causal)
    per_layer = tuple(torch.from_numpy(a[i][None]) for i in range(layers))  # (1, H, T, T) each
    return len(model_view(per_layer, tokens(t), html_action="return").data)


BERTVIZ_BYTES_PER_VALUE = 240  # peak memory per attention value while BertViz writes its HTML (17.1 GB at 6x12x1024^2)


def available_memory() -> int | None:
    """Bytes of memory available now (Linux /proc/meminfo MemAvailable), None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def bertviz_fits(layers: int, heads: int, t: int) -> str | None:
    """None if BertViz's HTML for this attention fits in the memory available now, else why it was not run."""
    need, have = layers * heads * t * t * BERTVIZ_BYTES_PER_VALUE, available_memory()
    if have is not None and need > 0.9 * have:
        return f"needs ~{need / 1e9:.0f} GB of memory to write, {have / 1e9:.0f} GB available"
    return None


def run(sizes: tuple[int, ...] = (128, 512, 1024), bertviz_max: int = 128,
        shapes: dict[str, tuple[int, int, bool]] | None = None) -> dict[str, Any]:
    """Per shape and token count: bytes per kind and per tab, BertViz's HTML where measured, ratios."""
    out: dict[str, Any] = {"what": __doc__.split("\n\n")[0], "tabs": {k: list(v) for k, v in TABS.items()},
                           "by_shape": {}}
    for label, (layers, heads, causal) in (shapes or SHAPES).items():
        rows = []
        for t in sizes:
            row = measure(layers, heads, t, causal)
            too_big = bertviz_fits(layers, heads, t) if t <= bertviz_max else f"not run above {bertviz_max} tokens"
            bv = bertviz_bytes(layers, heads, t, causal) if too_big is None else None
            row["bertviz_bytes"] = bv
            row["bertviz_note"] = None if bv is not None else too_big or "bertviz not installed"
            if bv:
                row["ratio_attention_figures_over_bertviz"] = round(row["tabs"]["attention figures (issue 16)"] / bv, 5)
            rows.append(row)
        out["by_shape"][label] = {"layers": layers, "heads": heads, "causal": causal, "by_tokens": rows}
    return out


def figure_texts(kinds: tuple[str, ...], layers: int, heads: int, t: int, causal: bool, seed: int = 0) -> dict[str, str]:
    """figure_json text of some kinds, from attention drawn with `seed` (another seed: other data)."""
    from explorer.viz import figure_json

    built = builders(layers, heads, t, causal, seed)
    return {k: figure_json(built[k]()) for k in kinds}

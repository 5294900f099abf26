"""Render every figure type in headless Chromium and save PNGs to docs/screenshots/viz/.

Run `PYTHONPATH=. python scripts/screenshots/render_figures.py [PLOTLY_JS] [--all]`.
The figures are drawn from their `figure_json` text (what gr.Plot sends: typed arrays) with the
plotly.js Gradio serves (tests/viz/bundles.py), or with the bundle at the path PLOTLY_JS.
Plotly.validate() runs in the page and its complaints are printed.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np

import explorer.viz as v

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots" / "viz"
WORDS = ("the quick brown fox jumps over the lazy dog and <b>the</b> cat sat on the mat while "
         "<img src=x onerror=alert(1)> watched the fox , the dog and the cat").split()


def tokens(n: int) -> list[str]:
    return [WORDS[i % len(WORDS)] for i in range(n)]


def fake_attention(layers: int, heads: int, tq: int, tk: int, seed: int = 0, causal: bool = False,
                   boost: float = 4.0) -> np.ndarray:
    """Softmax attention with some structure (diagonal, previous token, first token; `boost` sets how
    sharp: long inputs need more to keep a visible peak among many keys)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((layers, heads, tq, tk)) * 0.8
    q, k = np.arange(tq)[:, None], np.arange(tk)[None, :]
    for h in range(heads):
        kind = h % 4
        if kind == 0:
            x[:, h] += boost * (q == k)
        elif kind == 1:
            x[:, h] += boost * (k == q - 1)
        elif kind == 2:
            x[:, h] += (boost - 1) * (k == 0)
    if causal:
        x = np.where(k <= q, x, -np.inf)
    e = np.exp(x - x.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


def figures(n: int) -> dict[str, object]:
    if n > 128:  # long inputs: the single-head view at full resolution and the overview
        t = tokens(n)
        causal = np.tril(np.ones((n, n), bool))
        attn = fake_attention(2, 4, n, n, causal=True, boost=9.0)
        q, k = np.arange(n)[:, None], np.arange(n)[None, :]
        logits = np.where(k <= q, np.where(k == 0, 2.0, -np.abs(q - k) / 6.0), -np.inf)  # a local band, a sink
        head = np.exp(logits - logits.max(-1, keepdims=True))
        head /= head.sum(-1, keepdims=True)
        return {"head": v.head_heatmap(head, t, t, mask=causal, title=f"Layer 1, head 2 ({n} tokens)", width=900),
                "overview": v.attention_overview(attn, t, t)}
    t = tokens(n)
    attn = fake_attention(6, 12, n, n)
    head_mask = np.ones((6, 12))
    head_mask[1, 3] = head_mask[4, 0] = 0
    causal = np.tril(np.ones((n, n), bool))
    dec = fake_attention(1, 1, n, n, seed=1, causal=True)[0, 0]
    src = tokens(n + 5)[3:]
    cross = fake_attention(1, 1, n, len(src), seed=2)[0, 0]
    pe = v.sinusoidal_table(n, 64)
    roll = v.attention_rollout(attn)
    rng = np.random.default_rng(3)
    exact = rng.gamma(2.0, 1.0, (6, 12)) - 0.3
    est = exact + rng.normal(0, 0.5, (6, 12))
    return {
        "positional_heatmap": v.positional_heatmap(pe, width=900),
        "position_similarity": v.position_similarity(pe, width=700),
        "positional_curves": v.positional_curves(pe, width=900),
        "head": v.head_heatmap(attn[2, 1] * causal / np.maximum((attn[2, 1] * causal).sum(-1, keepdims=True), 1e-9),
                               t, t, mask=causal, title="Layer 2, head 1", width=900),
        "head_off": v.head_heatmap(attn[1, 3], t, t, head_off=True, title="Layer 1, head 3", width=900),
        "overview": v.attention_overview(attn, t, t, head_mask=head_mask),
        "cross": v.cross_attention_heatmap(cross, t, src, width=900),
        "decoder_self": v.decoder_self_attention_heatmap(dec, t, width=900),
        "difference": v.difference_heatmap(attn[0, 0], attn[0, 1], t, t, "Head 0 vs head 1", a_name="head 0",
                                           b_name="head 1", width=900),
        "mask": v.mask_heatmap(causal, t, t, "Causal mask", width=900),
        "rollout": v.rollout_heatmap(roll, t, width=900),
        "importance": v.head_importance_chart(exact, est, v.spearman(exact, est), width=1100),
    }


def _plain(obj: object) -> object:
    """Replace Plotly's base64 typed arrays ({"dtype", "bdata"}) by plain lists."""
    import base64

    if isinstance(obj, dict):
        if "bdata" in obj and "dtype" in obj:
            arr = np.frombuffer(base64.b64decode(obj["bdata"]), dtype=np.dtype(obj["dtype"]))
            if "shape" in obj:
                arr = arr.reshape([int(s) for s in str(obj["shape"]).split(",")])
            return np.where(np.isnan(arr), None, arr).tolist() if arr.dtype.kind == "f" else arr.tolist()
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    return obj


def render(figs: dict[str, object], suffix: str, plotly_js: str | None, only: set[str] | None = None) -> None:
    from playwright.sync_api import sync_playwright

    from tests.viz.bundles import gradio_plotly_js

    js = Path(plotly_js).read_text() if plotly_js else gradio_plotly_js()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                    args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        for name, fig in figs.items():
            if only and name not in only:
                continue
            body = v.figure_json(fig)
            plain = json.dumps(_plain(json.loads(body)))  # Plotly.validate cannot read bdata
            html = (f"<html><head><meta charset='utf-8'><script>{js}</script></head><body style='margin:0'>"
                    f"<div id='g'></div><script>var f={body};"
                    f"var p={plain};window.errs=Plotly.validate(p.data,p.layout)||[];"
                    "Plotly.newPlot('g',f.data,f.layout).then(()=>{window.done=true});</script></body></html>")
            tmp = OUT / f"_{name}.html"
            tmp.write_text(html)
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(tmp.as_uri())
            page.wait_for_function("window.done === true", timeout=60000)
            page.wait_for_timeout(300)
            errs = page.evaluate("window.errs.map(e => e.msg)")
            if errs:
                print(name, "validate:", json.dumps(errs[:5]))
            if errors:
                print(name, "page errors:", errors)
            page.locator(".main-svg").first.screenshot(path=str(OUT / f"{name}_{suffix}.png"))
            tmp.unlink()
        browser.close()


# The committed set: (figure, token count). Others render with `--all`.
KEEP = {32: {"head", "head_off", "overview", "cross", "difference", "mask", "position_similarity", "importance"},
        128: {"head", "overview", "rollout", "positional_heatmap", "positional_curves"},
        1024: {"head", "overview"}}


def shrink(path: Path) -> None:
    """256-colour palette PNG: a fraction of the size, no visible change for these plots."""
    from PIL import Image

    with Image.open(path) as im:
        im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    args = [a for a in sys.argv[1:] if a != "--all"]
    pjs = args[0] if args else None
    for n in (32, 128, 1024):
        only = None if "--all" in sys.argv else KEEP[n]
        render(figures(n), f"{n}", pjs, only)
    for png in OUT.glob("*.png"):
        shrink(png)

"""Headless Chromium draws the figures with both plotly.js bundles (Gradio's 3.3.1 and plotly.py's).

What is proven here: which typed-array dtypes the bundles decode (float16 is not one), that the
one-byte figures are drawn in the colours of their values (pixels sampled at known cells: weights
on Viridis, masked cells grey, a switched-off head faded, differences on RdBu, overview gaps white),
that token HTML shows literally, that the hover names the cell, and that a 1,024 x 1,024 head view
draws with its thin features (its drawing time is printed, not asserted: benchmarks measure speed). The figures
travel as `figure_json` text, as gr.Plot sends them.
Skipped without Playwright/Chromium (tests/conftest.py), failed in CI.
"""

from __future__ import annotations

import base64
import io

import numpy as np
import plotly.colors as pc
import pytest

from explorer import viz
from explorer.viz import common as c

pytestmark = pytest.mark.browser

TOKS = ["the", "<b>cat</b>", "<img src=x onerror=alert(1)>", "<script>alert(2)</script>", "the"]
DRAW = """async text => { const t0 = performance.now(); const f = JSON.parse(text);
  await Plotly.newPlot('g', f.data, f.layout);
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  return performance.now() - t0; }"""
CELL = """([row, col, xa, ya]) => { const gd = document.getElementById('g'), L = gd._fullLayout;
  const r = gd.getBoundingClientRect(), x = L[xa || 'xaxis'], y = L[ya || 'yaxis'];
  return [r.left + x._offset + x.l2p(col), r.top + y._offset + y.l2p(row)]; }"""


def draw(page, fig) -> float:
    """Draw `fig` from its figure_json text; ms until drawn (two frames after newPlot)."""
    return page.evaluate(DRAW, viz.figure_json(fig))


# plotly.js runs a hover (possibly a moment after the mouse event: it throttles hovers) in one task: it triggers
# plotly_beforehover with the mouse event, then draws the label, if any. Hearing that event for the mouse's new
# position, the next task reads the label of that position, or its absence (a gap cell: no label).
HOVER_WATCH = """() => { const gd = document.getElementById('g'); window.__hoveredAt = null;
  if (window.__hoverWatch) gd.removeListener('plotly_beforehover', window.__hoverWatch);
  window.__hoverWatch = e => { window.__hoveredAt = [e.clientX, e.clientY]; };
  gd.on('plotly_beforehover', window.__hoverWatch); }"""
HOVERED = """([x, y]) => { const at = window.__hoveredAt;
  return !!at && Math.abs(at[0] - x) <= 1 && Math.abs(at[1] - y) <= 1; }"""


def hover(page, row, col):
    """Move the mouse over cell (row, col) of the heatmap (axis positions) and read the hover label, once plotly.js
    has run the hover for that position."""
    page.mouse.move(0, 0)  # off the plot: no label
    page.wait_for_function("() => !document.querySelector('#g .hovertext')")
    x, y = page.evaluate(CELL, [row, col, None, None])
    page.evaluate(HOVER_WATCH)
    page.mouse.move(x, y)
    page.wait_for_function(HOVERED, arg=[x, y])
    return page.evaluate("Array.from(document.querySelectorAll('.hovertext')).map(e => e.textContent)")


def pixels(page, cells, xa=None, ya=None):
    """RGB of the screen pixel at the centre of each (row, col) cell."""
    from PIL import Image

    page.mouse.move(0, 0)  # no hover label over the plot
    page.wait_for_function("() => !document.querySelector('#g .hovertext')")
    shot = Image.open(io.BytesIO(page.screenshot(full_page=True))).convert("RGB")
    out = []
    for row, col in cells:
        x, y = page.evaluate(CELL, [row, col, xa, ya])
        out.append(shot.getpixel((int(x), int(y))))
    return out


def scale_rgb(scale, f: float) -> np.ndarray:
    """The colour of fraction f of a [position, colour] scale (linear in RGB, as plotly interpolates)."""
    pos = [p for p, _ in scale]
    cols = np.array([pc.hex_to_rgb(col) if col.startswith("#") else pc.unlabel_rgb(col) for _, col in scale], float)
    return np.array([np.interp(f, pos, cols[:, i]) for i in range(3)])


def close(got, want, tol: float = 6.0) -> bool:
    return bool(np.abs(np.asarray(got, float) - np.asarray(want, float)).max() <= tol)


def test_dtypes_the_bundle_decodes(page):
    """u1/i1/i2/f4 typed arrays decode to the values sent; float16 does not exist in these bundles."""
    a = np.array([[0, 50], [25, 100]])
    out = {}
    for dtype in ("u1", "i1", "i2", "f4", "f2", "float16"):
        arr = a.astype({"u1": np.uint8, "i1": np.int8, "i2": np.int16, "f4": np.float32}.get(dtype, np.float16))
        spec = {"dtype": dtype, "bdata": base64.b64encode(arr.tobytes()).decode(), "shape": "2, 2"}
        out[dtype] = page.evaluate("""async z => { try { await Plotly.newPlot('g', [{type: 'heatmap', z}], {});
            return Array.from(document.getElementById('g')._fullData[0].z, r => Array.from(r)); }
            catch (e) { return 'error: ' + e.message; } }""", spec)
    for dtype in ("u1", "i1", "i2", "f4"):
        assert out[dtype] == a.tolist(), (page.bundle, dtype, out[dtype])
    assert out["f2"] == 'error: Error in dtype: "f2"' and out["float16"] == 'error: Error in dtype: "float16"'
    assert page.evaluate("Plotly.version") in ("3.3.1", "4.1.1")


def test_head_heatmap_escapes_tokens_in_ticks_and_hover(page):
    w = np.full((5, 5), 0.2)
    mask = np.tril(np.ones((5, 5), bool))
    draw(page, viz.head_heatmap(w, TOKS, TOKS, mask=mask))
    ticks = page.evaluate("Array.from(document.querySelectorAll('.ytick text')).map(e => e.textContent)")
    assert ticks == ["the", "<b>cat</b>", "<img src=x oner…", "<script>alert(2…", "the·2"]
    assert page.evaluate("document.querySelectorAll('#g img, #g script, #g b').length") == 0
    assert hover(page, 2, 1) == ["<img src=x onerror=alert(1)> → <b>cat</b>: 0.200"]
    # A masked cell is grey and its hover still names the cell (the cover lets the hover through).
    assert hover(page, 1, 3) == ["<b>cat</b> → <script>alert(2)</script>: 0.200"]
    assert close(pixels(page, [(1, 3)])[0], pc.hex_to_rgb(c.MASKED_COLOR), 2)
    assert page.dialogs == [] and page.errors == []


def test_one_byte_head_view_draws_the_colours_of_its_weights(page):
    """128 tokens (percent codes): sampled cells have the Viridis colour of their weight, masked cells are
    grey (the path cover), and the hover says "≈" with the percentage."""
    t = 128
    rng = np.random.default_rng(0)
    w = np.tril(rng.random((t, t)))
    w[40, 7], w[90, 90], w[100, 3] = 0.93, 0.5, 0.0
    w = (w / w.sum(-1, keepdims=True)) * (w.sum(-1, keepdims=True) > 0)
    w[40, 7], w[90, 90], w[100, 3] = 0.93, 0.5, 0.0  # not row-normalised: any weight in [0, 1] draws
    labels = [f"t{i}" for i in range(t)]
    fig = viz.head_heatmap(w, labels, labels, mask=np.tril(np.ones((t, t), bool)))
    assert len(fig.data) == 1 and fig.layout.shapes[0].type == "path"
    draw(page, fig)
    cells = [(40, 7), (90, 90), (100, 3), (60, 30)]
    for (row, col), got in zip(cells, pixels(page, cells)):
        assert close(got, scale_rgb(c.WEIGHT_SCALE, round(100 * w[row, col]) / 100)), (row, col, got)
        assert close(got, scale_rgb(c.WEIGHT_SCALE, w[row, col]), 8)  # and close to the exact weight's
    for got in pixels(page, [(5, 100), (0, 1), (126, 127)]):
        assert close(got, pc.hex_to_rgb(c.MASKED_COLOR), 2), got
    assert hover(page, 40, 7) == ["t40 → t7: ≈ 93%"]
    ticks = page.evaluate("Array.from(document.querySelectorAll('.cbaxis text')).map(e => e.textContent)")
    assert ticks == ["0", "0.2", "0.4", "0.6", "0.8", "1"]  # the colour bar in weight units
    assert page.errors == []


def test_switched_off_head_difference_and_mask_colours(page):
    t = 100
    labels = [f"t{i}" for i in range(t)]
    w = np.full((t, t), 0.5)
    draw(page, viz.head_heatmap(w, labels, labels, head_off=True))  # faded: 0.45 of the colour over white
    want = 0.45 * scale_rgb(c.WEIGHT_SCALE, 0.5) + 0.55 * 255
    assert close(pixels(page, [(50, 50)])[0], want)
    d = np.zeros((t, t))
    d[10, 20], d[30, 40] = 0.2, -0.1
    draw(page, viz.difference_heatmap(d, np.zeros((t, t)), labels, labels))
    red, blue, white = pixels(page, [(10, 20), (30, 40), (50, 50)])
    assert close(red, scale_rgb(c.DIVERGING_SCALE, 1.0)) and close(blue, scale_rgb(c.DIVERGING_SCALE, 0.25))
    assert close(white, scale_rgb(c.DIVERGING_SCALE, 0.5))
    assert hover(page, 30, 40) == ["t30 → t40: ≈ -50% of 0.2 (A − B)"]
    draw(page, viz.mask_heatmap(np.tril(np.ones((t, t), bool)), labels, labels))
    allowed, blocked = pixels(page, [(60, 10), (10, 60)])
    assert close(allowed, pc.hex_to_rgb(c.ALLOWED_COLOR), 2) and close(blocked, pc.hex_to_rgb(c.BLOCKED_COLOR), 2)
    assert hover(page, 10, 60) == ["t10 → t60: mask 0 (1 = may attend, 0 = blocked)"]
    assert page.errors == []


def test_overview_tiles_gaps_and_hover(page):
    a = np.full((2, 3, 5, 5), 0.2, dtype=np.float32)
    a[1, 2, 4, 1] = 0.9
    fig = viz.attention_overview(a, TOKS, TOKS)
    draw(page, fig)
    m = fig.layout.meta["overview_grid"]
    row, col = (5 + m["gap_rows"]) + 4, 2 * (5 + m["gap_cols"]) + 1
    assert hover(page, row, col) == ["layer 1 · query 4: the·2head 2 · key 1: <b>cat</b>weight: 0.900"]
    assert hover(page, 5, 0) == [] and hover(page, 0, 5) == []  # gaps (NaN in the exact form): no hover
    bright, gap = pixels(page, [(row, col), (5, 0)])
    assert close(bright, scale_rgb(c.WEIGHT_SCALE, 0.9)) and close(gap, (255, 255, 255), 1)
    assert page.evaluate("document.getElementById('g')._fullData[0]._islinear")  # drawn as one image
    big = np.random.default_rng(1).random((6, 12, 300, 300)).astype(np.float32) * 0.5
    big[3, 7, 150, 150] = 1.0  # one spike: max pooling keeps it
    fig = viz.attention_overview(big, [f"t{i}" for i in range(300)], [f"t{i}" for i in range(300)])
    draw(page, fig)
    assert page.evaluate("document.getElementById('g')._fullData[0]._islinear")
    g = fig.layout.meta["overview_grid"]
    r0, k0 = 3 * (len(g["q_edges"]) - 1 + g["gap_rows"]), 7 * (len(g["k_edges"]) - 1 + g["gap_cols"])
    cell = next(i for i, e in enumerate(g["q_edges"]) if e > 150) - 1
    # The spike in its colour, a cell of 0.5 or less in another, the gap cells (percent form: GAP_CODE) white.
    spike, other, gap_row, gap_col = pixels(page, [(r0 + cell, k0 + cell), (r0 + cell, k0 + cell + 1), (r0 - 1, k0),
                                                   (r0, k0 - 1)])
    assert close(spike, scale_rgb(c.WEIGHT_SCALE, 1.0)) and not close(other, spike, 30)
    assert close(gap_row, (255, 255, 255), 1) and close(gap_col, (255, 255, 255), 1)
    # The colour bar shows the weights' scale alone: its top is the scale's top colour, not the transparent gap.
    top = page.evaluate("""() => { const r = document.querySelector('#g .colorbar rect.cbfill').getBoundingClientRect();
      return [r.left + r.width / 2, r.top + 2]; }""")
    from PIL import Image

    shot = Image.open(io.BytesIO(page.screenshot())).convert("RGB")
    assert close(shot.getpixel((int(top[0]), int(top[1]))), scale_rgb(c.WEIGHT_SCALE, 1.0), 12)
    assert page.dialogs == [] and page.errors == []


def test_a_1024_token_head_view_draws_and_keeps_thin_features(page):
    t = 1024
    labels = [f"t{i}" for i in range(t)]
    causal = np.tril(np.ones((t, t), bool))
    w = np.where(causal, 0.02, 0.0)
    w[:, 0] = 0.6  # a first-token column: one key wide
    w[500:520, 100:120] = 0.8
    fig = viz.head_heatmap(w, labels, labels, mask=causal, width=1300)  # room for every key: full resolution
    assert np.asarray(fig.data[0].z).shape == (t, t)
    ms = draw(page, fig)  # how fast: printed only (a shared 2-core machine draws it in 1-2 s)
    print(f"\n1024 x 1024 head view drawn with {page.bundle}'s plotly.js in {ms:.0f} ms")
    block, low, masked, first = pixels(page, [(510, 110), (700, 300), (300, 700), (800, 0)])
    assert close(block, scale_rgb(c.WEIGHT_SCALE, 0.8)) and close(low, scale_rgb(c.WEIGHT_SCALE, 0.02))
    assert close(masked, pc.hex_to_rgb(c.MASKED_COLOR), 2) and close(first, scale_rgb(c.WEIGHT_SCALE, 0.6))
    assert page.evaluate("document.getElementById('g')._fullData[0].z.length") == t
    # At the default width the keys are pooled to the plot's pixels: the one-key column still shows.
    narrow = viz.head_heatmap(w, labels, labels, mask=causal)
    draw(page, narrow)
    rows = [100, 400, 700, 1000]
    for got in pixels(page, [(r, 0) for r in rows]):
        assert close(got, scale_rgb(c.WEIGHT_SCALE, 0.6)), got
    assert page.errors == []


def test_head_lines_draw_and_a_click_keeps_one_querys_lines(page):
    """The lines view draws with escaped tokens; with FOCUS_ON_CLICK_JS bound, a click on a query marker applies that
    query's slider step (its lines in the focus traces, the other lines out of view), a second click shows all."""
    from explorer.viz.head_view import AWAY, FOCUS_ON_CLICK_JS, SHOWN

    t = len(TOKS)
    w = np.tril(np.ones((t, t))) / np.arange(1, t + 1)[:, None]
    fig = viz.head_lines(np.stack([w, np.eye(t)]), TOKS, TOKS, ["uniform", "self"])
    draw(page, fig)
    ticks = page.evaluate("Array.from(document.querySelectorAll('.ytick text')).map(e => e.textContent)")
    assert "<b>cat</b>" in ticks and page.evaluate("document.querySelectorAll('#g img, #g script, #g b').length") == 0
    page.evaluate(f"() => ({FOCUS_ON_CLICK_JS.strip()})(document.getElementById('g'))")
    focus_y = """() => { const gd = document.getElementById('g');
      return gd.data.filter(d => d.xaxis === 'x2' && d.mode === 'lines' && !d.showlegend).map(d => Array.from(d.y)); }"""
    x, y = page.evaluate(CELL, [3, 0, "xaxis2", "yaxis"])
    for attempt in range(2):  # click query 3, then again: back to every query
        page.mouse.move(0, 0)
        page.evaluate(HOVER_WATCH)
        page.mouse.move(x, y)
        page.wait_for_function(HOVERED, arg=[x, y])
        page.mouse.click(x, y)
        page.wait_for_function(f"document.getElementById('g').layout.sliders[0].active === {4 if attempt == 0 else 0}")
        lines = [v for ys in page.evaluate(focus_y) for v in ys]
        x_range = page.evaluate("document.getElementById('g').layout.xaxis.range")
        if attempt == 0:  # query 3: the uniform head's 4 keys and the self head's own
            queries, keys = lines[0::3], lines[1::3]
            assert set(queries) == {3} and sorted(keys) == [0, 1, 2, 3, 3] and x_range == list(AWAY)
        else:
            assert lines == [] and x_range == list(SHOWN)
    assert page.dialogs == [] and page.errors == []


def test_query_key_figure_draws_with_escaped_hover(page):
    import torch

    from explorer.interpret import capture_block, query_key_map
    from explorer.model import Transformer, TransformerConfig

    torch.manual_seed(0)
    model = Transformer(TransformerConfig(arch="decoder", vocab_size=30, d_model=16, n_heads=2, n_layers=1, d_ff=32,
                                          dropout=0.0)).eval()
    qk = query_key_map(capture_block(model, torch.randint(1, 30, (len(TOKS),)), "decoder", 0), 0)
    draw(page, viz.query_key_figure(qk, TOKS, query=2))
    assert page.evaluate("document.querySelectorAll('#g .scatterlayer .point').length") >= 2 * len(TOKS)
    assert page.evaluate("document.querySelectorAll('#g img, #g script, #g b').length") == 0
    assert page.dialogs == [] and page.errors == []

"""How a head computes (issue 35): inside one head, the query-key map and the lines view, on a GPT-2-small-shaped
model (12 layers x 12 heads, d_model 768, random weights, loaded with `explorer.load` from the Hugging Face layout as
hub_lm writes it) at 128 and 1,024 tokens. Goals: inside one head <= 50 ms at 128 tokens and <= 0.5 s at 1,024; the
lines view drawn in Chromium <= 1 s at 128 tokens.

Inside one head, the last position's query (an LM's next-token question), head 0, at layers 0, 5 and 11:
*first click*: what the tab's first click computes once the page's Run has recorded the view's block (the app's Run
records the block its view names, explorer.app.run.captures): `capture_from_record(...)` (made in the Run, after its
forward pass) then `.head(0, -1)` (the click), no model run; *from the Run's record*: the same at every layer (a Record
of every block's `block_sites`); *first click without the Run's capture* (the old path, still taken for a block the
page's Run did not record): `head_computation(model, ids, "decoder", layer, 0, -1)`, one run of the model up to that
block (the layers below it, then the block; nothing above); *from the capture*: `capture.head(h, query)` on a
BlockCapture a page keeps, what any later click in the same block costs. Also `query_key_map(capture, head)` and, for
scale, one forward pass with every attention returned (what the app's Run computes), and the same recording the
values and the last layer's block as the app's Run does (what the capture costs the Run's forward). Median of
`repeats` after a warm-up; torch threads as set.

Lines view: `head_lines` of 4 heads (synthetic causal attention, benchmarks.figure_bytes's generator: softmax of
Gaussian scores, spread wider than a trained head's, so most rows need all 8 lines), its JSON bytes,
time to build, and drawn in headless Chromium with Gradio's plotly.js by the browser benchmark's update path (a click
swaps in the other text's figure: JSON.parse + Plotly.react + two frames).

The tab's clicks through the app's path (explorer.app.tabs.head: HeadEvents.shown_tab on a page wired as the app's,
the model loaded from an allowed folder, a text of exactly `tokens` tokens, the chosen head L11 H0 at the last query):
*first open after a Run* (the tab opened after the page's Run of the same sentences, toggles and block, as a click on
its tab makes it: the block the Run captured, no model run; the neuron view, the table, the heads as lines and the
query-key map drawn, as JSON), the same *with a head off* (the Run's baseline and toggled captures), *a block the Run
did not capture* (the old first click: the model up to the block, then the same drawing) and *with a head off* (two
runs up to the block), *another query* of the kept block (no model run; the lines view is not drawn again) and
*other lines heads* (the lines view drawn again). The page is frozen out of the garbage collector's reach once built,
as app.py does (explorer.process_memory). The GPT-2 shape gets a 1,064-position context here, so that 1,024 typed tokens fit beside the
answer room a language model keeps (as in app_long).

Run alone: python -m benchmarks.head_computation [--tokens 128 1024] [--repeats 5] [--quick] [--no-draw]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from benchmarks.common import median_time
from benchmarks.hub_lm import GPT2_SMALL, TINY, write_folder

LINES_HEADS = 4


def load(shape: dict[str, int], folder: Path):
    import explorer

    return explorer.load(write_folder(folder, shape), "cpu").model.eval()


def inside_one_head(model, tokens: int, repeats: int) -> dict[str, Any]:
    from explorer.interpret import block_sites, capture_block, capture_from_record, head_computation, query_key_map
    from explorer.model import Record

    def first_click(record: Any, layer: int) -> Any:  # the Run's capture, then the click
        return capture_from_record(model, record, ids[None], "decoder", layer).head(0, -1)

    vocab = model.config.vocab_size
    ids = torch.randint(0, vocab, (tokens,), generator=torch.Generator().manual_seed(tokens))
    L, H = model.config.decoder_layers, model.config.n_heads
    row: dict[str, Any] = {"tokens": tokens, "by_layer": []}
    record = Record(only=set().union(*(block_sites("decoder", i) for i in range(L))))
    with torch.inference_mode():  # a page's Run, recording every block's sites
        model(ids[None], record=record)
    for layer in sorted({0, L // 2 - 1, L - 1}):
        ran, _ = median_time(lambda layer=layer: head_computation(model, ids, "decoder", layer, 0, -1), repeats)
        capture = capture_block(model, ids, "decoder", layer)
        again, _ = median_time(lambda c=capture: c.head(H - 1, tokens // 2), repeats)
        qk, _ = median_time(lambda c=capture: query_key_map(c, 0), repeats)
        kept, _ = median_time(lambda layer=layer: first_click(record, layer), repeats)
        row["by_layer"].append({"layer": layer, "first_click_ms": round(kept * 1e3, 1),
                                "first_click_model_run_ms": round(ran * 1e3, 1), "from_record_ms": round(kept * 1e3, 1),
                                "from_capture_ms": round(again * 1e3, 2), "query_key_map_ms": round(qk * 1e3, 1)})

    def forward(record: Any = None):
        with torch.inference_mode():
            return model(ids[None], record=record)

    full, _ = median_time(forward, repeats)
    recorded, _ = median_time(lambda: forward(Record(only={"v", *block_sites("decoder", L - 1)})), repeats)
    row["forward_every_attention_ms"] = round(full * 1e3, 1)
    row["forward_recording_block_ms"] = round(recorded * 1e3, 1)  # the values and the last layer's block, as a Run
    return row


def lines_figures(tokens: int) -> tuple[str, str, float]:
    """Two texts' lines views (JSON) and the seconds to build one."""
    from benchmarks import figure_bytes
    from explorer.viz import figure_json, head_lines

    labels = figure_bytes.tokens(tokens)
    out = []
    build = 0.0
    for seed in (0, 1):
        w = figure_bytes.attention(1, LINES_HEADS, tokens, seed=seed, causal=True)[0]
        t0 = time.perf_counter()
        fig = head_lines(w, labels, labels, [f"L0 H{h}" for h in range(LINES_HEADS)], width=700)
        text = figure_json(fig)
        build = time.perf_counter() - t0
        out.append(text)
    return out[0], out[1], build


def draw_lines(tokens: tuple[int, ...], repeats: int) -> dict[str, Any]:
    from benchmarks import browser

    skip = browser.browser_available()
    if skip:
        return {"skipped": skip}
    rows = []
    with browser.Site() as site, browser.chromium() as chromium:
        js = browser._serve_js(site)
        for n in tokens:
            a, b, build = lines_figures(n)
            row = browser.draw_swap(chromium, site, f"lines{n}", a, b, repeats)
            row.update(tokens=n, bytes=len(a.encode()), build_ms=round(build * 1e3, 1))
            rows.append(row)
        return {"browser": f"Chromium {chromium.version} (headless)", "plotly_js": js, "heads": LINES_HEADS,
                "by_tokens": rows}


def tab_clicks(root: Path, tokens: tuple[int, ...], repeats: int) -> list[dict[str, Any]]:
    """The Inside a head tab's clicks through the app's handlers (module docstring), per text length."""
    from dataclasses import replace

    from benchmarks.app_memory import text_of
    from explorer.app.demo import starting_point
    from explorer.app.events import PageEvents
    from explorer.app.forms import form_of, replaced
    from explorer.app.page.head_labels import head_labels
    from explorer.app.page.layout import layout
    from explorer.app.run.request import RunRequest
    from explorer.app.run.view import View
    from explorer.app.serving.kept import Shown
    from explorer.app.serving.registry import ModelRegistry
    from explorer.app.serving.session import AppContext, Session, get_model
    from explorer.app.tabs import TABS
    from explorer.app.tabs.head.forms import HeadForm
    from explorer.process_memory import freeze_startup_objects

    ctx = AppContext(ModelRegistry(), (str(root),), max_tokens=max(tokens))
    session = Session("gpt2", "cpu")
    page = layout(starting_point(ctx, "gpt2", "cpu"), session, TABS)
    with page.demo:
        events = PageEvents(page, ctx)
        events.wire()
    tab = events.tab_events["head"]
    L, H = get_model(session, ctx).config.attention_kinds()["decoder"]
    every = head_labels(L, H)
    freeze_startup_objects()  # as app.py does once the page is built
    rows = []
    for n in tokens:
        form = form_of(HeadForm, session, text_of(n), "", True, True, "none", 0, 2, [], every, [], "decoder", L - 1, 0,
                       1, 0, "weights", -1, None, None, "details")  # all details: every part drawn (plain skips 4)
        off = replaced(form, decoder_heads_on=[h for h in every if h != "L0 H1"])

        def shown(f, state=None, page=None):
            out = tab.shown_tab(f, state, page)
            assert not str(out[tab.status]).startswith("⚠️"), out[tab.status]
            return out

        def after_run(f):
            """The page's Run of the form's sentences, toggles and block; then the tab's first open, timed."""
            page = Shown()
            request = RunRequest.of(session, f.view.sentence1, f.view.sentence2, f.block({"decoder": (L, H)}).toggles,
                                    View("decoder", L - 1, 0, 1), f.continue_tokens)
            for _ in events.run(request, "attention", page):
                pass
            run = page.result(ctx.kept).block

            def first_open():
                run.read = None  # what the tab made of the Run's capture (its query-key map): a first open again
                return shown(f, None, page)
            return median_time(first_open, repeats)[0]

        opened, toggled_opened = after_run(form), after_run(off)
        first, out = median_time(lambda: shown(form), repeats)
        toggled, _ = median_time(lambda: shown(off), repeats)
        state = out[tab.parts.state]
        again, _ = median_time(lambda: shown(replace(form, query=n // 2), state), repeats)
        others = [(h + 1) % H for h in range(min(4, H))]  # drawn again each time: the state forgets the lines drawn
        lines, _ = median_time(lambda: shown(replace(form, lines_heads=others), replace(state, lines=None)), repeats)
        rows.append({"tokens": n, "first_open_after_run_ms": round(opened * 1e3, 1),
                     "first_open_after_run_head_off_ms": round(toggled_opened * 1e3, 1),
                     "first_click_model_run_ms": round(first * 1e3, 1),
                     "first_click_model_run_head_off_ms": round(toggled * 1e3, 1),
                     "another_query_ms": round(again * 1e3, 1), "other_lines_heads_ms": round(lines * 1e3, 1)})
    return rows


def run(tokens=(128, 1024), repeats: int = 5, shape: dict[str, int] | None = None, draw: bool = True,
        draw_tokens: tuple[int, ...] = (128, 1024)) -> dict[str, Any]:
    shape = shape or GPT2_SMALL
    shape = {**shape, "n_positions": max(shape["n_positions"], max(tokens) + 40)}  # room for the app's texts
    with tempfile.TemporaryDirectory() as tmp:
        model = load(shape, Path(tmp) / "gpt2")
        params = sum(p.numel() for p in model.parameters())
        rows = [inside_one_head(model, n, repeats) for n in tokens]
        del model
        tab = tab_clicks(Path(tmp), tokens, repeats)
    out: dict[str, Any] = {
        "model": f"GPT-2 shape {shape} ({params:,} parameters, random weights)",
        "gpt2_small": shape["n_embd"] == GPT2_SMALL["n_embd"] and shape["n_layer"] == GPT2_SMALL["n_layer"],
        "threads": torch.get_num_threads(), "repeats": repeats, "by_tokens": rows, "tab_clicks": tab}
    out["lines"] = draw_lines(draw_tokens, repeats) if draw else {"skipped": "--no-draw"}
    out["load_average_1min_after"] = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, nargs="+", default=[128, 1024])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="a tiny model shape (smoke test)")
    ap.add_argument("--no-draw", action="store_true", help="skip drawing the lines view in Chromium")
    args = ap.parse_args(argv)
    shape = TINY if args.quick else GPT2_SMALL
    print(json.dumps(run(tuple(args.tokens), args.repeats, shape, not args.no_draw,
                         (16,) if args.quick else (128, 1024)), indent=1))


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()

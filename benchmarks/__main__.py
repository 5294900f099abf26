"""`python -m benchmarks`: measure the explorer against the tools people use today (issue 7).

Sections (--only, comma-separated or repeated): latency (update latency and bytes), figures (bytes of
every figure kind and app tab at 128 / 512 / 1,024 tokens), draw (browser), app (click to redraw in the
real app), importance, training, cold_start, capture, hub_lm (a GPT-2-small forward with every attention
returned vs transformers' eager forward), app_long (click to redraw at 1,024 tokens on a GPT-2-small-shaped model
in the real app), memory (peak memory of one 1,024-token /analyze request on that model), largest (the same on a
Qwen2.5-0.5B-shaped model, the largest the page offers), sessions (200 sessions with long texts: the server's memory
within --kept-memory, each session's own figures), load (50 gradio_client sessions at once for 5 minutes), dla
(direct logit attribution plus every head's promoted / suppressed tokens vs one forward with every attention on the
GPT-2-small shape; TransformerLens 4.3 when installed), token_attribution
(integrated gradients on the token embeddings of a GPT-2-small-shaped model at 128 tokens, 32 steps, vs input x
gradient and one forward), flow (the contribution graph of Information Flow Routes on the GPT-2-small shape at 128
and 1,024 tokens: time and peak memory above the model), sae (a 24,576-latent residual SAE on the GPT-2-small shape:
encode + top latents per token at 1,024 tokens, the Features tab's computation vs one forward at 128 and 1,024, its
peak memory; latent dashboards of an SAE on the shipped date-gpt), head_computation (inside one head, the
query-key map and the lines view on the GPT-2-small shape at 128 and 1,024 tokens; the lines view drawn in Chromium), head_effects (every
head switched off alone, exact and batched, on the GPT-2-small shape at 128 tokens and the shipped checkpoints, vs one
forward pass per head), view_file (the Download button's HTML file of the default view: its bytes, within 5 MB),
circuits (EAP-IG over 32 pairs of 32 tokens and the faithfulness curve at 20 sizes on the GPT-2-small shape vs one
forward + backward and one forward; find_circuit on the shipped induction-gpt and date-translator).
Writes benchmarks/results.json and BENCHMARKS.md (a --quick run writes to a temp folder unless
--json/--md are given). With --only, sections already in the JSON file are kept and the others updated.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before huggingface_hub is imported anywhere
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from benchmarks import report  # noqa: E402
from benchmarks.common import machine  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = ("latency", "figures", "draw", "app", "app_long", "memory", "largest", "sessions", "load", "importance",
            "training", "cold_start", "capture", "hub_lm", "dla", "token_attribution",
            "flow", "sae", "head_computation", "head_effects", "view_file", "circuits")
ALIASES = {"bytes": "latency", "update": "latency", "figure_bytes": "figures", "browser": "draw", "cold": "cold_start",
           "head_importance": "importance", "throughput": "training", "overhead": "capture", "gpt2": "hub_lm",
           "lm": "hub_lm", "logit_attribution": "dla", "ig": "token_attribution", "attribution_ig": "token_attribution",
           "information_flow": "flow", "routes": "flow", "features": "sae", "saes": "sae",
           "inside_head": "head_computation", "neuron": "head_computation", "lines": "head_computation",
           "query_key": "head_computation", "effects": "head_effects", "why_token": "head_effects",
           "download": "view_file", "export": "view_file", "circuit": "circuits", "eap": "circuits",
           "eap_ig": "circuits"}


def sizes(quick: bool, full: bool) -> dict[str, Any]:
    """Per-section parameters: full-size defaults, or tiny ones for --quick."""
    if quick:
        tiny = {"tiny (2 x 2)": (2, 2, True)}
        return dict(latency=dict(sizes=(16,), repeats=1), figures=dict(sizes=(16,), bertviz_max=16, shapes=tiny),
                    draw=dict(sizes=(16,), repeats=1, bertviz_repeats=1, long_sizes=()),
                    app=dict(sizes=(16,), repeats=1), importance=dict(tokens=(8,), repeats=1),
                    training=dict(steps=2, repeats=1, batch=4, length=16), capture=dict(repeats=1, forward_lengths=(16,)),
                    cold_start=dict(repeats=1), hub_lm=dict(tokens=(16,), repeats=1, quick=True),
                    app_long=dict(tokens=64, repeats=1, quick=True), memory=dict(tokens=64, quick=True),
                    largest=dict(tokens=64, quick=True), sessions=dict(sessions=4, words=40),
                    load=dict(clients=3, seconds=10.0), dla=dict(tokens=(16,), repeats=1, quick=True),
                    token_attribution=dict(tokens=16, repeats=1, batches=(8,), quick=True),
                    flow=dict(tokens=(16,), repeats=1, quick=True), sae=dict(quick=True),
                    head_computation=dict(tokens=(16,), repeats=1, quick=True),
                    head_effects=dict(tokens=(16,), repeats=1, quick=True), view_file=dict(quick=True),
                    circuits=dict(pairs=8, tokens=16, repeats=1, quick=True))
    return dict(latency=dict(sizes=(32, 128, 512), repeats=5),
                figures=dict(sizes=(128, 512, 1024), bertviz_max=1024),  # skipped where memory is short
                draw=dict(sizes=(32, 128, 512), repeats=5, bertviz_repeats=3, bertviz_max=512 if full else 128,
                          long_sizes=(1024,)),
                app=dict(sizes=(32, 128), repeats=5), importance=dict(tokens=(32, 128), repeats=3),
                training=dict(steps=20, repeats=5, batch=32, length=256),
                capture=dict(repeats=5, forward_lengths=(32, 128, 512)), cold_start=dict(repeats=3),
                hub_lm=dict(tokens=(128, 1024), repeats=5), app_long=dict(tokens=1024, repeats=3),
                memory=dict(tokens=1024), largest=dict(tokens=1024), sessions=dict(sessions=200, words=480),
                load=dict(clients=50, seconds=300.0), dla=dict(tokens=(128, 1024), repeats=5),
                token_attribution=dict(tokens=128, repeats=3, batches=(16, 32)),
                flow=dict(tokens=(128, 1024), repeats=3), sae=dict(tokens=(128, 1024), repeats=5),
                head_computation=dict(tokens=(128, 1024), repeats=5),
                head_effects=dict(tokens=(128,), repeats=3), view_file=dict(),
                circuits=dict(pairs=32, tokens=32, repeats=3))


def runners() -> dict[str, Callable[..., dict[str, Any]]]:
    def latency(**kw: Any) -> dict[str, Any]:
        from benchmarks import update_latency
        return update_latency.run(**kw)

    def figures(**kw: Any) -> dict[str, Any]:
        from benchmarks import figure_bytes
        return figure_bytes.run(**kw)

    def draw(**kw: Any) -> dict[str, Any]:
        from benchmarks import browser
        return browser.run(**kw)

    def app(**kw: Any) -> dict[str, Any]:
        from benchmarks import app_bench
        return app_bench.click_to_redraw(**kw)

    def importance(**kw: Any) -> dict[str, Any]:
        from benchmarks import head_importance
        return head_importance.run(**kw)

    def training(**kw: Any) -> dict[str, Any]:
        from benchmarks import model_core
        return model_core.training_throughput(**kw)

    def capture(**kw: Any) -> dict[str, Any]:
        from benchmarks import model_core
        return model_core.attention_capture(**kw)

    def cold_start(**kw: Any) -> dict[str, Any]:
        from benchmarks import app_bench
        out = app_bench.cold_start(**kw)
        try:
            from explorer.app.serving.session import default_source
            out["start_model"] = default_source()
        except Exception:  # noqa: BLE001 - informational only
            pass
        return out

    def hub_lm(**kw: Any) -> dict[str, Any]:
        from benchmarks import hub_lm as lm
        quick = kw.pop("quick", False)
        return lm.run(**kw, shape=lm.TINY if quick else None, peak=not quick)

    def app_long(**kw: Any) -> dict[str, Any]:
        from benchmarks import app_bench
        from benchmarks.app_memory import TINY_APP
        quick = kw.pop("quick", False)
        return app_bench.click_to_redraw_long(**kw, shape=TINY_APP if quick else None,
                                              threads=(None,) if quick else (None, 1))

    def memory(**kw: Any) -> dict[str, Any]:
        from benchmarks import app_memory
        from benchmarks.app_memory import TINY_APP
        quick = kw.pop("quick", False)
        return app_memory.run(**kw, shape=TINY_APP if quick else None, fresh=1 if quick else None)

    def largest(**kw: Any) -> dict[str, Any]:
        from benchmarks import app_memory
        shape = app_memory.TINY_QWEN if kw.pop("quick", False) else None
        return app_memory.run(**kw, shape=shape, family="qwen2")

    def sessions(**kw: Any) -> dict[str, Any]:
        from benchmarks import sessions as many
        return many.kept_sessions(**kw)

    def load(**kw: Any) -> dict[str, Any]:
        from benchmarks import sessions as many
        return many.load(**kw)

    def dla(**kw: Any) -> dict[str, Any]:
        from benchmarks import attribution as logit_attribution
        from benchmarks.hub_lm import TINY
        quick = kw.pop("quick", False)
        return logit_attribution.run(**kw, shape=TINY if quick else None)

    def token_attribution(**kw: Any) -> dict[str, Any]:
        from benchmarks import attribution_ig
        quick = kw.pop("quick", False)
        return attribution_ig.run(**kw, shape=attribution_ig.TINY if quick else None, fresh=1 if quick else None)

    def flow(**kw: Any) -> dict[str, Any]:
        from benchmarks import flow as routes
        from benchmarks.hub_lm import TINY
        quick = kw.pop("quick", False)
        return routes.run(**kw, shape=TINY if quick else None)

    def sae(**kw: Any) -> dict[str, Any]:
        from benchmarks import sae as saes
        if kw.pop("quick", False):
            kw = dict(saes.QUICK)
        return saes.run(**kw)

    def head_computation(**kw: Any) -> dict[str, Any]:
        from benchmarks import head_computation as inside
        from benchmarks.hub_lm import TINY
        quick = kw.pop("quick", False)
        return inside.run(**kw, shape=TINY if quick else None, draw_tokens=(16,) if quick else (128, 1024))

    def head_effects(**kw: Any) -> dict[str, Any]:
        from benchmarks import head_effects as effects
        from benchmarks.hub_lm import TINY
        quick = kw.pop("quick", False)
        return effects.run(**kw, shape=TINY if quick else None)

    def view_file(**kw: Any) -> dict[str, Any]:
        from benchmarks import view_file as vf
        return vf.run(**kw)

    def circuits(**kw: Any) -> dict[str, Any]:
        from benchmarks import circuits as circ
        return circ.run_section(**kw)

    return dict(view_file=view_file, app_long=app_long, memory=memory, largest=largest, sessions=sessions, load=load, dla=dla, sae=sae,
                latency=latency, figures=figures, draw=draw, app=app, importance=importance, training=training,
                capture=capture, cold_start=cold_start, hub_lm=hub_lm, token_attribution=token_attribution, flow=flow,
                head_computation=head_computation, head_effects=head_effects, circuits=circuits)


def parse_only(values: list[str] | None) -> list[str]:
    if not values:
        return list(SECTIONS)
    out = []
    for v in values:
        for name in v.split(","):
            name = ALIASES.get(name.strip(), name.strip())
            if name not in SECTIONS:
                raise SystemExit(f"unknown section {name!r}; choose from {', '.join(SECTIONS)}")
            out.append(name)
    return list(dict.fromkeys(out))


def profiles(res: dict[str, Any]) -> dict[str, str]:
    """cProfile / torch.profiler / byte summaries for each missed target."""
    from benchmarks import profiling

    missed = {t["key"] for t in res.get("targets", []) if t["met"] is False}
    out: dict[str, str] = {}
    if missed & {"latency_128", "latency_128_app", "latency_128_app_off", "bytes_128", "bytes_128_app",
                 "bytes_128_app_off"}:
        from benchmarks import update_latency as ul
        from benchmarks.common import load_minilm, text_of_tokens

        text = text_of_tokens(load_minilm().tokenizer, 128)
        if "latency_128" in missed:
            out["Update latency, explorer pipeline, 128 tokens (cProfile, cumulative)"] = \
                profiling.cprofile_summary(lambda: ul.our_views(text), 22)
        for key, head_off in (("latency_128_app", False), ("latency_128_app_off", True)):
            if key in missed and ul.app_available() is None:
                what = "one head off" if head_off else "no toggle"
                out[f"Update latency, app Run ({what}), 128 tokens (cProfile, cumulative)"] = \
                    profiling.cprofile_summary(lambda h=head_off: ul.app_update(text, head_off=h), 22)
        if missed & {"bytes_128", "bytes_128_app", "bytes_128_app_off"}:
            ov, hd = ul.our_views(text)
            parts = {"overview": profiling.figure_bytes(ov), "head": profiling.figure_bytes(hd)}
            for key, head_off in (("bytes_128_app", False), ("bytes_128_app_off", True)):
                if key in missed and ul.app_available() is None:
                    payload = ul.app_update(text, head_off=head_off)
                    parts[f"app plots, {'one head off' if head_off else 'no toggle'} (bytes each)"] = {
                        name: len(p.encode()) for name, p in zip(ul.APP_PLOTS, payload)}
            out["Bytes at 128 tokens, by part of each figure"] = json.dumps(parts, indent=1)
    if missed & {"sweep", "gradient"}:
        import torch

        from benchmarks.head_importance import minilm_or_same_shape
        from explorer.interpret.importance import Probe, exact_sweep, gradient_estimate

        model, _ = minilm_or_same_shape()
        src = torch.randint(1000, 20000, (2, 128))
        src[1, 64:] = 0
        probe = Probe(src, "similarity")
        if "sweep" in missed:
            out["Exact head sweep, 128 tokens (cProfile, cumulative)"] = \
                profiling.cprofile_summary(lambda: exact_sweep(model, probe), 18)
        if "gradient" in missed:
            out["Gradient estimate, 128 tokens (cProfile, cumulative)"] = \
                profiling.cprofile_summary(lambda: gradient_estimate(model, probe), 18)
    if "training" in missed:
        from benchmarks import model_core as mc
        from explorer.model import Transformer, TransformerConfig

        batches = mc.make_batches(5, 32, 256, 1000)
        ours = Transformer(TransformerConfig.preset("seed001-classifier"))
        theirs = mc.TorchTextClassifier()
        mc.train_steps_per_second(ours, lambda ids: ours(ids, need_weights=False).logits, batches[:2])
        mc.train_steps_per_second(theirs, theirs, batches[:2])
        out["Training, explorer encoder, 5 steps (torch.profiler, self CPU)"] = profiling.torch_profile_summary(
            lambda: mc.train_steps_per_second(ours, lambda ids: ours(ids, need_weights=False).logits, batches), 12)
        out["Training, torch.nn.TransformerEncoder, 5 steps (torch.profiler, self CPU)"] = \
            profiling.torch_profile_summary(lambda: mc.train_steps_per_second(theirs, theirs, batches), 12)
    return out


def read_notes(path: Path) -> list[str]:
    """Note items from a Markdown list (a leading "- " is dropped; blank lines are skipped)."""
    lines = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines()]
    return [ln[2:] if ln.startswith("- ") else ln for ln in lines if ln]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one repeat (smoke test)")
    ap.add_argument("--only", action="append", metavar="NAME", help=f"sections: {', '.join(SECTIONS)}")
    ap.add_argument("--full", action="store_true", help="also draw BertViz at 512 tokens (can take minutes)")
    ap.add_argument("--no-profile", action="store_true", help="skip the profiles of missed targets")
    ap.add_argument("--notes", type=Path, default=None,
                    help="Markdown file of notes on this run (one '- ' item per line) for the report")
    ap.add_argument("--render", action="store_true",
                    help="run nothing: rewrite the report from the results file (with --notes, replace its notes)")
    ap.add_argument("--json", type=Path, default=None, help="results file (default benchmarks/results.json)")
    ap.add_argument("--md", type=Path, default=None, help="report file (default BENCHMARKS.md)")
    args = ap.parse_args(argv)
    only = parse_only(args.only)
    # As app.py does: numpy's idle BLAS threads would otherwise slow every torch forward pass after a figure.
    from explorer.device import single_thread_numpy_blas

    single_thread_numpy_blas()
    if args.quick and args.json is None and args.md is None:
        tmp = Path(tempfile.gettempdir()) / "explorer-benchmarks-quick"
        tmp.mkdir(exist_ok=True)
        args.json, args.md = tmp / "results.json", tmp / "BENCHMARKS.md"
    json_path = args.json or ROOT / "benchmarks" / "results.json"
    md_path = args.md or ROOT / "BENCHMARKS.md"

    if args.render:
        res = json.loads(json_path.read_text())
        if args.notes:
            res["notes"] = read_notes(args.notes)
            json_path.write_text(json.dumps(res, indent=1, default=str) + "\n")
        md_path.write_text(report.markdown(res))
        print(f"[benchmarks] wrote {md_path} from {json_path}", file=sys.stderr)
        return 0
    res: dict[str, Any] = {}
    if args.only and json_path.is_file():  # partial run: keep the other sections
        try:
            res = json.loads(json_path.read_text())
        except json.JSONDecodeError:
            res = {}
        if bool(res.get("quick")) != args.quick:
            res = {}  # never mix quick and full numbers
    res.pop("notes", None)  # notes describe one run: a new run needs new ones (--notes)
    if args.notes:
        res["notes"] = read_notes(args.notes)
    res.update(quick=args.quick, argv=[a for a in (argv if argv is not None else sys.argv[1:])])
    res["machine"] = machine()  # before the sections: the load average shows whether the machine was idle
    params = sizes(args.quick, args.full)
    run = runners()
    errors = dict(res.get("errors") or {})
    partial = json_path.with_suffix(".partial.json")
    for name in only:
        t0 = time.perf_counter()
        res.setdefault("section_runs", {})[name] = {  # sections of one report may come from several runs
            "started_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "load_average_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None}
        print(f"[benchmarks] {name} …", file=sys.stderr, flush=True)
        try:
            res[name] = run[name](**params[name])
            errors.pop(name, None)
        except Exception as err:  # noqa: BLE001 - one broken section must not lose the others
            traceback.print_exc()
            res[name] = {"skipped": f"error: {type(err).__name__}: {err}"}
            errors[name] = f"{type(err).__name__}: {err}"
        res.setdefault("seconds", {})[name] = round(time.perf_counter() - t0, 1)
        print(f"[benchmarks] {name} done in {res['seconds'][name]:.0f} s", file=sys.stderr, flush=True)
        partial.write_text(json.dumps(res, indent=1, default=str) + "\n")  # survives an interrupted run
    res["errors"] = errors
    if isinstance(res.get("draw"), dict) and res["draw"].get("browser"):
        res["machine"]["browser"] = res["draw"]["browser"]
    res["targets"] = report.targets(res)
    if not args.quick and not args.no_profile:
        try:
            res["profiles"] = profiles(res)
        except Exception as err:  # noqa: BLE001
            traceback.print_exc()
            res["profiles"] = {"profiling failed": f"{type(err).__name__}: {err}"}
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(res, indent=1, default=str) + "\n")
    partial.unlink(missing_ok=True)
    md_path.write_text(report.markdown(res))
    print(f"[benchmarks] wrote {json_path} and {md_path}", file=sys.stderr)
    for t in res["targets"]:
        state = {True: "met", False: "MISSED", None: "not measured"}[t["met"]]
        print(f"  {state:>12}  {t['target']}: {t['measured']} (wanted {t['rule']})", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

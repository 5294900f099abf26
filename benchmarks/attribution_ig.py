"""Token attribution benchmark (issues 27 and 35): integrated gradients on the token embeddings of one prediction
(`explorer.interpret.token_attribution`, the padding-token baseline), with the integration points chosen per request
(the default: Simpson's rule on nested points until |delta| < 2% of the change) beside the old fixed 32
Gauss-Legendre points, in the same run.

1. A GPT-2-small-shaped model (12 layers x 12 heads, d_model 768, vocabulary 50,257, random weights, built with
   `TransformerConfig`) at 128 tokens, the logit of the top token at the last position; against input x gradient
   (one gradient) and one ordinary forward pass (`model(ids, need_weights=False)`, inference mode). Goal: the
   default <= 3 s. Also each `internal_batch_size` given (points per forward + backward) for the fixed 32 points.
   Peak memory: each case in a fresh process, the rise of the RSS high-water mark (VmHWM, reset just before) during
   one call above the resident size with the model built (its 124M float32 parameters are 498 MB). cpu_s: the
   process's CPU time per call (all threads), which other jobs on the machine change less than the wall time.
2. The shipped models (ReLU: jagged integrands): each example's own prediction (induction-gpt the next token,
   date-gpt the first answer token after '[BOS] date [SEP]', date-translator the first output token) and dates typed
   as people type them (`explorer.training.dates.TYPED_DATES`) on date-gpt, special tokens kept as the app keeps them:
   per case the points the default chose, its time and relative delta; the fixed 32 points' time and relative
   delta; and Gauss-Legendre orders 4, 8, 16, ... until 2% (no point shared: the gradients of every order count),
   the other way to choose points per request. Full runs add every answer position of the typed dates, summed.

Run alone: python -m benchmarks.attribution_ig [--tokens 128] [--repeats 3] [--batches 8 16 32] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

from benchmarks.common import median_time

ROOT = Path(__file__).resolve().parent.parent
GPT2_SMALL = dict(vocab_size=50257, d_model=768, n_heads=12, n_layers=12, d_ff=3072, max_len=1024)
TINY = dict(vocab_size=512, d_model=64, n_heads=4, n_layers=2, d_ff=256, max_len=64)  # --quick
STEPS = 32  # the old default: a fixed count of Gauss-Legendre points
TARGET = 0.02
GL_ORDERS = (4, 8, 16, 32, 64, 128, 256)  # Gauss-Legendre per request: each order from scratch


def build(shape: dict[str, int]):
    """GPT-2's options (pre-norm, final norm, learned positions, tanh GELU, tied head) at `shape`, random weights;
    padding id 0 (GPT-2 has none: the benchmark keeps the default baseline's path)."""
    from explorer.model import Transformer, TransformerConfig

    torch.manual_seed(0)
    config = TransformerConfig(arch="decoder", **shape, norm_first=True, final_norm=True, positional="learned",
                               activation="gelu_tanh", dropout=0.0, tie_embeddings=True, lm_head_bias=False, pad_id=0)
    return Transformer(config).eval()


def cases(model, ids: torch.Tensor, batches: tuple[int, ...]) -> dict[str, Any]:
    from explorer.interpret import token_attribution

    def forward():
        with torch.inference_mode():
            return model(ids[None], need_weights=False).logits

    out = {"forward": forward,
           "input_x_gradient": lambda: token_attribution(model, ids, method="input_x_gradient"),
           "integrated_gradients": lambda: token_attribution(model, ids),  # points chosen for the request
           f"integrated_gradients_fixed_{STEPS}": lambda: token_attribution(model, ids, steps=STEPS)}
    for b in batches:
        out[f"integrated_gradients_fixed_{STEPS}_batch_{b}"] = (
            lambda b=b: token_attribution(model, ids, steps=STEPS, internal_batch_size=b))
    return out


def status_mb(key: str) -> float:
    """VmHWM (the RSS high-water mark) or VmRSS of this process, in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {key} in /proc/self/status")


def reset_peak() -> float:
    """Reset the high-water mark to the current RSS (Linux: "5" into /proc/self/clear_refs); -> the RSS in MB."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass  # then the peak counts from the highest point so far (the model's build): an underestimate
    return status_mb("VmRSS")


def peak_child(case: str, shape: dict[str, int], tokens: int, threads: int) -> dict[str, float]:
    """In a fresh process: the high-water mark's rise above the resident size during one call of `case`, after a
    warm-up on 8 tokens (imports, Captum, allocator pools of small sizes belong to the baseline)."""
    torch.set_num_threads(threads)
    model = build(shape)
    ids = torch.randint(1, shape["vocab_size"], (tokens,), generator=torch.Generator().manual_seed(tokens))
    small = ids[:8]
    batched = "_batch_" in case
    cases(model, small, (8,))[case if not batched else f"integrated_gradients_fixed_{STEPS}_batch_8"]()
    start = reset_peak()
    cases(model, ids, _batch_of(case))[case]()
    return {"peak_above_model_mb": round(status_mb("VmHWM") - start, 1)}


def _batch_of(case: str) -> tuple[int, ...]:
    return (int(case.rsplit("_", 1)[1]),) if "_batch_" in case else ()


def peak_in_subprocess(case: str, shape: dict[str, int], tokens: int) -> float:
    cmd = [sys.executable, "-m", "benchmarks.attribution_ig", "--peak", case, "--shape", json.dumps(shape),
           "--tokens", str(tokens), "--threads", str(torch.get_num_threads())]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True, env=dict(os.environ))
    return json.loads(out.stdout.strip().splitlines()[-1])["peak_above_model_mb"]


def run(tokens: int = 128, repeats: int = 3, batches: tuple[int, ...] = (16, 32),
        shape: dict[str, int] | None = None, peak: bool = True, fresh: int | None = None) -> dict[str, Any]:
    """Median seconds of each case (one warm-up), IG's completeness, and (peak) each case's peak memory: in a fresh
    process for the first `fresh` cases (None: all), in this one for the others (--quick: the smoke test shows the
    fresh-process path on one case; a process here costs ~1.5 s of imports)."""
    from explorer.interpret.attribution import default_batch

    shape = shape or GPT2_SMALL
    model = build(shape)
    params = sum(p.numel() for p in model.parameters())
    ids = torch.randint(1, shape["vocab_size"], (tokens,), generator=torch.Generator().manual_seed(tokens))
    rows = []
    for i, (name, fn) in enumerate(cases(model, ids, batches).items()):
        cpu = time.process_time()
        seconds, result = median_time(fn, repeats)
        cpu = (time.process_time() - cpu) / (repeats + 1)  # the warm-up included: a mean, not a median
        row: dict[str, Any] = {"case": name, "ms": round(seconds * 1e3, 1), "cpu_s": round(cpu, 2)}
        if name.startswith("integrated_gradients"):
            row.update(steps=result.steps, evaluations=result.evaluations, integration=result.integration,
                       relative_delta=round(result.relative_delta, 6), reached=result.reached,
                       logit=round(result.logit, 4))
        if peak and (fresh is None or i < fresh):
            row["peak_above_model_mb"] = peak_in_subprocess(name, shape, tokens)
        elif peak:
            row["peak_above_model_mb"] = peak_child(name, shape, tokens, torch.get_num_threads())["peak_above_model_mb"]
        rows.append(row)
    forward_ms = rows[0]["ms"]
    for row in rows:
        row["over_one_forward"] = round(row["ms"] / forward_ms, 1)
    out = {"model": f"GPT-2-small shape {shape} ({params:,} parameters, random weights)",
           "tokens": tokens, "steps": STEPS, "target": TARGET, "threads": torch.get_num_threads(), "repeats": repeats,
           "default_internal_batch": default_batch(model, tokens, None, STEPS), "by_case": rows}
    del model
    out["shipped"] = shipped(repeats, quick=shape is not GPT2_SMALL)
    out["load_average_1min_after"] = round(os.getloadavg()[0], 2)
    return out


# ------------------------------------------------------------------------- the shipped models
def shipped_cases(quick: bool) -> list[tuple[str, str, Any, list[int], list[int] | None, frozenset[int]]]:
    """(model name, text, model, ids, tgt, keep): each example's own prediction, and the typed dates on date-gpt
    (--quick: two examples per model, three typed dates)."""
    import explorer
    from explorer.training.dates import TYPED_DATES
    from explorer.training.tasks import task_from_dict

    out = []
    for name in ("induction-gpt", "date-gpt", "date-translator"):
        bundle = explorer.load(name, "cpu")
        tok, model = bundle.tokenizer, bundle.model.eval()
        keep = tok.special_ids & bundle.target_tokenizer.special_ids  # what the Contributions tab keeps
        examples = list(bundle.task["examples"])[: 2 if quick else None]
        if name == "induction-gpt":
            out += [(name, t, model, tok.encode(t).ids, None, keep) for t in examples]
            continue
        task = task_from_dict(bundle.task, tok)
        tgt = [task.bos_id] if name == "date-translator" else None
        out += [(name, t, model, task.encode_source(t)[0], tgt, keep) for t in examples]
        if name == "date-gpt":
            out += [(name + " typed", t, model, task.encode_source(t)[0], None, keep)
                    for t in TYPED_DATES[: 3 if quick else None]]
    return out


def gauss_legendre_per_request(model, ids, tgt, keep) -> tuple[Any, int]:
    """Gauss-Legendre orders 4, 8, 16, ... until 2% (each order from scratch) -> (last result, gradients in all)."""
    from explorer.interpret import token_attribution

    spent = 0
    for n in GL_ORDERS:
        result = token_attribution(model, ids, tgt=tgt, keep_ids=keep, steps=n)
        spent += n
        if result.reached:
            break
    return result, spent


def compare(model, ids, tgt, keep, repeats: int) -> dict[str, Any]:
    """The default (points per request), the fixed 32 points and Gauss-Legendre per request on one prediction."""
    from explorer.interpret import token_attribution

    auto_s, auto = median_time(lambda: token_attribution(model, ids, tgt=tgt, keep_ids=keep), repeats)
    fixed_s, fixed = median_time(lambda: token_attribution(model, ids, tgt=tgt, keep_ids=keep, steps=STEPS), repeats)
    gl_s, (gl, gl_spent) = median_time(lambda: gauss_legendre_per_request(model, ids, tgt, keep), repeats)
    return {"auto_steps": auto.steps, "auto_ms": round(auto_s * 1e3, 1),
            "auto_relative_delta": round(auto.relative_delta, 5), "auto_reached": auto.reached,
            "fixed_ms": round(fixed_s * 1e3, 1), "fixed_relative_delta": round(fixed.relative_delta, 5),
            "fixed_reached": fixed.reached,
            "gl_steps": gl.steps, "gl_evaluations": gl_spent, "gl_ms": round(gl_s * 1e3, 1),
            "gl_relative_delta": round(gl.relative_delta, 5), "gl_reached": gl.reached}


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Sums over cases: gradients, time, targets missed."""
    return {"cases": len(rows),
            "auto_evaluations": sum(r["auto_steps"] for r in rows),
            "auto_ms": round(sum(r["auto_ms"] for r in rows), 1),
            "auto_missed": sum(not r["auto_reached"] for r in rows),
            "auto_max_steps": max(r["auto_steps"] for r in rows),
            "auto_worst_relative_delta": max(r["auto_relative_delta"] for r in rows),
            "fixed_evaluations": STEPS * len(rows), "fixed_ms": round(sum(r["fixed_ms"] for r in rows), 1),
            "fixed_missed": sum(not r["fixed_reached"] for r in rows),
            "fixed_worst_relative_delta": max(r["fixed_relative_delta"] for r in rows),
            "gl_evaluations": sum(r["gl_evaluations"] for r in rows), "gl_ms": round(sum(r["gl_ms"] for r in rows), 1),
            "gl_missed": sum(not r["gl_reached"] for r in rows)}


def answer_positions(repeats: int) -> dict[str, Any]:
    """Every answer position of the typed dates on date-gpt (prompt + its greedy answer; the logit of each answer
    token where it is predicted), summed."""
    import explorer
    from explorer.training.dates import TYPED_DATES
    from explorer.training.tasks import task_from_dict

    bundle = explorer.load("date-gpt", "cpu")
    task = task_from_dict(bundle.task, bundle.tokenizer)
    keep = bundle.tokenizer.special_ids
    rows = []
    for text in TYPED_DATES:
        prompt = task.encode_source(text)[0]
        sequence = prompt + task.generate(bundle.model, [text]).tokens[0].tolist()
        rows += [compare(bundle.model, sequence[:end], None, keep, repeats)
                 for end in range(len(prompt), len(sequence))]
    return totals(rows)


def shipped(repeats: int, quick: bool) -> dict[str, Any]:
    rows, by_model = [], {}
    for name, text, model, ids, tgt, keep in shipped_cases(quick):
        row = {"model": name, "text": text, "tokens": len(ids), **compare(model, ids, tgt, keep, repeats)}
        rows.append(row)
        by_model.setdefault(name, []).append(row)
    out = {"rows": rows, "totals": {name: totals(r) for name, r in by_model.items()}}
    if not quick:
        out["typed_answer_positions"] = answer_positions(1)
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batches", type=int, nargs="*", default=[16, 32])
    ap.add_argument("--quick", action="store_true", help="a tiny model shape and a few shipped cases (smoke test)")
    ap.add_argument("--no-peak", action="store_true", help="skip the peak-memory subprocesses")
    ap.add_argument("--peak", help=argparse.SUPPRESS)  # child process: one case
    ap.add_argument("--shape", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads(), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.peak:
        print(json.dumps(peak_child(args.peak, json.loads(args.shape), args.tokens, args.threads)))
        return
    shape = TINY if args.quick else GPT2_SMALL
    print(json.dumps(run(args.tokens, args.repeats, tuple(args.batches), shape, not args.no_peak), indent=1))


if __name__ == "__main__":
    main()

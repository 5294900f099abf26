"""Benchmark: our tiled all-heads overview vs BertViz's model view, 6 layers x 12 heads.

Run: `python -m benchmarks.viz_overview [--runs 5] [--bertviz-max 512]`. Prints JSON.

For each token count: random softmax attention (L=6, H=12, T, T), then
- ours: median time to build `attention_overview` and to build + serialise (`figure_json`,
  the text gr.Plot sends), the JSON length and the cells sent (max-pooled to the tiles' pixels,
  one byte each above 64 x 64 cells: explorer/viz/encode.py);
- BertViz: median time of `model_view(..., html_action="return")` (it serialises inside) and
  the length of the returned HTML (its data are inlined there; its JS loads from a CDN, and ours
  from Gradio's bundle, so neither count the library code).
BertViz needs `pip install bertviz --no-deps ipython` (see requirements-bench.txt).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from benchmarks.common import median_time
from explorer.viz import attention_overview, figure_json

LAYERS, HEADS = 6, 12


def softmax_attention(t: int, seed: int = 0) -> np.ndarray:
    """(L, H, T, T) float32 rows that sum to 1, peaked like real attention."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((LAYERS, HEADS, t, t), dtype=np.float32) * 2.0
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def bench_ours(attn: np.ndarray, tokens: list[str], runs: int) -> dict[str, Any]:
    figure_json(attention_overview(attn, tokens, tokens))  # warm-up: imports, first-call caches
    build, fig = median_time(lambda: attention_overview(attn, tokens, tokens), runs, warmup=0)
    both, js = median_time(lambda: figure_json(attention_overview(attn, tokens, tokens)), runs, warmup=0)
    z = fig.data[0].z
    return {"build_s": round(build, 4), "build_and_json_s": round(both, 4), "json_bytes": len(js),
            "cells": int(z.size), "z_dtype": str(z.dtype),
            "downsampled": bool(fig.layout.meta["overview_grid"]["q_edges"][-1]
                                > len(fig.layout.meta["overview_grid"]["q_edges"]) - 1)}


def bench_bertviz(attn: np.ndarray, tokens: list[str], runs: int) -> dict[str, Any]:
    try:
        import torch
        from bertviz import model_view
    except ImportError as err:  # optional dependency
        return {"error": f"bertviz not importable: {err}"}
    layers = tuple(torch.from_numpy(attn[i][None]) for i in range(attn.shape[0]))  # (1, H, T, T) each
    if len(tokens) <= 128:  # warm-up (skipped for long inputs: one call takes seconds and ~1 GB)
        model_view(layers, tokens, html_action="return")
    t, html = median_time(lambda: model_view(layers, tokens, html_action="return"), runs, warmup=0)
    return {"build_s": round(t, 4), "html_bytes": len(html.data)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, nargs="+", default=[32, 128, 512])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--bertviz-max", type=int, default=512, help="skip BertViz above this many tokens")
    ap.add_argument("--bertviz-runs-long", type=int, default=1,
                    help="runs for BertViz at > 128 tokens (one run takes ~10 s and ~1 GB)")
    args = ap.parse_args()
    results = []
    for t in args.tokens:
        attn = softmax_attention(t)
        tokens = [f"tok{i % 40}" for i in range(t)]
        row: dict[str, Any] = {"tokens": t, "layers": LAYERS, "heads": HEADS,
                               "ours": bench_ours(attn, tokens, args.runs)}
        if t <= args.bertviz_max:
            bv = bench_bertviz(attn, tokens, args.runs if t <= 128 else args.bertviz_runs_long)
            row["bertviz"] = bv
            if "error" not in bv:
                ours = row["ours"]
                row["ratio_size"] = round(ours["json_bytes"] / bv["html_bytes"], 4)
                row["ratio_build"] = round(ours["build_s"] / bv["build_s"], 4)
                row["ratio_build_and_json"] = round(ours["build_and_json_s"] / bv["build_s"], 4)
        results.append(row)
        print(json.dumps(row), flush=True)
    print(json.dumps({"results": results}, indent=1))


if __name__ == "__main__":
    main()

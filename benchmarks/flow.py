"""Information Flow Routes benchmark (issue 27): the contribution graph (`explorer.interpret.contribution_graph`,
threshold 0.04, from the last position) on a GPT-2-small-shaped model (12 layers x 12 heads, d_model 768, random
weights, loaded with `explorer.load` from the Hugging Face layout as hub_lm writes it) at 128 and 1,024 tokens.
Targets: <= 1 s at 128 tokens, <= 6 s at 1,024, peak memory <= 1.5 GB above the loaded model.

Time: median of `repeats` calls after one warm-up; cpu_s the process's CPU time per call (all threads). Peak: each
length in a fresh process, the rise of the RSS high-water mark (reset just before) during one call above the
resident size with the model loaded (after a warm-up on 8 tokens). Also the graph's size (nodes, edges, rows whose
head parts were computed), since the time grows with the rows the routes reach. Random weights spread attention
evenly, so few head edges pass the threshold: a trained model's graph is larger.

Run alone: python -m benchmarks.flow [--tokens 128 1024] [--repeats 3] [--quick] [--no-peak]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from benchmarks.attribution_ig import reset_peak, status_mb
from benchmarks.common import median_time, peak_section_parser
from benchmarks.hub_lm import GPT2_SMALL, TINY, write_folder

ROOT = Path(__file__).resolve().parent.parent
THRESHOLD = 0.04


def load(shape: dict[str, int], folder: Path):
    import explorer

    return explorer.load(write_folder(folder, shape), "cpu").model.eval()


def ids_of(shape: dict[str, int], tokens: int) -> torch.Tensor:
    return torch.randint(0, shape["vocab_size"], (tokens,), generator=torch.Generator().manual_seed(tokens))


def graph(model, ids: torch.Tensor):
    from explorer.interpret import contribution_graph

    return contribution_graph(model, ids, threshold=THRESHOLD)


def peak_child(shape: dict[str, int], tokens: int, threads: int) -> dict[str, float]:
    torch.set_num_threads(threads)
    with tempfile.TemporaryDirectory() as tmp:
        model = load(shape, Path(tmp) / "gpt2")
        graph(model, ids_of(shape, 8))
        start = reset_peak()
        graph(model, ids_of(shape, tokens))
        return {"peak_above_model_mb": round(status_mb("VmHWM") - start, 1)}


def peak_in_subprocess(shape: dict[str, int], tokens: int) -> float:
    cmd = [sys.executable, "-m", "benchmarks.flow", "--peak", "--shape", json.dumps(shape), "--tokens", str(tokens),
           "--threads", str(torch.get_num_threads())]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True, env=dict(os.environ))
    return json.loads(out.stdout.strip().splitlines()[-1])["peak_above_model_mb"]


def run(tokens=(128, 1024), repeats: int = 3, shape: dict[str, int] | None = None, peak: bool = True
        ) -> dict[str, Any]:
    shape = shape or GPT2_SMALL
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        model = load(shape, Path(tmp) / "gpt2")
        params = sum(p.numel() for p in model.parameters())
        for n in tokens:
            ids = ids_of(shape, n)
            cpu = time.process_time()
            seconds, g = median_time(lambda ids=ids: graph(model, ids), repeats)
            cpu = (time.process_time() - cpu) / (repeats + 1)  # the warm-up included: a mean, not a median
            row: dict[str, Any] = {
                "tokens": n, "ms": round(seconds * 1e3, 1), "cpu_s": round(cpu, 2), "nodes": len(g.nodes),
                "edges": len(g.edges), "head_edges": sum(e.kind == "head" for e in g.edges),
                "rows_with_head_parts": sum(t.heads is not None for t in g.shares.values())}
            if peak:
                row["peak_above_model_mb"] = peak_in_subprocess(shape, n)
            rows.append(row)
    return {"model": f"GPT-2 shape {shape} ({params:,} parameters, random weights)", "gpt2_small": shape == GPT2_SMALL,
            "threshold": THRESHOLD,
            "threads": torch.get_num_threads(), "repeats": repeats, "by_tokens": rows,
            "load_average_1min_after": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None}


def main(argv=None) -> None:
    args = peak_section_parser(__doc__, repeats=3).parse_args(argv)
    if args.peak:
        print(json.dumps(peak_child(json.loads(args.shape), args.tokens[0], args.threads)))
        return
    shape = TINY if args.quick else GPT2_SMALL
    print(json.dumps(run(tuple(args.tokens), args.repeats, shape, not args.no_peak), indent=1))


if __name__ == "__main__":
    main()

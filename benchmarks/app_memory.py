"""Peak memory of one long /analyze request (issue 16): a GPT-2-small-shaped model (12 layers x 12 heads,
d_model 768, random weights) saved in the Hugging Face layout and loaded through `explorer.load` (the Hub
path), then one request at 1,024 tokens through the app's own functions, as /analyze does: compare (the model
runs), the Analysis that reduces the runs, the figures of the visible tab drawn and serialised as gr.Plot sends
them. Its position table is 1,064 long (GPT-2's 1,024 + the 40 tokens the app keeps for a continuation), so
the input really is 1,024 tokens.

Each case runs in a fresh Python process (`python -m benchmarks.app_memory --child ...`): the rise of the
process's resident high-water mark (VmHWM, reset through /proc/self/clear_refs after loading) above the RSS of
the loaded model, for *no toggle* (one run) and *head off* (layer 0 head 0 off: a baseline and a toggled run).
The app's own estimate for the request (explorer.app.run.request_memory) is reported beside it.

Run alone: python -m benchmarks.app_memory [--tokens 1024]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GPT2_SMALL_APP = dict(vocab_size=50257, n_embd=768, n_head=12, n_layer=12, n_positions=1024 + 40)
# The largest model the page offers (explorer/app/serving/catalog.py): Qwen2.5-0.5B's shape, random weights (494M
# parameters, 1.98 GB in float32, a 151,936-token vocabulary tied to the embeddings, 2 key/value heads for 14 query
# heads).
QWEN25_05B = dict(vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                  num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768, tie_word_embeddings=True,
                  bos_token_id=0, eos_token_id=0)
TINY_QWEN = dict(QWEN25_05B, vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2)  # --quick
TINY_APP = dict(vocab_size=260, n_embd=32, n_head=2, n_layer=2, n_positions=64 + 40)  # --quick
CASES = ("no toggle", "head off")


def rss_mb(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024  # kB
    raise RuntimeError(f"no {field} in /proc/self/status")


def reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False where that is not possible."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def text_of(tokens: int) -> str:
    """A text the byte-level tokenizer without merges (benchmarks.hub_lm) reads as exactly `tokens` tokens."""
    words = "the cat sat on a mat and the dog ran to the park ".split()
    text, i = "", 0
    while len(text) < tokens:
        text += ("" if not text else " ") + words[i % len(words)]
        i += 1
    return text[:tokens].rstrip() + "x" * (tokens - len(text[:tokens].rstrip()))


def write_qwen2(folder: Path, shape: dict[str, Any]) -> Path:
    """A random Qwen2 of `shape` saved as transformers does, with the byte-level tokenizer beside it."""
    import torch
    import transformers

    from benchmarks.hub_lm import byte_tokenizer

    torch.manual_seed(0)
    transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**shape)).save_pretrained(folder)
    byte_tokenizer().save(str(folder / "tokenizer.json"))
    return folder


def one_request(loaded: Any, tokens: int, case: str) -> dict[str, Any]:
    """What /analyze does on the server for one click (tab 'attention'), with every figure serialised."""
    from explorer.app.serving.limits import DEFAULT_CONTINUATION
    from explorer.app.run.toggles import Toggles
    from explorer.app.run.view import View
    from explorer.app.tabs import analyze
    from explorer.viz import figure_json

    n_layers, n_heads = loaded.config.n_layers, loaded.config.n_heads
    heads = None
    if case == "head off":
        heads = {"decoder": frozenset((la, h) for la in range(n_layers) for h in range(n_heads) if (la, h) != (0, 0))}
    t0 = time.perf_counter()
    a = analyze(loaded, text_of(tokens), "", Toggles(heads_on=heads), View(), tokens, DEFAULT_CONTINUATION)
    sent = sum(len(figure_json(f)) for f in a.figures("attention").values())
    return {"tokens": len(a.tokens[1]), "figure_bytes_attention_tab": sent, "seconds": round(time.perf_counter() - t0, 2)}


def child(folder: Path, tokens: int, case: str, threads: int) -> dict[str, Any]:
    import torch

    torch.set_num_threads(threads)
    import explorer
    from explorer.app.run.request_memory import request_bytes

    loaded = explorer.load(folder, "cpu")
    loaded.model.eval()
    one_request(loaded, 16, case)  # warm-up: imports and lazy initialisation belong to the baseline
    import gc

    gc.collect()
    base = rss_mb()
    exact = reset_peak()
    row = one_request(loaded, tokens, case)
    peak = rss_mb("VmHWM")
    estimate = request_bytes(loaded.config, 1, tokens, toggled=case == "head off")
    return {**row, "case": case, "loaded_rss_mb": round(base, 1), "peak_above_loaded_mb": round(peak - base, 1),
            "estimate_mb": round(estimate / 2**20, 1), "peak_reset": exact}


def run(tokens: int = 1024, shape: dict[str, int] | None = None, family: str = "gpt2",
        fresh: int | None = None) -> dict[str, Any]:
    """`family` "gpt2" (shape: GPT2_SMALL_APP) or "qwen2" (shape: QWEN25_05B). Each case in a fresh process for the
    first `fresh` cases (None: all), in this one for the others (--quick: the smoke test shows the fresh-process path
    on one case; a process here costs seconds of imports)."""
    import torch

    from benchmarks.hub_lm import write_folder

    shape = shape or (GPT2_SMALL_APP if family == "gpt2" else QWEN25_05B)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if family == "gpt2":
            folder = write_folder(Path(tmp) / "gpt2", {**shape, "bos_token_id": 0, "eos_token_id": 0})
        else:
            folder = write_qwen2(Path(tmp) / "qwen2", shape)
        for i, case in enumerate(CASES):
            if fresh is not None and i >= fresh:
                rows.append(child(folder, tokens, case, torch.get_num_threads()))
                continue
            cmd = [sys.executable, "-m", "benchmarks.app_memory", "--child", case, "--folder", str(folder),
                   "--tokens", str(tokens), "--threads", str(torch.get_num_threads())]
            out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True,
                                 env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error"})
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    name = "GPT-2" if family == "gpt2" else "Qwen2.5-0.5B"
    return {"what": __doc__.split("\n\n")[0], "model": f"{name} shape {shape} (random weights)",
            "goal_mb": 1536 if family == "gpt2" else 3072, "by_case": rows}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--child", choices=CASES, help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.folder, args.tokens, args.child, args.threads)))
        return
    print(json.dumps(run(args.tokens), indent=1))


if __name__ == "__main__":
    main()

"""Hub language model benchmark (issue 14): a GPT-2-small-shaped model (124M parameters, random
weights) loaded through `explorer.load` from a folder in the Hugging Face layout, forward with every
layer's attention returned, against transformers' eager GPT2LMHeadModel with output_attentions=True:
same ids, same threads, interleaved, at 128 and 1,024 tokens; ratio ours / transformers (goal <= 1.0).

Peak memory: each side in a fresh Python process (`python -m benchmarks.hub_lm --peak ...`), the rise
of the process's high-water mark (VmHWM) during loading and during one forward pass; the attention
tensors themselves (12 x 12 x T x T float32: 604 MB at 1,024 tokens) are part of both.

Run alone: python -m benchmarks.hub_lm [--tokens 128 1024] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

from benchmarks.common import interleaved, ratio

ROOT = Path(__file__).resolve().parent.parent
GPT2_SMALL = dict(vocab_size=50257, n_embd=768, n_head=12, n_layer=12, n_positions=1024)
TINY = dict(vocab_size=512, n_embd=64, n_head=4, n_layer=2, n_positions=64, bos_token_id=0, eos_token_id=0)  # --quick


def byte_tokenizer():
    """A byte-level BPE tokenizer without merges (256 bytes + <|endoftext|>): enough for loading."""
    import tokenizers
    from tokenizers import decoders, models, pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tk = tokenizers.Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens(["<|endoftext|>"])
    return tk


def write_folder(folder: Path, shape: dict[str, int]) -> Path:
    """A random GPT-2 of `shape` saved as transformers does, with a tokenizer beside it."""
    import transformers

    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(**shape))
    model.save_pretrained(folder)
    byte_tokenizer().save(str(folder / "tokenizer.json"))
    return folder


def load_both(folder: Path) -> tuple[torch.nn.Module, torch.nn.Module]:
    import transformers

    import explorer

    ours = explorer.load(folder, "cpu").model.eval()
    theirs = transformers.GPT2LMHeadModel.from_pretrained(folder, attn_implementation="eager").eval()
    return ours, theirs


def forwards(ours, theirs, ids: torch.Tensor) -> dict[str, Any]:
    def run_ours():
        with torch.inference_mode():
            return ours(ids)

    def run_theirs():
        with torch.inference_mode():
            return theirs(ids, output_attentions=True)
    return {"explorer": run_ours, "transformers": run_theirs}


def agreement(a, b) -> dict[str, float]:
    """Both sides computed the same thing (a sanity check on every measured size)."""
    attn = max((x - y).abs().max().item() for x, y in zip(a.attentions.decoder, b.attentions))
    return {"logits_max_abs_diff": (a.logits - b.logits).abs().max().item(), "attention_max_abs_diff": attn}


def peak_rss_mb() -> float:
    """The process's RSS high-water mark. VmHWM belongs to this address space (reset by exec), unlike
    ru_maxrss, which on Linux carries over the parent's peak into a child started from a big process."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # elsewhere: the best there is


def peak_in_subprocess(side: str, folder: Path, tokens: int) -> dict[str, float]:
    cmd = [sys.executable, "-m", "benchmarks.hub_lm", "--peak", side, "--folder", str(folder), "--tokens", str(tokens),
           "--threads", str(torch.get_num_threads())]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def peak_child(side: str, folder: Path, tokens: int, threads: int) -> dict[str, float]:
    """In a fresh process: high-water mark after imports, after loading, after one forward."""
    torch.set_num_threads(threads)
    import transformers

    import explorer
    import explorer.loading  # noqa: F401 - imports belong to the baseline, not to loading

    transformers.GPT2LMHeadModel  # noqa: B018 - transformers imports its model code on first access
    start = peak_rss_mb()
    if side == "explorer":
        model = explorer.load(folder, "cpu").model.eval()
    else:
        model = transformers.GPT2LMHeadModel.from_pretrained(folder, attn_implementation="eager").eval()
    loaded = peak_rss_mb()
    ids = torch.randint(0, 50000, (1, tokens), generator=torch.Generator().manual_seed(0)) % model.config.vocab_size
    with torch.inference_mode():
        out = model(ids) if side == "explorer" else model(ids, output_attentions=True)
    del out
    return {"load_peak_mb": round(loaded - start, 1), "forward_peak_mb": round(peak_rss_mb() - loaded, 1)}


def run(tokens=(128, 1024), repeats=3, shape: dict[str, int] | None = None, peak: bool = True) -> dict[str, Any]:
    shape = shape or GPT2_SMALL
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_folder(Path(tmp) / "gpt2", shape)
        ours, theirs = load_both(folder)
        params = sum(p.numel() for p in ours.parameters())
        rows = []
        for n in tokens:
            ids = torch.randint(0, shape["vocab_size"], (1, n), generator=torch.Generator().manual_seed(n))
            times, outs = interleaved(forwards(ours, theirs, ids), repeats)
            row = {"tokens": n, "explorer_ms": round(times["explorer"] * 1e3, 1),
                   "transformers_ms": round(times["transformers"] * 1e3, 1),
                   "ratio_explorer_over_transformers": ratio(times["explorer"], times["transformers"]),
                   **agreement(outs["explorer"], outs["transformers"])}
            del outs
            if peak:
                row["peak_mb"] = {side: peak_in_subprocess(side, folder, n) for side in ("explorer", "transformers")}
            rows.append(row)
    return {"model": f"GPT-2 shape {shape} ({params:,} parameters, random weights)", "threads": torch.get_num_threads(),
            "repeats": repeats, "by_tokens": rows}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, nargs="+", default=[128, 1024])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--peak", choices=("explorer", "transformers"), help=argparse.SUPPRESS)  # child process
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads(), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.peak:
        print(json.dumps(peak_child(args.peak, args.folder, args.tokens[0], args.threads)))
        return
    print(json.dumps(run(tuple(args.tokens), args.repeats), indent=1))


if __name__ == "__main__":
    main()

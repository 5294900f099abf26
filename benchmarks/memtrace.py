"""The app with memory probes, for `benchmarks/soak.py`: run `app.main` and, on each SIGUSR1, write
what the server's memory holds to OUT_DIR/probe-<n>.json (a diagnostic tool, not used by the app).

    python benchmarks/memtrace.py OUT_DIR [--trace FRAMES] [--trim] -- [app.py arguments]

Each probe records the resident memory (VmRSS, and its anonymous part RssAnon) as found, after
`gc.collect()`, and (with --trim) after glibc's `malloc_trim(0)`; the objects in each garbage-collector
generation, how many are frozen, how many full collections ran, and how many unreachable objects (garbage
waiting for a full collection) that `gc.collect()` found; a census of the objects the collector tracks, by
type; and (with --trace) tracemalloc's traced bytes and a snapshot. Tracing starts at the first probe
(tracing the start-up would take minutes), so the tracemalloc differences show what was allocated after it
and is still alive. From the second probe on it also writes the differences to the previous probe: the
census types and the tracemalloc tracebacks (innermost FRAMES frames) that grew most. RSS growth far
above the traced growth is native memory (glibc arenas, fragmentation, torch/numpy buffers); RSS that
falls back after `malloc_trim(0)` was freed memory glibc had kept, not a leak.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import signal
import sys
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

TOP = 25  # rows of each difference table


def rss_kb() -> dict[str, int]:
    """VmRSS and RssAnon of this process, in kB (Linux /proc)."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile"):
            out[key] = int(value.split()[0])
    return out


def mappings() -> dict[str, dict[str, Any]]:
    """This process's memory mappings (/proc/self/smaps): start address -> size, Rss (kB) and name."""
    out: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] = {}
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and not fields[0].endswith(":"):  # a mapping's header line
            start, end = (int(x, 16) for x in fields[0].split("-"))
            current = {"size_kb": (end - start) // 1024, "rss_kb": 0, "name": " ".join(fields[5:]) or "[anon]"}
            out[fields[0].split("-")[0]] = current
        elif fields[0] == "Rss:":
            current["rss_kb"] = int(fields[1])
    return out


def census() -> Counter:
    """Objects tracked by the garbage collector, counted by module-qualified type name."""
    return Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects())


class Prober:
    """Takes the probes; keeps the previous one's census and snapshot to report differences."""

    def __init__(self, out: Path, frames: int, trim: bool):
        self.out, self.frames, self.trace, self.n = out, max(1, frames), frames > 0, 0
        self.previous: tuple[Counter, tracemalloc.Snapshot | None] | None = None
        self.maps: dict[str, dict[str, Any]] = {}
        self.libc = ctypes.CDLL("libc.so.6") if trim else None

    def snapshot(self) -> tracemalloc.Snapshot | None:
        if not self.trace:
            return None
        if not tracemalloc.is_tracing():
            tracemalloc.start(self.frames)
        here = tracemalloc.Filter(False, __file__)
        return tracemalloc.take_snapshot().filter_traces([here, tracemalloc.Filter(False, tracemalloc.__file__)])

    def probe(self, *_: Any) -> None:
        self.n += 1
        record: dict[str, Any] = {"n": self.n, "rss_kb": rss_kb()}
        maps = mappings()
        record["gc_generations"] = [len(gc.get_objects(g)) for g in range(3)]
        record["gc_frozen"] = gc.get_freeze_count()
        record["gc_full_collections"] = gc.get_stats()[2]["collections"]
        record["gc_unreachable"] = gc.collect()  # garbage that was waiting for a full collection
        record["rss_after_gc_kb"] = rss_kb()
        counts = census()
        snap = self.snapshot()
        if snap is not None:
            record["traced_kb"] = tracemalloc.get_traced_memory()[0] // 1024
        if self.libc is not None:
            self.libc.malloc_trim(0)
            record["rss_after_trim_kb"] = rss_kb()
        if self.previous is not None:
            record.update(self.differences(counts, snap))
            record["mapping_growth"] = mapping_growth(self.maps, maps)
        self.previous, self.maps = (counts, snap), maps
        tmp = self.out / f".probe-{self.n}.json"
        tmp.write_text(json.dumps(record, indent=1))
        tmp.rename(self.out / f"probe-{self.n}.json")  # whole file or none: the soak script polls for it

    def differences(self, counts: Counter, snap: tracemalloc.Snapshot | None) -> dict[str, Any]:
        old_counts, old_snap = self.previous
        grown = Counter(counts)
        grown.subtract(old_counts)
        out: dict[str, Any] = {"census_growth": [[t, n] for t, n in grown.most_common(TOP) if n > 0]}
        if snap is not None and old_snap is not None:
            stats = snap.compare_to(old_snap, "traceback")
            out["traced_growth"] = [
                {"kb": round(s.size_diff / 1024, 1), "count": s.count_diff,
                 "traceback": [f"{f.filename}:{f.lineno}" for f in s.traceback[-self.frames:]]}
                for s in stats[:TOP]]
        return out


def mapping_growth(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Mappings whose resident size changed by 64 kB or more (new ones count from 0), largest first; the
    heap of the main thread is "[heap]", glibc's per-thread arenas are anonymous 64 MB reservations."""
    rows = []
    for start, m in new.items():
        grown = m["rss_kb"] - old.get(start, {}).get("rss_kb", 0)
        if abs(grown) >= 64:
            rows.append({"start": start, "grown_kb": grown, **m, "new": start not in old})
    gone = sum(m["rss_kb"] for start, m in old.items() if start not in new)
    if gone:
        rows.append({"start": "-", "grown_kb": -gone, "size_kb": 0, "rss_kb": 0, "name": "(unmapped)", "new": False})
    return sorted(rows, key=lambda r: -abs(r["grown_kb"]))[:TOP]


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    app_args = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="folder for probe-<n>.json")
    p.add_argument("--trace", type=int, default=0, metavar="FRAMES",
                   help="run tracemalloc keeping FRAMES frames per allocation (0: off)")
    p.add_argument("--trim", action="store_true", help="call malloc_trim(0) at each probe")
    args = p.parse_args(own)
    args.out.mkdir(parents=True, exist_ok=True)
    prober = Prober(args.out, args.trace, args.trim)
    signal.signal(signal.SIGUSR1, prober.probe)  # runs in the main thread, which Gradio leaves idle
    (args.out / "pid").write_text(str(os.getpid()))

    sys.path.insert(0, os.getcwd())  # the checkout being measured (soak.py runs this in it)
    import app

    app.main(app_args)


if __name__ == "__main__":
    main()

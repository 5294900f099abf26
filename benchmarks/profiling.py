"""Where the time goes: short cProfile / torch.profiler summaries and a byte breakdown of a figure."""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
_SITE = re.compile(r"/\S*?(?:site-packages|lib/python3\.\d+)/")


def cprofile_summary(fn: Callable[[], Any], top: int = 12, sort: str = "cumulative") -> str:
    """Top `top` functions of one call of fn, as pstats prints them (paths shortened)."""
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats(sort).print_stats(top)
    lines = [ln for ln in buf.getvalue().splitlines() if ln.strip()]
    start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), 0)
    head = [ln.strip() for ln in lines[:start] if "function calls" in ln]
    body = [_shorten(ln) for ln in lines[start:start + top + 1]]
    return "\n".join(head + body)


def _shorten(line: str) -> str:
    line = line.replace(str(ROOT) + "/", "")
    return _SITE.sub("", line)


def torch_profile_summary(fn: Callable[[], Any], top: int = 10) -> str:
    """torch.profiler table of one call of fn, sorted by self CPU time."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=top, max_name_column_width=40)


def figure_bytes(fig_json: str) -> dict[str, int]:
    """Bytes of a serialised figure by part: each trace key that is large, and the layout."""
    fig = json.loads(fig_json)
    out: dict[str, int] = {}
    for i, trace in enumerate(fig.get("data", [])):
        for key, value in trace.items():
            n = len(json.dumps(value))
            if n > 200:
                out[f"data[{i}].{key}"] = n
    out["layout"] = len(json.dumps(fig.get("layout", {})))
    out["total"] = len(fig_json.encode())
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))

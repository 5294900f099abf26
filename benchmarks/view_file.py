"""The Download button's file (explorer.app.export.view_file): its size for the page's default view (date-translator's
two example sentences, the Attention tab) and for a long one, and the time to write it from the kept result.

The file holds plotly.js once (its largest part) and each figure's JSON; the default view's file must stay within
5 MB (tests/app/test_export.py checks it too).
"""

from __future__ import annotations

import time
from typing import Any

LIMIT = 5 * 1024 * 1024


def view_bytes(loaded: Any, text1: str, text2: str, tab: str) -> tuple[int, int, float]:
    """(bytes of the file, figures in it, seconds to draw and write it) for one Run's tab."""
    from explorer import viz
    from explorer.app.page.assets import PLOT_CONFIG
    from explorer.app.export.view_file import ViewExport, plotly_js, view_html
    from explorer.app.run.toggles import Toggles
    from explorer.app.tabs import analyze

    plotly_js()  # read once, as the app does
    a = analyze(loaded, text1, text2, Toggles()).kept()
    start = time.perf_counter()
    figures = [viz.figure_json(f, PLOT_CONFIG) for f in a.figures(tab).values()]
    page = view_html(ViewExport(tab, figures, [("Sentence", text1), ("Toggles", a.state)], "http://127.0.0.1/?"))
    seconds = time.perf_counter() - start
    return len(page.encode()), len(figures), seconds


def run(quick: bool = False) -> dict[str, Any]:
    import explorer
    from explorer.app.export.view_file import plotly_js

    loaded = explorer.load("date-translator", "cpu")
    ex = loaded.task["examples"]
    out: dict[str, Any] = {"plotly_js_bytes": len(plotly_js().encode()), "limit_bytes": LIMIT, "views": {}}
    views = {"default (attention)": (ex[0], ex[1], "attention"), "default (all heads)": (ex[0], ex[1], "overview")}
    if not quick:
        long = " ".join(ex)[:47]  # the model reads at most 48 source tokens
        views["longest source (attention)"] = (long, long, "attention")
    for name, (t1, t2, tab) in views.items():
        n, k, s = view_bytes(loaded, t1, t2, tab)
        out["views"][name] = {"bytes": n, "figures": k, "seconds": round(s, 4), "within_limit": n <= LIMIT}
        print(f"view file, {name}: {n:,} bytes ({k} figures, plotly.js {out['plotly_js_bytes']:,}), "
              f"written in {s * 1000:.0f} ms", flush=True)
    return out

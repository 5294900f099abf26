"""Time to draw in a real browser: headless Chromium (Playwright) on pages served from 127.0.0.1.

Ours, "swap": a page with the plotly.js Gradio serves (3.3.1, taken from Gradio's own frontend
chunk: benchmarks/assets.py) shows figure A; a click on #next
parses figure B's JSON and calls Plotly.react; measured in the page from the click handler to two
animation frames after Plotly.react resolves (that is after plotly_afterplot, and the frame is
painted). Alternating A/B, median of the repeats. This is what the app does on an update.
Ours, "fresh page": navigation start -> drawn, figure JSON inlined in the page (like BertViz), in a
new browser context, so it includes fetching and compiling plotly.js (4.8 MB) every time.
BertViz model view: its returned HTML with the CDN URLs rewritten to local copies (see assets.py);
navigation start -> its SVG holds one group per layer x head (its render is synchronous) and two
frames later; timeout `timeout_s` ("not drawn after N s").
Long inputs (`long_sizes`, 1,024 tokens): a GPT-2-small-shaped model (12 x 12, causal) with synthetic
attention (benchmarks/figure_bytes.py; MiniLM reads at most 512 tokens): the overview, the chosen
head at the app's default width (keys pooled to the plot's pixels) and at 1,300 px (every key), swapped.
"""

from __future__ import annotations

import os
import shutil
import statistics
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from benchmarks import assets

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1280, "height": 1000}
TWO_FRAMES = "requestAnimationFrame(() => requestAnimationFrame(() => {%s}));"


def chromium_path() -> str | None:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    return found or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)


def browser_available() -> str | None:
    """None when Playwright and a chromium binary are there, else the reason."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright not installed (requirements-test.txt)"
    if chromium_path() is None:
        return "no chromium binary (apt-get install chromium)"
    return None


class Site:
    """In-memory files served on 127.0.0.1 (path -> bytes, content type from the suffix)."""

    TYPES = {".html": "text/html; charset=utf-8", ".js": "application/javascript", ".json": "application/json"}

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                path = self.path.split("?", 1)[0]
                body = site.files.get(path)
                if body is None and not path.endswith(".js"):
                    body = site.files.get(path + ".js")  # require.js asks without the suffix sometimes
                if body is None:
                    self.send_error(404)
                    return
                suffix = "." + path.rsplit(".", 1)[-1] if "." in path else ".js"
                self.send_response(200)
                self.send_header("Content-Type", Site.TYPES.get(suffix, "application/octet-stream"))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:  # quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Site:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def put(self, path: str, body: str | bytes) -> str:
        self.files[path] = body.encode() if isinstance(body, str) else body
        return self.url + path


@contextmanager
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # A launch limit of minutes, like the pages' waits below: Playwright's 30 s default is only a hang guard.
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, timeout=120_000)
        try:
            yield browser
        finally:
            browser.close()


def chromium_version() -> str | None:
    if browser_available() is not None:
        return None
    with chromium() as b:
        return b.version


SWAP_PAGE = """<!doctype html><html><head><meta charset="utf-8"><script src="/js/plotly.min.js"></script></head>
<body style="margin:0"><button id="next">next</button><div id="g"></div><script>
window.results = []; let i = 0; const texts = [];
Promise.all(["a", "b"].map(k => fetch("/fig/%(name)s_" + k + ".json").then(r => r.text()))).then(ts => {
  texts.push(...ts);
  const f = JSON.parse(texts[0]);
  return Plotly.newPlot("g", f.data, f.layout);
}).then(() => { window.ready = true; });
document.getElementById("next").addEventListener("click", () => {
  i = 1 - i;
  const t0 = performance.now();
  const f = JSON.parse(texts[i]);
  const t1 = performance.now();
  Plotly.react("g", f.data, f.layout).then(() => {
    const t2 = performance.now();
    %(frames)s
  });
});
</script></body></html>"""

FRESH_PAGE = """<!doctype html><html><head><meta charset="utf-8"><script src="/js/plotly.min.js"></script></head>
<body style="margin:0"><div id="g"></div><script>
const f = %(fig)s;
Plotly.newPlot("g", f.data, f.layout).then(() => { %(frames)s });
</script></body></html>"""

BERTVIZ_WATCH = """<script>
(function poll() {
  const svg = document.querySelector("#vis svg");
  if (svg && svg.querySelectorAll(":scope > g").length >= %(groups)d) {
    %(frames)s
  } else { setTimeout(poll, 20); }
})();
</script>"""


def _serve_js(site: Site) -> str:
    """Serve Gradio's plotly.js (npm's plotly.js-dist-min@3.3.1 if Gradio's chunk is not found); its name."""
    gradio_js = assets.gradio_plotly_js()
    if gradio_js is not None:
        site.put("/js/plotly.min.js", gradio_js)
        return "the plotly.js bundled with Gradio (3.3.1)"
    site.put("/js/plotly.min.js", assets.npm_file("plotly").read_bytes())
    return assets.PACKAGES["plotly"][0]


def _serve_bertviz_js(site: Site) -> None:
    for name in ("require", "d3", "jquery"):
        site.put(f"/js/{name}.js", assets.npm_file(name).read_bytes())


def draw_swap(browser: Any, site: Site, name: str, fig_a: str, fig_b: str, repeats: int) -> dict[str, Any]:
    """Median ms from a click to figure drawn (Plotly.react), alternating two figures."""
    site.put(f"/fig/{name}_a.json", fig_a)
    site.put(f"/fig/{name}_b.json", fig_b)
    frames = TWO_FRAMES % "window.results.push({parse: t1 - t0, react: t2 - t0, drawn: performance.now() - t0});"
    url = site.put(f"/{name}_swap.html", SWAP_PAGE % {"name": name, "frames": frames})
    page = browser.new_page(viewport=VIEWPORT)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(url, timeout=120_000)
        page.wait_for_function("window.ready === true", timeout=120_000)
        for k in range(repeats + 1):  # the first swap is a warm-up
            page.click("#next")
            page.wait_for_function(f"window.results.length === {k + 1}", timeout=120_000)
        res = page.evaluate("window.results")[1:]
        cells = page.evaluate("document.querySelectorAll('#g .main-svg').length")
    finally:
        page.close()
    if errors:
        raise RuntimeError(f"{name}: page errors {errors[:3]}")
    if not cells:
        raise RuntimeError(f"{name}: nothing drawn")
    return {"drawn_ms": round(statistics.median(r["drawn"] for r in res), 1),
            "json_parse_ms": round(statistics.median(r["parse"] for r in res), 1),
            "plotly_react_ms": round(statistics.median(r["react"] - r["parse"] for r in res), 1),
            "paint_ms": round(statistics.median(r["drawn"] - r["react"] for r in res), 1),
            "repeats": repeats}


def _load_until_drawn(browser: Any, url: str, timeout_s: float, check: str | None = None
                      ) -> float | None | tuple[float | None, Any]:
    """ms from navigation start to window.__drawn_ms set by the page; None on timeout.

    check: a JS expression evaluated after the drawing (untimed); then returns (ms, its value)."""
    from playwright.sync_api import Error as PlaywrightError

    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(url, wait_until="commit", timeout=timeout_s * 1000)
        page.wait_for_function("window.__drawn_ms !== undefined", timeout=timeout_s * 1000, polling=200)
        ms = float(page.evaluate("window.__drawn_ms"))
        checked = page.evaluate(check) if check else None
    except PlaywrightError as err:
        if "Timeout" not in str(err):
            raise
        ms, checked = None, None
    finally:
        context.close()
    if errors:
        raise RuntimeError(f"{url}: page errors {errors[:3]}")
    return (ms, checked) if check else ms


def draw_fresh(browser: Any, site: Site, name: str, fig: str, repeats: int, timeout_s: float) -> dict[str, Any]:
    frames = TWO_FRAMES % "window.__drawn_ms = performance.now();"
    url = site.put(f"/{name}_fresh.html", FRESH_PAGE % {"fig": fig, "frames": frames})
    _load_until_drawn(browser, url, timeout_s)  # warm-up (browser caches plotly.js like a returning visitor)
    times = [_load_until_drawn(browser, url, timeout_s) for _ in range(repeats)]
    if any(t is None for t in times):
        return {"drawn_ms": None, "note": f"not drawn after {timeout_s:.0f} s"}
    return {"drawn_ms": round(statistics.median(times), 1), "repeats": repeats}


def draw_bertviz(browser: Any, site: Site, n: int, html: str, repeats: int, timeout_s: float,
                 layers: int = 6, heads: int = 12) -> dict[str, Any]:
    frames = TWO_FRAMES % "window.__drawn_ms = performance.now();"
    page_html = ("<!doctype html><html><head><meta charset='utf-8'></head><body>" + assets.local_bertviz_html(html)
                 + BERTVIZ_WATCH % {"groups": layers * heads, "frames": frames} + "</body></html>")
    url = site.put(f"/bertviz_{n}.html", page_html)
    times = []
    expected = layers * heads * n * n  # one <line> per (layer, head, query, key)
    for k in range(repeats + (1 if n <= 32 else 0)):  # warm-up only where it is cheap
        ms, lines = _load_until_drawn(browser, url, timeout_s, check="document.querySelectorAll('#vis line').length")
        if ms is None:
            return {"drawn_ms": None, "note": f"not drawn after {timeout_s:.0f} s"}
        if lines != expected:
            raise RuntimeError(f"BertViz drew {lines} lines, expected {expected}")
        times.append(ms)
    if n <= 32:
        times = times[1:]
    return {"drawn_ms": round(statistics.median(times), 1), "repeats": len(times), "svg_lines": expected}


def draw_long(browser: Any, site: Site, n: int, repeats: int) -> dict[str, Any]:
    """Swap draws at n tokens, GPT-2-small shape (12 x 12, causal), synthetic attention."""
    from benchmarks import figure_bytes as fb

    kinds = ("overview", "head", "head, 1,300 px wide")
    a = fb.figure_texts(kinds, 12, 12, n, True, seed=0)
    b = fb.figure_texts(kinds, 12, 12, n, True, seed=2)
    row: dict[str, Any] = {"tokens": n, "shape": "GPT-2-small-shaped (12 x 12, decoder), synthetic attention"}
    for kind, key in zip(kinds, ("overview_swap", "head_swap", "head_full_swap")):
        row[key] = draw_swap(browser, site, f"long_{key}{n}", a[kind], b[kind], repeats)
        row[key]["bytes"] = len(a[kind].encode())
    return row


def run(sizes: tuple[int, ...] = (32, 128, 512), repeats: int = 5, bertviz_max: int = 128,
        bertviz_repeats: int = 3, timeout_s: float = 120.0, long_sizes: tuple[int, ...] = (1024,)) -> dict[str, Any]:
    """Draw times for ours (swap + fresh page, overview and one head), BertViz's model view, and ours at
    `long_sizes` tokens on a GPT-2-small-shaped model."""
    from benchmarks import update_latency as ul

    skip = browser_available()
    if skip:
        return {"skipped": skip}
    bertviz_skip = ul.bertviz_available()
    out: dict[str, Any] = {"browser": None, "plotly_js": None,
                           "bertviz_js": [assets.PACKAGES[k][0] for k in ("require", "d3", "jquery")],
                           "by_tokens": [], "long": []}
    with Site() as site, chromium() as browser:
        out["browser"] = f"Chromium {browser.version} (headless)"
        out["plotly_js"] = _serve_js(site)
        if bertviz_skip is None:
            _serve_bertviz_js(site)
        for n in sizes:
            a = ul.artifacts(n, 0, bertviz=bertviz_skip is None and n <= bertviz_max)
            b = ul.artifacts(n, 1, bertviz=False)  # a different text: the swap really changes the data
            row: dict[str, Any] = {"tokens": n}
            row["ours_overview_swap"] = draw_swap(browser, site, f"overview{n}", a["overview"], b["overview"], repeats)
            row["ours_head_swap"] = draw_swap(browser, site, f"head{n}", a["head"], b["head"], repeats)
            row["ours_overview_fresh"] = draw_fresh(browser, site, f"overview{n}", a["overview"], repeats, timeout_s)
            if bertviz_skip is not None:
                row["bertviz"] = {"skipped": bertviz_skip}
            elif n > bertviz_max:
                row["bertviz"] = {"skipped": f"size (> {bertviz_max} tokens; --full to include)"}
            else:
                row["bertviz"] = draw_bertviz(browser, site, n, a["bertviz"], bertviz_repeats, timeout_s)
                bv = row["bertviz"].get("drawn_ms")
                if bv:
                    row["ratio_swap_over_bertviz"] = round(row["ours_overview_swap"]["drawn_ms"] / bv, 4)
                    if row["ours_overview_fresh"].get("drawn_ms"):
                        row["ratio_fresh_over_bertviz"] = round(row["ours_overview_fresh"]["drawn_ms"] / bv, 4)
            out["by_tokens"].append(row)
        for n in long_sizes:
            out["long"].append(draw_long(browser, site, n, repeats))
    return out

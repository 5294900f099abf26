"""The real app: cold start and click-to-redraw in a browser.

Cold start: `python app.py --port P` in a subprocess until GET / answers HTTP 200 (median of runs),
then, in headless Chromium, from opening the page to the first overview plot drawn (the start
model loads on the first page load).
Click to redraw: the app started with all-MiniLM-L6-v2, "All heads" tab open; from the click on
#run (made inside the page) until the overview plot holds new data and two animation frames have
passed. Alternates two texts of the same token count so every click changes the data. Also the bytes
the browser received per click (Chromium's network events: everything Gradio sent for the run).
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks.common import MINILM, load_minilm, text_of_tokens

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app.py"

MEASURE_JS = """() => new Promise((resolve, reject) => {
  const plotOf = () => document.querySelector('#overview-plot .js-plotly-plot');
  const before = plotOf();
  const old = before && before.data ? before.data[0] : null;
  const t0 = performance.now();
  const button = document.querySelector('#run') || document.querySelector('#run button');
  button.click();
  (function poll() {
    const el = plotOf();
    if (el && el.data && el.data[0] && el.data[0] !== old && el._fullLayout && el.querySelector('.main-svg')) {
      requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now() - t0)));
    } else if (performance.now() - t0 > %d) { reject(new Error('overview not redrawn')); }
    else { requestAnimationFrame(poll); }
  })();
})"""


# A language model's Run comes in two steps (its attention, then its outputs): ms from the click to the overview
# redrawn, and to the output summary showing the Run's result (no longer the "computing" note of the first step);
# then to the Run's event ended (the status line's progress hidden: the server's work for the Run done, the
# predictions at every position and the other tabs' reductions included), so that the next click starts on an idle
# server.
MEASURE_BOTH_JS = """() => new Promise((resolve, reject) => {
  const plotOf = (id) => document.querySelector(`#${id} .js-plotly-plot`);
  const summary = () => (document.querySelector('#output-summary') || {}).innerText || '';
  const dataOf = (id) => { const el = plotOf(id); return el && el.data ? el.data[0] : null; };
  const tracker = () => document.querySelector('#status [data-testid="status-tracker"]');
  const running = () => { const t = tracker(); return !!t && !t.classList.contains('hide'); };
  const old = dataOf('overview-plot'), oldLarge = dataOf('large-plot'), oldSummary = summary();
  const t0 = performance.now(); const seen = {};
  (document.querySelector('#run') || document.querySelector('#run button')).click();
  const drawn = (id, before) => { const el = plotOf(id);
    return el && el.data && el.data[0] && el.data[0] !== before && el._fullLayout && el.querySelector('.main-svg'); };
  (function poll() {
    const now = performance.now() - t0; const text = summary();
    if (!seen.overview && drawn('overview-plot', old)) { seen.overview = now; }
    if (!seen.large && drawn('large-plot', oldLarge)) { seen.large = now; }
    if (!seen.computing && text.includes('computing')) { seen.computing = true; }
    if (!seen.done && seen.computing && !text.includes('computing') && text !== oldSummary) { seen.done = now; }
    if (seen.overview && seen.large && seen.done && !seen.shown) {
      seen.shown = true; requestAnimationFrame(() => requestAnimationFrame(() => { seen.everything = performance.now() - t0; }));
    }
    if (seen.everything !== undefined && !running()) { seen.ended = now; resolve(seen); }
    else if (now > %d) { reject(new Error('run not drawn: ' + JSON.stringify(seen))); }
    else { requestAnimationFrame(poll); }
  })();
})"""  # ms from the click to: the All heads grid drawn, the chosen head below it drawn, the outputs shown, all of
# them shown (two frames after the last), the Run's event ended


def app_available() -> str | None:
    return None if APP.is_file() else "app.py does not exist yet"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env() -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


class AppProcess:
    """`python app.py --port P [args]` as a context manager; `.ready_s` = seconds until GET / is 200."""

    def __init__(self, *args: str, timeout_s: float = 180.0):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.args = [sys.executable, str(APP), "--port", str(self.port), *args]
        self.timeout_s = timeout_s
        self.ready_s: float | None = None
        self.log = Path(os.environ.get("TMPDIR", "/tmp")) / f"explorer-bench-app-{self.port}.log"

    def __enter__(self) -> AppProcess:
        self._log = self.log.open("w")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(self.args, cwd=ROOT, env=_env(), stdout=self._log, stderr=subprocess.STDOUT)
        while time.perf_counter() - t0 < self.timeout_s:
            if self.proc.poll() is not None:
                raise RuntimeError(f"app.py exited with {self.proc.returncode}: {self.log.read_text()[-1500:]}")
            try:
                with urllib.request.urlopen(self.url, timeout=2) as r:
                    if r.status == 200:
                        self.ready_s = time.perf_counter() - t0
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            time.sleep(0.05)
        self.__exit__()
        raise RuntimeError(f"app.py did not answer within {self.timeout_s:.0f} s")

    def __exit__(self, *exc: Any) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


def _first_draw_ms(page: Any, url: str, timeout_s: float) -> float:
    """Open the app; ms from navigation start until the overview plot exists with data (tab opened)."""
    page.goto(url, wait_until="domcontentloaded", timeout=timeout_s * 1000)
    # Opened at once: the page's first Run, under way meanwhile, ends by drawing the tab opened last.
    page.get_by_role("tab", name="All heads").click(timeout=timeout_s * 1000)
    page.wait_for_function("() => { const el = document.querySelector('#overview-plot .js-plotly-plot');"
                           " return el && el.data && el.data.length && el.querySelector('.main-svg'); }",
                           timeout=timeout_s * 1000, polling=50)
    return float(page.evaluate("performance.now()"))


def cold_start(repeats: int = 3, timeout_s: float = 180.0) -> dict[str, Any]:
    """Seconds from `python app.py` to HTTP 200, and from page open to the first overview drawn."""
    skip = app_available()
    if skip:
        return {"skipped": skip}
    from benchmarks.browser import browser_available, chromium

    http, first = [], []
    browser_skip = browser_available()
    for _ in range(max(1, repeats)):
        with AppProcess(timeout_s=timeout_s) as app:
            http.append(app.ready_s)
            if browser_skip is None:
                with chromium() as browser:
                    page = browser.new_page(viewport={"width": 1400, "height": 1000})
                    first.append(_first_draw_ms(page, app.url, timeout_s) / 1000)
    out: dict[str, Any] = {"command": "python app.py --port P (default start model)",
                           "http_200_s": round(statistics.median(http), 2), "repeats": len(http)}
    if first:
        out["page_open_to_first_overview_s"] = round(statistics.median(first), 2)
    else:
        out["page_open_to_first_overview_skipped"] = browser_skip
    return out


def click_to_redraw(sizes: tuple[int, ...] = (32, 128), repeats: int = 5, timeout_s: float = 120.0
                    ) -> dict[str, Any]:
    """ms from the click on Run to the overview plot redrawn, in the real app, MiniLM loaded."""
    skip = app_available()
    if skip:
        return {"skipped": skip}
    from benchmarks.browser import browser_available, chromium

    skip = browser_available()
    if skip:
        return {"skipped": skip}
    tok = load_minilm().tokenizer
    out: dict[str, Any] = {"model": MINILM, "by_tokens": []}
    with AppProcess("--checkpoint", MINILM, timeout_s=timeout_s) as app, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        _first_draw_ms(page, app.url, timeout_s)
        received = [0]  # bytes over the network since the last reset (what the server sent to the page)
        cdp = page.context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.on("Network.dataReceived", lambda e: received.__setitem__(0, received[0] + int(e.get("dataLength", 0))))
        for n in sizes:
            texts = [text_of_tokens(tok, n, 0), text_of_tokens(tok, n, 1)]
            page.fill("#text2 textarea", "")
            times, sizes_rx = [], []
            for k in range(repeats + 1):  # the first click is a warm-up
                page.fill("#text1 textarea", texts[k % 2])
                page.wait_for_timeout(200)  # let the fill's own traffic pass
                received[0] = 0
                ms = page.evaluate(MEASURE_JS % int(timeout_s * 1000))
                page.wait_for_timeout(300)  # the stream's last events
                times.append(float(ms))
                sizes_rx.append(received[0])
            n_shown = page.evaluate("document.querySelector('#overview-plot .js-plotly-plot')._fullData[0].z.length")
            out["by_tokens"].append({"tokens": n, "click_to_overview_drawn_ms": round(statistics.median(times[1:]), 1),
                                     "bytes_received_per_click": int(statistics.median(sizes_rx[1:])),
                                     "repeats": repeats, "overview_rows": n_shown})
        if errors:
            out["page_errors"] = errors[:3]
    return out


def forward_ms(model: Any, ids: Any, threads: int) -> float:
    """ms of one forward pass with every attention returned (the layers and the vocabulary head at every position,
    as benchmarks.head_computation's "forward, every attention"), on `threads` torch threads."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.inference_mode():
            t0 = time.perf_counter()
            model(ids)
            return (time.perf_counter() - t0) * 1e3
    finally:
        torch.set_num_threads(before)


def click_to_redraw_long(tokens: int = 1024, repeats: int = 3, timeout_s: float = 240.0,
                         shape: dict[str, int] | None = None, threads: tuple[int | None, ...] = (None, 1)
                         ) -> dict[str, Any]:
    """ms from the click on Run to the overview redrawn (the Run's first step) and to its outputs shown (the whole
    Run), in the real app, on a GPT-2-small-shaped model (random weights, a 1,064-token context so the input is
    `tokens` long) loaded from an allowed folder (the Hub path). Once per entry of `threads`: None = the app's own
    choice (the cores, shared among the requests running at once: all of them for this lone one), n =
    `--threads n` (1: the app's choice before a lone request got every core). After each click, once the Run's event
    has ended, one forward pass of the same model at the same length with every attention returned, in this process
    on the server's torch threads (the app and the browser idle), so the whole Run is also a ratio of that."""
    import tempfile

    import torch

    import explorer
    from benchmarks.app_memory import GPT2_SMALL_APP, text_of
    from benchmarks.browser import browser_available, chromium
    from benchmarks.hub_lm import write_folder
    from explorer.device import server_torch_threads

    skip = app_available() or browser_available()
    if skip:
        return {"skipped": skip}
    shape = shape or GPT2_SMALL_APP
    out: dict[str, Any] = {"model": f"GPT-2 shape {shape} (random weights)", "by_tokens": []}
    with tempfile.TemporaryDirectory() as tmp:
        write_folder(Path(tmp) / "gpt2-long", {**shape, "bos_token_id": 0, "eos_token_id": 0})
        model = explorer.load(Path(tmp) / "gpt2-long", "cpu").model.eval()  # the same weights, for the forward
        ids = torch.randint(0, shape["vocab_size"], (1, tokens), generator=torch.Generator().manual_seed(0))
        forward_ms(model, ids, server_torch_threads(None))  # warm-up
        for n in threads:
            extra = () if n is None else ("--threads", str(n))
            with AppProcess("--checkpoint", "gpt2-long", "--allow-dir", tmp, "--max-tokens", str(tokens), *extra,
                            timeout_s=timeout_s) as app, chromium() as browser:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                _first_draw_ms(page, app.url, timeout_s)  # the page open on "All heads", overview drawn
                # ... and the rest of the page's first Run, so that its outputs are not taken for the first click's
                page.wait_for_function("() => { const t = (document.querySelector('#output-summary') || {}).innerText;"
                                       " return t && !t.includes('computing'); }", timeout=timeout_s * 1000)
                page.fill("#text2 textarea", "")
                seen_all, forwards = [], []
                for k in range(repeats + 1):  # the first click is a warm-up
                    page.fill("#text1 textarea", text_of(tokens - k % 2) + "." * (k % 2))  # new data on every click
                    page.wait_for_timeout(200)
                    seen_all.append(page.evaluate(MEASURE_BOTH_JS % int(timeout_s * 1000)))
                    forwards.append(forward_ms(model, ids, server_torch_threads(n)))  # interleaved with the clicks
                rows = page.evaluate("document.querySelector('#overview-plot .js-plotly-plot')._fullData[0].z.length")

            def median(key: str) -> float:
                return round(statistics.median(float(s[key]) for s in seen_all[1:]), 1)

            row = {"tokens": tokens, "torch_threads": server_torch_threads(n), "threads_flag": n,
                   "click_to_overview_drawn_ms": median("overview"), "click_to_chosen_head_drawn_ms": median("large"),
                   "click_to_outputs_shown_ms": median("done"), "click_to_everything_shown_ms": round(
                       statistics.median(max(s["overview"], s["large"], s["done"]) for s in seen_all[1:]), 1),
                   "click_to_run_ended_ms": median("ended"),
                   "forward_every_attention_ms": round(statistics.median(forwards[1:]), 1),
                   "repeats": repeats, "overview_rows": rows}
            row["ratio_everything_over_forward"] = round(row["click_to_everything_shown_ms"]
                                                         / row["forward_every_attention_ms"], 3)
            out["by_tokens"].append(row)
    return out
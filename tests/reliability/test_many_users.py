"""Many users at once (issue 8, point 3): 16 concurrent gradio_client clients x 4 requests to the running
app's named endpoints, with different sentences, head toggles, masks and views. Zero errors, and every
response identical to what a single client gets for the same inputs (no cross-talk between sessions:
status, token and output tables, and the Plotly JSON of every figure). Two of the clients switch their
own session to a freshly built model first; the others must not notice. Prints p50 / p95 latency.

The size, the smallest that shows the property: cross-talk needs requests of several sessions in the server at
once; 16 clients start together on the queue's 4 workers, so each request waits beside other sessions' and runs
beside up to 3 others, and 4 requests each cover every one of the 20 request specs (both models' clients included:
the built model's clients send 8 of them). More requests per client repeat the same overlap (until issue 39: 20
each).

The app runs with a fixed torch thread count here: by default a request computes with its share of the cores
(explorer.app.serving.cores), and a different thread count changes float32 results in their last bits (MKL's kernels
sum in another order), which would make a byte-for-byte comparison fail without any cross-talk;
tests/app/test_cores.py bounds that difference.
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("gradio_client")

from tests.hang import HANG_S, gradio_client  # noqa: E402

pytestmark = pytest.mark.slow

CLIENTS = int(os.environ.get("RELIABILITY_CLIENTS", "16"))
REQUESTS = int(os.environ.get("RELIABILITY_REQUESTS", "4"))
SENTENCES = ["hello world", "the quick brown fox", "samedi 21 novembre 2026", "3 May 2024", "日本語の文章です",
             "emoji 👍🏽 🎉", "<b>html</b> & **markdown**", "Ünïcödé façade naïve", "brown fox 2026", "world"]
HEADS = [["L0 H0", "L0 H1", "L1 H0", "L1 H1"], ["L0 H1", "L1 H0", "L1 H1"], ["L0 H0"], [], ["L1 H0", "L1 H1"]]
MASKS = [("none", 0, 2), ("block token", 1, 2), ("local window", 0, 1), ("no self", 0, 2)]
BUILD = ["custom", "encoder", 2, 2, 16, 32, "pre-norm", "sinusoidal", 7, "cpu"]  # /build_model arguments


def spec(i: int) -> list:
    """The /analyze arguments of request spec i (sentences, masks, heads, view) — 20 distinct ones."""
    custom, block, window = MASKS[i % len(MASKS)]
    s2 = SENTENCES[(i * 3 + 1) % len(SENTENCES)] if i % 3 else ""
    return [SENTENCES[i % len(SENTENCES)], s2, i % 5 != 4, True, custom, block, window, HEADS[i % len(HEADS)], [], [],
            "encoder", i % 2, (i // 2) % 2, 2 if (s2 and i % 4 == 1) else 1]


SPECS = [spec(i) for i in range(20)]


def canonical(result) -> str:
    """One string for a whole /analyze response: texts, tables and every figure's Plotly JSON."""
    parts = []
    for value in result:
        if isinstance(value, dict) and value.get("type") == "plotly":
            value = json.loads(value["plot"])
        parts.append(value)
    return json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)


def check_ok(result) -> None:
    """No error: the only warnings allowed name the words a model cannot read (a built model reads characters and
    has none for 日本語)."""
    status = result[0]
    warnings = [line for line in status.split("\n\n") if "⚠️" in line]
    assert isinstance(status, str) and "went wrong" not in status, status
    assert all("not in this model's vocabulary" in line for line in warnings), status
    assert result[1]["data"], "empty token table"


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    k = max(0, min(len(values) - 1, round(q / 100 * (len(values) - 1))))
    return values[k]


def test_many_concurrent_clients_no_cross_talk(model_root, launch):
    _demo, url = launch(checkpoint=str(model_root / "bpe-encoder"), allowed_dirs=[str(model_root)], threads=1)

    # Reference answers: one client alone, one request at a time (default model and a built model).
    single = gradio_client(url)
    expected = {}
    alone: list[float] = []
    for i, args in enumerate(SPECS):
        start = time.perf_counter()
        out = single.predict(*args, api_name="/analyze")
        alone.append(time.perf_counter() - start)
        check_ok(out)
        expected["default", i] = canonical(out)
    builder = gradio_client(url)
    assert "Built" in builder.predict(*BUILD, api_name="/build_model")[0]
    built = {c for c in range(CLIENTS) if c % 8 == 7}  # two of sixteen switch their session to the built model
    for i in sorted({0} | {(c * 7 + r) % len(SPECS) for c in built for r in range(REQUESTS)}):  # what they send
        out = builder.predict(*SPECS[i], api_name="/analyze")
        check_ok(out)
        expected["built", i] = canonical(out)
    assert expected["default", 0] != expected["built", 0], "the two models must answer differently"

    with ThreadPoolExecutor(CLIENTS) as pool:  # each client reads the app's config first: at once, not in turn
        clients = list(pool.map(lambda _: gradio_client(url), range(CLIENTS)))
    for c in built:
        assert "Built" in clients[c].predict(*BUILD, api_name="/build_model")[0]
    latencies: list[float] = []
    errors: list[str] = []
    mismatches: list[tuple[int, int]] = []
    lock = threading.Lock()
    barrier = threading.Barrier(CLIENTS)

    def user(c: int) -> None:
        model = "built" if c in built else "default"
        barrier.wait()  # everyone starts together
        for r in range(REQUESTS):
            i = (c * 7 + r) % len(SPECS)  # neighbours ask different things at the same moment
            start = time.perf_counter()
            try:
                out = clients[c].predict(*SPECS[i], api_name="/analyze")
                took = time.perf_counter() - start
                check_ok(out)
                same = canonical(out) == expected[model, i]
            except Exception as err:  # noqa: BLE001 - collected and reported below
                with lock:
                    errors.append(f"client {c} request {r}: {type(err).__name__}: {err}")
                continue
            with lock:
                latencies.append(took)
                if not same:
                    mismatches.append((c, i))

    threads = [threading.Thread(target=user, args=(c,)) for c in range(CLIENTS)]
    wall = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=3 * HANG_S)  # a hang guard (the 64 requests take ~5 s on the idle machine)
    assert not any(t.is_alive() for t in threads), "clients still waiting for answers"
    wall = time.perf_counter() - wall
    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    print(f"\n{CLIENTS} clients x {REQUESTS} /analyze requests: {len(latencies)} ok, {len(errors)} errors, "
          f"{len(mismatches)} mismatches; latency p50 {p50:.2f} s, p95 {p95:.2f} s, mean "
          f"{statistics.mean(latencies):.2f} s; wall {wall:.1f} s ({len(latencies) / wall:.1f} requests/s); "
          f"one client alone: p50 {percentile(alone, 50):.2f} s, p95 {percentile(alone, 95):.2f} s")
    assert not errors, errors[:5]
    assert not mismatches, f"responses differ from a single client's: {mismatches[:10]}"
    assert len(latencies) == CLIENTS * REQUESTS

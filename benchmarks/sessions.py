"""Many people on one Space (issue 26): the server's memory and answers with many sessions at once.

    kept_sessions(sessions=200, words=480, kept_gb=1.0)   each session sends one long text with a head off, then
        opens another tab: the server's RSS before and after, how many tabs were computed again (their result let
        go to keep --kept-memory), and whether every session got its own figures
    load(clients=50, seconds=300)   that many gradio_client sessions at once for that long, mixing short sentences
        and 512-token texts with head switches and masks: requests, errors, cross-talk, p50/p95, the server's RSS

Both start `python app.py` on MiniLM (the offline copy, `benchmarks.common.minilm_folder`), the Space's shape:
the app's defaults but the flags given. A session is a gradio_client session hash: each worker thread has one
Client and switches its `session_hash`, which is what makes a session to Gradio (its gr.State is kept per hash).
Each text starts with a marker word of its own (one WordPiece token, used by no other text): a session's token
table and figures must show its marker, so an answer meant for another session cannot pass unnoticed.
"""

from __future__ import annotations

import json
import random
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.app_bench import AppProcess
from benchmarks.common import MINILM, text_words

LAYERS, HEADS = 6, 12  # MiniLM
ALL_HEADS = [f"L{la} H{h}" for la in range(LAYERS) for h in range(HEADS)]
RECOMPUTED = "computed again"  # the notice of a tab whose kept result was let go (explorer.app.serving.kept.RECOMPUTED)
CALL_TIMEOUT_S = 300  # one HTTP call of a client: httpx's 5 s default is too short for a loaded server


def client_of(url: str) -> Any:
    """A gradio_client.Client whose calls wait up to CALL_TIMEOUT_S."""
    from gradio_client import Client

    return Client(url, verbose=False, httpx_kwargs={"timeout": CALL_TIMEOUT_S})


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def markers(n: int) -> list[str]:
    """n distinct lower-case words that MiniLM's WordPiece vocabulary has as one whole token, none of them in the
    texts' own words."""
    from benchmarks.common import WORDS, minilm_folder

    vocab = json.loads((minilm_folder() / "tokenizer.json").read_text())["model"]["vocab"]
    taken = set(WORDS)
    words = sorted(w for w in vocab if w.isalpha() and w.isascii() and w.islower() and len(w) >= 6 and w not in taken)
    if len(words) < n:
        raise RuntimeError(f"MiniLM's vocabulary has only {len(words)} marker words")
    return random.Random(0).sample(words, n)


def analyze_args(text: str, heads_on: list[str], custom: str = "none", tab: str = "overview") -> list[Any]:
    """/analyze's parameters in order (README), MiniLM: encoder heads only."""
    return [text, "", True, True, custom, 0, 2, heads_on, [], [], "encoder", 1, 2, 1, -1, 8, tab]


def tokens_of(answer: tuple) -> list[str]:
    """Sentence 1's token labels from /analyze's token table (its second output)."""
    table = answer[1]
    return [row[2] for row in table["data"] if row[0] == 1]


def figure_text(value: Any) -> str:
    """A gr.Plot output's Plotly JSON text ('' when the output carries no figure)."""
    return value["plot"] if isinstance(value, dict) and value.get("type") == "plotly" else ""


@contextmanager
def sampled_rss(pid: int, every_s: float = 0.5) -> Iterator[list[float]]:
    """The server's RSS every `every_s` while the block runs."""
    samples: list[float] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            try:
                samples.append(rss_mb(pid))
            except (OSError, RuntimeError):
                return
            done.wait(every_s)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield samples
    finally:
        done.set()
        thread.join()


def in_threads(n: int, work: Callable[[int], None]) -> None:
    """work(0..n-1) in n threads; re-raises the first error."""
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            work(i)
        except BaseException as err:  # noqa: BLE001 - re-raised below
            errors.append(err)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def kept_sessions(sessions: int = 200, words: int = 480, kept_gb: float = 1.0, workers: int = 1,
                  tabs_every: int = 1, app_args: tuple[str, ...] = (), start_s: float = 180.0) -> dict[str, Any]:
    """`sessions` sessions, each /analyze of a `words`-word text with one head off (the overview drawn), then, once
    all have run, /show_tab of the attention tab in every `tabs_every`-th session (the first among them). RSS of the
    server before the first session and after. `workers` sessions run at a time (each Run's transient memory is
    the heap's to keep for the next: more at a time keep more, within --request-memory). `start_s`: how long the
    app may take to start."""
    marks = markers(sessions + 1)
    text = text_words(words)
    hashes: list[str | None] = [None] * sessions
    own_runs, own_tabs, recomputed = [0] * sessions, [0] * sessions, [0] * sessions
    with AppProcess("--checkpoint", MINILM, "--kept-memory", str(kept_gb), *app_args, timeout_s=start_s) as app:
        clients = [client_of(app.url) for _ in range(workers)]
        clients[0].predict(*analyze_args(f"{marks[-1]} {text}", ALL_HEADS[1:]), api_name="/analyze")  # warm-up
        before = rss_mb(app.proc.pid)
        t0 = time.perf_counter()

        def run(w: int) -> None:
            client = clients[w]
            for i in range(w, sessions, workers):
                client.reset_session()
                hashes[i] = client.session_hash
                off = ALL_HEADS[i % len(ALL_HEADS)]
                answer = client.predict(*analyze_args(f"{marks[i]} {text}", [h for h in ALL_HEADS if h != off]),
                                        api_name="/analyze")
                # answer[9]: the chosen head's full view, drawn with the overview (the pooled grid names blocks)
                own_runs[i] = int(tokens_of(answer)[1:2] == [marks[i]] and marks[i] in figure_text(answer[9]))

        with sampled_rss(app.proc.pid) as during_runs:
            in_threads(workers, run)
        runs_s = time.perf_counter() - t0
        after_runs = rss_mb(app.proc.pid)

        def tabs(w: int) -> None:
            client = clients[w]
            for i in range(w * tabs_every, sessions, workers * tabs_every):
                client.session_hash = hashes[i]
                opened = client.predict("attention", api_name="/show_tab")
                recomputed[i] = int(RECOMPUTED in (opened[1] or ""))
                own_tabs[i] = int(marks[i] in figure_text(opened[3]))  # (tab, status, mask, head, ...)

        with sampled_rss(app.proc.pid) as during_tabs:
            in_threads(workers, tabs)
        after_tabs = rss_mb(app.proc.pid)
    return {"model": MINILM, "sessions": sessions, "words": words, "kept_memory_mb": round(kept_gb * 1024),
            "rss_before_mb": round(before, 1), "rss_after_runs_mb": round(after_runs, 1),
            "rss_after_tabs_mb": round(after_tabs, 1), "rss_peak_mb": round(max(during_runs + during_tabs), 1),
            "growth_mb": round(max(after_runs, after_tabs) - before, 1),
            "tabs_opened": len(range(0, sessions, tabs_every)), "tabs_recomputed": sum(recomputed),
            "own_runs": sum(own_runs), "own_tabs": sum(own_tabs),
            "runs_s": round(runs_s, 1), "workers": workers}


@dataclass
class LoadStats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {"short": [], "long": [], "tab": []})
    errors: list[str] = field(default_factory=list)
    crosstalk: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, seconds: float) -> None:
        with self.lock:
            self.latencies[kind].append(seconds)

    def fail(self, where: list[str], what: str) -> None:
        with self.lock:
            where.append(what)


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def load(clients: int = 50, seconds: float | None = 300.0, long_share: float = 0.3, long_tokens: int = 512,
         app_args: tuple[str, ...] = (), seed: int = 0, requests: int | None = None,
         start_s: float = 180.0) -> dict[str, Any]:
    """`clients` sessions at once for `seconds` (None: no time limit), each in a loop of at most `requests` /analyze
    calls (None: no count limit): /analyze of a short sentence (or, with probability `long_share`, a
    `long_tokens`-token text: MiniLM's whole context) with a random head off and sometimes a custom mask, then now
    and then /show_tab of another tab. Every answer is checked against the text its session sent. The first request
    of every session is a long text (so each run has long ones whatever its length)."""
    if seconds is None and requests is None:
        raise ValueError("give seconds, requests or both")
    from benchmarks.common import load_minilm, text_of_tokens

    tokenizer = load_minilm().tokenizer
    marks = markers(clients)
    long_body = text_of_tokens(tokenizer, long_tokens - 1)  # the marker makes it long_tokens tokens
    stats = LoadStats()
    with AppProcess("--checkpoint", MINILM, *app_args, timeout_s=start_s) as app:
        client_of(app.url).predict(*analyze_args(f"{marks[0]} {text_words(8)}", ALL_HEADS),
                                               api_name="/analyze")  # the model loaded, the first Run made
        before = rss_mb(app.proc.pid)
        deadline = None if seconds is None else time.perf_counter() + seconds

        def session(i: int) -> None:
            rng = random.Random(seed * 1000 + i)
            try:
                client = client_of(app.url)
            except Exception as err:  # noqa: BLE001 - counted, the others go on
                stats.fail(stats.errors, f"client {i}: {type(err).__name__}: {err}")
                return
            sent = 0
            while (deadline is None or time.perf_counter() < deadline) and (requests is None or sent < requests):
                long = sent == 0 or rng.random() < long_share
                sent += 1
                text = f"{marks[i]} " + (long_body if long else text_words(rng.randint(4, 20), rng.randint(0, 50)))
                off = rng.sample(ALL_HEADS, rng.randint(0, 3))
                custom = rng.choice(["none", "none", "none", "no self", "local window"])
                tab = rng.choice(["attention", "overview"])
                t0 = time.perf_counter()
                try:
                    answer = client.predict(*analyze_args(text, [h for h in ALL_HEADS if h not in off], custom, tab),
                                            api_name="/analyze")
                except Exception as err:  # noqa: BLE001 - counted
                    stats.fail(stats.errors, f"client {i} /analyze: {type(err).__name__}: {err}")
                    continue
                stats.add("long" if long else "short", time.perf_counter() - t0)
                status, tokens = answer[0] or "", tokens_of(answer)
                if "⚠️" in status and "only the first" not in status:
                    stats.fail(stats.errors, f"client {i}: {status[:200]}")
                head = figure_text(answer[5] if tab == "attention" else answer[9])  # the chosen head's view
                if tokens[1:2] != [marks[i]] or marks[i] not in head:
                    stats.fail(stats.crosstalk, f"client {i} got tokens {tokens[:3]}")
                if rng.random() < 0.3:
                    t0 = time.perf_counter()
                    try:
                        opened = client.predict(rng.choice(["rollout", "attention"]), api_name="/show_tab")
                    except Exception as err:  # noqa: BLE001 - counted
                        stats.fail(stats.errors, f"client {i} /show_tab: {type(err).__name__}: {err}")
                        continue
                    stats.add("tab", time.perf_counter() - t0)
                    if marks[i] not in json.dumps(opened):
                        stats.fail(stats.crosstalk, f"client {i}: a tab without its marker")

        with sampled_rss(app.proc.pid) as samples:
            in_threads(clients, session)
        after = rss_mb(app.proc.pid)
    out: dict[str, Any] = {"model": MINILM, "clients": clients, "seconds": seconds, "requests_per_client": requests,
                           "long_tokens": long_tokens,
                           "errors": len(stats.errors), "crosstalk": len(stats.crosstalk),
                           "rss_before_mb": round(before, 1), "rss_peak_mb": round(max(samples or [after]), 1),
                           "rss_after_mb": round(after, 1), "first_errors": (stats.errors + stats.crosstalk)[:5]}
    for kind, values in stats.latencies.items():
        out[kind] = {"requests": len(values), "p50_s": percentile(values, 0.5) and round(percentile(values, 0.5), 2),
                     "p95_s": percentile(values, 0.95) and round(percentile(values, 0.95), 2),
                     "mean_s": round(statistics.fmean(values), 2) if values else None}
    return out

"""Soak test of the app's memory: start `python app.py` (shipped default model, offline) in a subprocess,
send it many `/analyze` requests through gradio_client, and report how the server's resident memory
(VmRSS from /proc) grows after a warm-up.

    python -m benchmarks.soak --requests 1500 --warmup 200 [--clients 4] [--new-session-every 50]
                              [--probe DIR [--trace FRAMES] [--trim]] [--env MALLOC_ARENA_MAX=2]

Requests vary like real use: different sentences (one or two), a head switched off or all on, the
attention kind, layer and head shown, sometimes a custom mask, the tab drawn (every 4th request another tab
than the attention tab's, "all" among them); arguments not varied keep the API's
defaults. Each gradio_client Client is a session; `--clients` of them run in parallel threads, and
`--new-session-every` replaces a client by a new session after that many of its requests (many users).
With `--probe` the server runs under `benchmarks.memtrace`, which writes what its memory holds after
the warm-up and at the end (census of objects, tracemalloc differences, RSS after gc and malloc_trim).
RSS is not timing-sensitive, but other processes on a shared machine change glibc's behaviour little;
numbers from a loaded machine are still preliminary.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SENTENCES = [
    "samedi 21 novembre 2026", "21. November 2026", "3 May 2024", "May 3, 2024", "lunes, 7 de julio de 1999",
    "7 luglio 1999", "12 de março de 2031", "12 maart 2031", "1/2/1950", "Friday, 13 October 2000",
    "29 février 2088", "2. Januar 1901", "25 dicembre 2010", "30 de octubre de 1975",
]
TABS = ["overview", "generation", "rollout", "all"]  # /analyze's last input besides "attention" (README)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, checkpoint: str | None, env: dict[str, str], probe: Path | None, trace: int,
                 trim: bool, root: Path = ROOT) -> subprocess.Popen:
    app_args = ["--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
    app_args += ["--checkpoint", checkpoint] if checkpoint else []
    if probe is None:
        cmd = [sys.executable, str(root / "app.py"), *app_args]
    else:
        cmd = [sys.executable, str(ROOT / "benchmarks" / "memtrace.py"), str(probe), "--trace", str(trace),
               *(["--trim"] if trim else []), "--", *app_args]
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", **env}
    return subprocess.Popen(cmd, cwd=root, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)


def connect(proc: subprocess.Popen, url: str, timeout: float = 180):
    from gradio_client import Client

    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"app.py exited: {proc.stderr.read()[-3000:]}")
        try:
            return Client(url, verbose=False)
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.5)
    raise RuntimeError(f"app.py did not answer within {timeout:.0f} s")


def analyze_parameters(client) -> dict[str, dict[str, Any]]:
    """/analyze's parameters by name: {"default": ..., "choices": [...]} from the API description."""
    info = client.view_api(return_format="dict", print_info=False)["named_endpoints"]["/analyze"]
    out = {}
    for p in info["parameters"]:
        kind = p["type"]
        choices = kind.get("enum") or kind.get("items", {}).get("enum") or []
        out[p["parameter_name"]] = {"default": p.get("parameter_default"), "choices": list(choices)}
    return out


def request_args(n: int, params: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Keyword arguments of the n-th /analyze request: a few settings varied, the rest the defaults."""
    def cycle(name: str, step: int = 1) -> Any:
        choices = params[name]["choices"]
        return choices[(n // step) % len(choices)]

    args = {k: v["default"] for k, v in params.items()}
    args["sentence1"] = SENTENCES[n % len(SENTENCES)]
    args["sentence2"] = "" if n % 3 == 0 else SENTENCES[(n * 5 + 1) % len(SENTENCES)]
    args["kind"], args["layer"], args["head"] = cycle("kind"), cycle("layer", 3), cycle("head", 2)
    args["custom_mask"] = cycle("custom_mask", 7)
    if "tab" in args:  # the page sends the tab it shows: mostly the attention tab, now and then another
        args["tab"] = "attention" if n % 4 else TABS[(n // 4) % len(TABS)]
    heads = [k for k in params if k.endswith("_heads_on") and params[k]["choices"]]
    for k in heads:
        args[k] = list(params[k]["choices"])
    if heads and n % 2:  # every other request switches one head off, a different one each time
        k = heads[(n // 2) % len(heads)]
        args[k].remove(args[k][(n // 2) % len(args[k])])
    return args


class Driver:
    """Sends numbered requests from `clients` sessions in parallel threads; samples RSS as they finish."""

    def __init__(self, proc: subprocess.Popen, url: str, clients: int, new_session_every: int):
        from gradio_client import Client

        self.proc, self.url, self.new_every, self.Client = proc, url, new_session_every, Client
        self.clients = [connect(proc, url)]
        self.clients += [Client(url, verbose=False) for _ in range(clients - 1)]
        self.params = analyze_parameters(self.clients[0])
        self.sessions, self.errors, self.samples = len(self.clients), [], []
        self.lock = threading.Lock()

    def run(self, first: int, count: int, sample_every: int) -> float:
        done = [0]

        def worker(t: int) -> None:
            mine = 0
            for n in range(first + t, first + count, len(self.clients)):
                if self.new_every and mine and mine % self.new_every == 0:
                    self.clients[t] = self.Client(self.url, verbose=False)
                    with self.lock:
                        self.sessions += 1
                try:
                    out = self.clients[t].predict(**request_args(n, self.params), api_name="/analyze")
                    if "⚠️" in str(out[0]):
                        raise RuntimeError(out[0])
                except Exception as err:  # noqa: BLE001 - counted and reported
                    self.errors.append(f"request {n}: {type(err).__name__}: {err}"[:300])
                mine += 1
                with self.lock:
                    done[0] += 1
                    if sample_every and done[0] % sample_every == 0:
                        self.samples.append((first + done[0], round(rss_mb(self.proc.pid), 1)))

        start = time.perf_counter()
        threads = [threading.Thread(target=worker, args=(t,)) for t in range(len(self.clients))]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        return time.perf_counter() - start


def probe(proc: subprocess.Popen, folder: Path, n: int, timeout: float = 300) -> dict[str, Any]:
    """Ask the memtrace server for its n-th probe and wait for the file."""
    target = folder / f"probe-{n}.json"
    os.kill(proc.pid, signal.SIGUSR1)
    deadline = time.time() + timeout
    while not target.exists():
        if time.time() > deadline or proc.poll() is not None:
            raise RuntimeError(f"no {target.name} from the server")
        time.sleep(0.2)
    return json.loads(target.read_text())


def soak(requests: int = 1500, warmup: int = 200, *, clients: int = 1, new_session_every: int = 0,
         samples: int = 10, checkpoint: str | None = None, env: dict[str, str] | None = None,
         probe_dir: Path | None = None, trace: int = 0, trim: bool = False, root: Path = ROOT) -> dict[str, Any]:
    """Run the soak; returns the numbers (MB, kB per request, the RSS samples, errors, probes).
    `root`: the checkout whose app.py runs (e.g. an older commit's `git archive`, to compare)."""
    port = free_port()
    proc = start_server(port, checkpoint, env or {}, probe_dir, trace, trim, root)
    try:
        driver = Driver(proc, f"http://127.0.0.1:{port}/", clients, new_session_every)
        started = rss_mb(proc.pid)
        driver.run(0, warmup, 0)
        probes = [probe(proc, probe_dir, 1)] if probe_dir else []
        before = rss_mb(proc.pid)
        took = driver.run(warmup, requests, max(1, requests // max(1, samples)))
        after = rss_mb(proc.pid)
        probes += [probe(proc, probe_dir, 2)] if probe_dir else []
        if proc.poll() is not None:
            raise RuntimeError("the server died")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    return dict(requests=requests, warmup=warmup, clients=clients, sessions=driver.sessions,
                env=env or {}, rss_started_mb=round(started, 1), rss_before_mb=round(before, 1),
                rss_after_mb=round(after, 1), growth_mb=round(after - before, 2),
                per_request_kb=round((after - before) * 1024 / requests, 2), seconds=round(took, 1),
                requests_per_s=round(requests / took, 2), samples=driver.samples,
                errors=len(driver.errors), first_errors=driver.errors[:5], probes=probes)


def describe(r: dict[str, Any]) -> str:
    lines = [f"{r['requests']} /analyze requests after {r['warmup']} warm-up ({r['clients']} client(s), "
             f"{r['sessions']} session(s){', env ' + str(r['env']) if r['env'] else ''}): "
             f"{r['seconds']} s, {r['requests_per_s']}/s, {r['errors']} errors",
             f"server RSS: {r['rss_started_mb']} MB at start, {r['rss_before_mb']} MB after warm-up, "
             f"{r['rss_after_mb']} MB at the end: growth {r['growth_mb']:+.2f} MB, "
             f"{r['per_request_kb']:+.2f} kB per request",
             "samples (request, MB): " + ", ".join(f"{n}: {mb}" for n, mb in r["samples"])]
    lines += [f"  {e}" for e in r["first_errors"]]
    for p in r["probes"]:
        keys = [k for k in ("rss_kb", "rss_after_gc_kb", "rss_after_trim_kb") if k in p]
        lines.append(f"probe {p['n']}: " + ", ".join(f"{k} {p[k]}" for k in keys)
                     + (f", traced {p['traced_kb']} kB" if "traced_kb" in p else ""))
        lines.append(f"  gc: objects per generation {p['gc_generations']}, frozen {p['gc_frozen']}, full collections "
                     f"so far {p['gc_full_collections']}, unreachable found {p['gc_unreachable']}")
        for t, n in p.get("census_growth", [])[:12]:
            lines.append(f"    +{n:6d} {t}")
        for m in p.get("mapping_growth", [])[:8]:
            lines.append(f"    {m['grown_kb']:+8d} kB rss in {m['name']} at {m['start']} ({m['size_kb']} kB mapped, "
                         f"{m['rss_kb']} kB resident{', new' if m['new'] else ''})")
        for s in p.get("traced_growth", [])[:12]:
            lines.append(f"    {s['kb']:+9.1f} kB {s['count']:+6d}  " + "  <  ".join(reversed(s["traceback"])))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=1500, help="measured /analyze requests")
    p.add_argument("--warmup", type=int, default=200, help="requests before the first measurement")
    p.add_argument("--clients", type=int, default=1, help="sessions sending requests in parallel")
    p.add_argument("--new-session-every", type=int, default=0, metavar="N",
                   help="replace each client by a new session after N of its requests (0: never)")
    p.add_argument("--samples", type=int, default=10, help="RSS samples during the measured requests")
    p.add_argument("--checkpoint", default=None, help="model (default: the app's default, date-translator)")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="server environment")
    p.add_argument("--probe", type=Path, default=None, metavar="DIR",
                   help="run the server under benchmarks.memtrace, probing after warm-up and at the end")
    p.add_argument("--trace", type=int, default=0, metavar="FRAMES", help="with --probe: tracemalloc frames")
    p.add_argument("--trim", action="store_true", help="with --probe: malloc_trim(0) at each probe")
    p.add_argument("--app", type=Path, default=ROOT, metavar="DIR",
                   help="the checkout whose app.py runs (default: this one), e.g. an older commit's git archive")
    p.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    a = p.parse_args(argv)
    env = dict(kv.split("=", 1) for kv in a.env)
    r = soak(a.requests, a.warmup, clients=a.clients, new_session_every=a.new_session_every, samples=a.samples,
             checkpoint=a.checkpoint, env=env, probe_dir=a.probe, trace=a.trace, trim=a.trim, root=a.app)
    print(describe(r))
    if a.json:
        a.json.write_text(json.dumps(r, indent=1))


if __name__ == "__main__":
    main()

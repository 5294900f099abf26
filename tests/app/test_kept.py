"""The Runs' results kept for the sessions' tabs (explorer.app.serving.kept) and the byte-bounded cache behind it
(explorer.app.serving.lru): eviction by bytes, what a kept result holds and how it is counted, and a session whose
result was let go getting its tab computed again from its own request, never another Run's figures."""

from __future__ import annotations

import copy
import tracemalloc

import numpy as np
import pytest

from explorer.app.run.request import RunRequest
from explorer.app.run.toggles import Toggles
from explorer.app.run.view import View
from explorer.app.serving.kept import RECOMPUTED, KeptResults, Shown, kept_bytes
from explorer.app.serving.lru import ByteLRU
from explorer.app.serving.session import Session
from explorer.app.tabs import analyze
from explorer.viz.serialize import figure_json


# ------------------------------------------------------------------------------------------------ the cache
def test_byte_lru_evicts_the_least_recently_used_until_a_value_fits():
    lru = ByteLRU(100)
    for key in "abc":
        assert lru.put(key, key.upper(), 30)
    assert lru.get("a") == "A"  # a is now the most recent
    assert lru.put("d", "D", 50)  # needs 50 of the 10 free: b then c go
    assert lru.keys() == ["a", "d"] and lru.used_bytes == 80 and lru.evictions == 2
    assert lru.get("b") is None and "c" not in lru


def test_byte_lru_replaces_a_key_and_refuses_a_value_over_the_budget():
    lru = ByteLRU(100)
    lru.put("a", 1, 60)
    lru.put("a", 2, 70)  # replaced, not added
    assert lru.get("a") == 2 and lru.used_bytes == 70 and len(lru) == 1
    lru.put("b", 3, 20)
    assert not lru.put("huge", 4, 101)
    assert lru.keys() == ["a", "b"] and lru.evictions == 0  # nothing was let go for a value that cannot fit
    assert not lru.put("a", 5, 101) and "a" not in lru  # a key's own larger value: its old one is gone too
    with pytest.raises(ValueError):
        ByteLRU(0)


# ------------------------------------------------------------------------------------------------ counting
def test_kept_bytes_counts_each_buffer_once():
    a = np.zeros((100, 100), dtype=np.float32)
    assert kept_bytes(a) >= a.nbytes
    assert kept_bytes([a, a]) == kept_bytes([a]) + 8  # the same array twice: one buffer, one more list slot
    view = a[:10]
    assert kept_bytes([a, view]) < kept_bytes([a]) + 1000  # a view counts its base, which is counted already
    assert kept_bytes({"x": "y" * 1000}) > 1000


@pytest.fixture(scope="module")
def date_model(app):
    return app.load("date-translator")[1]


def analysis_of(loaded, text, heads_off=True):
    kinds = loaded.config.attention_kinds()
    on = {k: frozenset((la, h) for la in range(n_l) for h in range(n_h) if (la, h) != (0, 0))
          for k, (n_l, n_h) in kinds.items()} if heads_off else None
    return analyze(loaded, text, "", Toggles(heads_on=on), View("cross", 1, 0, 1))


def test_a_kept_result_holds_no_figures_and_does_not_grow_when_drawn(date_model):
    a = analysis_of(date_model, "samedi 21 novembre 2026")
    a.figure("head"), a.figure("overview")  # a Run's own result caches what it drew
    kept = a.kept()
    assert kept.drawn is None and {"head", "overview"} <= set(a.drawn)
    before = kept_bytes(kept)
    figures = kept.figures("all")
    assert {"mask", "head", "overview", "rollout", "generation_self"} <= set(figures)
    kept.figure("head"), kept.figure("rollout")  # even one figure draws without caching on a kept result
    assert kept_bytes(kept) == before and kept.drawn is None
    # The figures of a kept result are those of the Run it came from.
    for name in ("head", "overview", "rollout", "generation_cross"):
        assert figure_json(figures[name]) == figure_json(a.figures("all")[name])


def test_kept_bytes_covers_what_a_kept_result_allocates(app):
    """Counted against what Python's allocator reports for a copy of a kept result (arrays, labels, tables)."""
    loaded = app.load("sentence-transformers/all-MiniLM-L6-v2")[1]
    kept = analysis_of(loaded, " ".join(["the cat sat on the mat"] * 40)).kept()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        twin = copy.deepcopy(kept)
        allocated = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    counted = kept_bytes(twin)
    assert 0.8 * allocated <= counted <= 1.5 * allocated, (counted, allocated)
    assert counted > 2 * 240 * 240 * 4  # at least the two heads' (T, T) float32 weights (T ~ 240)


# ------------------------------------------------------------------------------------------------ sessions
class Recorder:
    """A `recompute` that runs the model on the request, and remembers which requests it ran."""

    def __init__(self, loaded):
        self.loaded, self.requests = loaded, []

    def __call__(self, request: RunRequest):
        self.requests.append(request)
        return analyze(self.loaded, request.text1, request.text2, request.toggles, request.view)


def request_for(text, toggles=Toggles()):
    return RunRequest(Session("date-translator", "cpu"), text, "", toggles, View("cross", 1, 0, 1), 8)


def ended(shown, store, loaded, text):
    request = request_for(text)
    shown.ended(request, analyze(loaded, text, "", request.toggles, request.view), store)


def test_a_session_whose_result_was_let_go_gets_its_own_tab_computed_again(date_model):
    one = kept_bytes(analysis_of(date_model, "1/2/1950", heads_off=False).kept())
    store, recompute = KeptResults(int(2.5 * one)), Recorder(date_model)  # room for two sessions' results
    sessions = {text: Shown() for text in ("1/2/1950", "3 May 2024", "7 luglio 1999")}
    for text, shown in sessions.items():
        ended(shown, store, date_model, text)
    assert len(store) == 2 and store.evictions == 1 and store.used_bytes <= store.budget_bytes
    first = sessions["1/2/1950"]
    assert first.result(store) is None and sessions["7 luglio 1999"].result(store) is not None
    figures, notice = first.open("overview", store, recompute)
    assert notice == RECOMPUTED and [r.text1 for r in recompute.requests] == ["1/2/1950"]
    own = analysis_of(date_model, "1/2/1950", heads_off=False).figures("overview")
    assert figure_json(figures["overview"]) == figure_json(own["overview"])  # its own sentence, not another's
    assert first.result(store) is not None  # kept again; the least recently used session went instead
    assert sessions["3 May 2024"].result(store) is None
    # A kept result is drawn without running the model.
    figures, notice = sessions["7 luglio 1999"].open("rollout", store, recompute)
    assert notice is None and len(recompute.requests) == 1 and set(figures) == {"rollout"}


def test_a_tab_never_shows_an_older_run(date_model):
    store, recompute, shown = KeptResults(), Recorder(date_model), Shown()
    ended(shown, store, date_model, "1/2/1950")
    older = shown.seq
    ended(shown, store, date_model, "3 May 2024")
    assert store.find(shown.id, older) is None  # the session's older Run is gone from the store
    figures, notice = shown.open("overview", store, recompute)
    drawn = figure_json(figures["overview"])
    newer, old = (figure_json(analysis_of(date_model, t, heads_off=False).figures("overview")["overview"])
                  for t in ("3 May 2024", "1/2/1950"))
    assert notice is None and drawn == newer != old and not recompute.requests


def test_a_result_larger_than_the_whole_budget_is_not_kept_and_its_tabs_still_open(date_model):
    store, recompute, shown = KeptResults(1000), Recorder(date_model), Shown()
    ended(shown, store, date_model, "1/2/1950")
    assert len(store) == 0 and shown.seq == 1
    figures, notice = shown.open("attention", store, recompute)
    assert notice == RECOMPUTED and figures["head"].data and len(recompute.requests) == 1


def test_sessions_draw_their_own_keys(date_model):
    """gr.State gives every session a copy of the page's default Shown: each draws its own key at its first Run."""
    store, default = KeptResults(), Shown()
    a, b = copy.deepcopy(default), copy.deepcopy(default)
    ended(a, store, date_model, "1/2/1950")
    ended(b, store, date_model, "3 May 2024")
    assert a.id and b.id and a.id != b.id and len(store) == 2
    assert a.result(store).tokens != b.result(store).tokens


def test_a_tab_opened_before_any_run_draws_nothing(date_model):
    figures, notice = Shown().open("overview", KeptResults(), Recorder(date_model))
    assert figures == {} and notice is None

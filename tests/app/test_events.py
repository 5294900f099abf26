"""The page's handlers called as Gradio calls them: which tab a Run draws when the person opens another tab while
it runs (views.analysis.Shown)."""

from __future__ import annotations

import json
import threading

import pytest

from explorer.app import events as events_module
from explorer.app.labels import head_labels
from explorer.app.session import Session, get_model
from explorer.app.toggles import Toggles
from explorer.app.views import analysis as analysis_module
from explorer.app.views.analysis import Shown

MODEL = "date-translator"
DATE1, DATE2 = "samedi 21 novembre 2026", "3 May 2024"


@pytest.fixture(scope="module")
def page_events(ctx):
    from explorer.app.demo import starting_point
    from explorer.app.events import Events
    from explorer.app.ui import layout

    page = layout(starting_point(ctx, MODEL, "cpu"), Session(MODEL, "cpu"))
    with page.demo:
        ev = Events(page, ctx)
    return ev


def run(ev, text, tab, shown):
    """/analyze with every head on and the default masks."""
    kinds = get_model(Session(MODEL, "cpu"), ev.ctx).config.attention_kinds()
    enc, dec, cross = (head_labels(*kinds[k]) for k in ("encoder", "decoder", "cross"))
    out = ev.analyze(Session(MODEL, "cpu"), text, "", True, True, "none", 0, 2, enc, dec, cross, "cross", 0, 0, 1,
                     -1, 8, tab, shown)
    assert "No toggle" in out[ev.status], out[ev.status]
    return out


def drawn(ev, updates) -> set[str]:
    """Names of the figures (views.analysis.TAB_FIGURES) in a handler's updates."""
    return {name for name, plot in ev.plots.items() if plot in updates}


def plot_json(ev, updates, name) -> str:
    """The JSON a handler sent for one figure (by TAB_FIGURES name)."""
    return updates[ev.plots[name]].plot


def test_a_run_draws_the_tab_it_was_clicked_on_and_keeps_the_result(page_events):
    ev, shown = page_events, Shown()
    out = run(ev, DATE1, "overview", shown)
    assert drawn(ev, out) == {"overview", "large"} and out[ev.page.kept] is shown and shown.analysis is not None
    opened = ev.show_tab("rollout", shown)
    assert drawn(ev, opened) == {"rollout"} and opened[ev.page.views.tab] == "rollout"
    # The next Run draws the tab opened last, whatever its own (stale) tab input says.
    assert drawn(ev, run(ev, DATE2, "overview", shown)) == {"rollout"}


def test_a_tab_opened_during_a_run_shows_that_run(page_events, monkeypatch):
    """Run 1 ends; Run 2 is clicked on "attention" and, while the model runs, the person opens "All heads": the tab
    first shows Run 1 (the newest result then), and Run 2 ends by drawing "All heads" from its own result."""
    ev, shown = page_events, Shown()
    run(ev, DATE1, "attention", shown)
    first = shown.analysis
    entered, release = threading.Event(), threading.Event()
    real = events_module.analyze

    def slow_analyze(*args, **kwargs):
        entered.set()
        assert release.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(events_module, "analyze", slow_analyze)
    result = {}
    worker = threading.Thread(target=lambda: result.update(out=run(ev, DATE2, "attention", shown)))
    worker.start()
    assert entered.wait(60)
    opened = ev.show_tab("overview", shown)  # while Run 2 is under way
    release.set()
    worker.join(60)
    second = shown.analysis
    assert second is not first
    assert drawn(ev, opened) == {"overview", "large"}
    assert drawn(ev, result["out"]) == {"overview", "large"}  # not the attention tab it was clicked on
    # Each shows its own run: the overview's tokens are those of the sentence of that run.
    assert json.loads(plot_json(ev, opened, "overview")) != json.loads(plot_json(ev, result["out"], "overview"))
    assert plot_json(ev, result["out"], "overview") == events_module.plot(second.overview).plot


def test_a_tab_drawn_while_a_run_ends_is_drawn_again_from_that_run(page_events, monkeypatch):
    ev, shown = page_events, Shown()
    run(ev, DATE1, "attention", shown)
    first = shown.analysis
    newer = analysis_module.analyze(get_model(Session(MODEL, "cpu"), ev.ctx), DATE2, "", Toggles())
    real, drawn_from = analysis_module.tab_figures, []

    def run_ends_meanwhile(a, tab):
        drawn_from.append(a)
        shown.analysis = newer  # a Run ends while this tab is being drawn
        return real(a, tab)

    monkeypatch.setattr(analysis_module, "tab_figures", run_ends_meanwhile)
    figures = shown.open("rollout")
    assert drawn_from == [first, newer] and set(figures) == {"rollout"}


def test_a_tab_opened_before_the_first_run_ends_draws_nothing_until_it_does(page_events):
    ev, shown = page_events, Shown()
    opened = ev.show_tab("generation", shown)
    assert drawn(ev, opened) == set() and opened[ev.page.views.tab] == "generation"
    assert drawn(ev, run(ev, DATE1, "attention", shown)) == {"generation_self", "generation_cross"}


def test_the_api_draws_the_tab_it_names():
    """An API client never opens a tab: its `tab` argument decides ("all": every tab)."""
    shown = Shown()
    assert shown.visible_tab("all") == "all" and shown.visible_tab(None) == "attention"
    shown.tab = "rollout"
    assert shown.visible_tab("all") == "rollout"


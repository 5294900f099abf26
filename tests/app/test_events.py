"""The page's shared handlers (explorer.app.events) called with typed forms: which tab a Run draws when the person
opens another tab while it runs (kept.Shown), and a language model's Run in two steps (its attention first, then its
outputs)."""

from __future__ import annotations

import dataclasses
import json
import threading

import gradio as gr
import pytest
import torch

from explorer.app.forms import RunForm
from explorer.app.page.assets import plot
from explorer.app.page.head_labels import head_labels
from explorer.app.run import result as analysis_module
from explorer.app.run.output_table import NEXT_TOKEN_HEADERS
from explorer.app.run.result import WAITING
from explorer.app.run.toggles import Toggles
from explorer.app.run.view import View
from explorer.app.serving.errors import AppError
from explorer.app.serving.kept import Shown
from explorer.app.serving.session import Session, get_model
from explorer.app.tabs import TABS, analyze
from explorer.app.tabs.attention import NO_OUTPUTS
from tests.hang import HANG_S

MODEL = "date-translator"
DATE1, DATE2 = "samedi 21 novembre 2026", "3 May 2024"


def run(ev, text, tab, shown):
    """/analyze with every head on and the default masks."""
    kinds = get_model(Session(MODEL, "cpu"), ev.ctx).config.attention_kinds()
    enc, dec, cross = (head_labels(*kinds[k]) for k in ("encoder", "decoder", "cross"))
    form = RunForm(Session(MODEL, "cpu"), text, "", True, True, "none", 0, 2, enc, dec, cross, "cross", 0, 0, 1,
                   tab=tab)
    steps = list(ev.analyze(form, shown))
    # A translation model's Run is answered at once; the empty update after it keeps Gradio's closing message
    # (which repeats the last update's values) from sending and drawing everything twice.
    assert len(steps) == 2 and steps[1] == {ev.status: gr.skip()}
    out = steps[0]
    assert "No toggle" in out[ev.page.results.state], out[ev.page.results.state]
    return out


def drawn(ev, updates) -> set[str]:
    """Names of the figures (tabs' RunFigure names) in a handler's updates."""
    return {name for name, plot in ev.plots.items() if plot in updates}


def plot_json(ev, updates, name) -> str:
    """The JSON a handler sent for one figure (by its name)."""
    return updates[ev.plots[name]].plot


def test_a_run_draws_the_tab_it_was_clicked_on_and_keeps_the_result(page_events):
    ev, shown = page_events, Shown()
    out = run(ev, DATE1, "overview", shown=shown)
    assert drawn(ev, out) == {"overview", "large"} and out[ev.page.kept] is shown and shown.result(ev.ctx.kept) is not None
    opened = ev.show_tab("rollout", shown)
    assert drawn(ev, opened) == {"rollout"} and opened[ev.page.visible_tab] == "rollout"
    # The next Run draws the tab opened last, whatever its own (stale) tab input says.
    assert drawn(ev, run(ev, DATE2, "overview", shown=shown)) == {"rollout"}


def test_a_tab_opened_during_a_run_shows_that_run(page_events, monkeypatch):
    """Run 1 ends; Run 2 is clicked on "attention" and, while the model runs, the person opens "All heads": the tab
    first shows Run 1 (the newest result then), and Run 2 ends by drawing "All heads" from its own result."""
    ev, shown = page_events, Shown()
    run(ev, DATE1, "attention", shown)
    first = shown.result(ev.ctx.kept)
    entered, release = threading.Event(), threading.Event()
    real = ev.compute.analyze

    def slow_analyze(*args, **kwargs):
        entered.set()
        assert release.wait(HANG_S)
        yield from real(*args, **kwargs)

    monkeypatch.setattr(ev.compute, "analyze", slow_analyze)
    result = {}
    worker = threading.Thread(target=lambda: result.update(out=run(ev, DATE2, "attention", shown)))
    worker.start()
    assert entered.wait(HANG_S)
    opened = ev.show_tab("overview", shown=shown)  # while Run 2 is under way
    release.set()
    worker.join(HANG_S)
    assert not worker.is_alive()
    second = shown.result(ev.ctx.kept)
    assert second is not first
    assert drawn(ev, opened) == {"overview", "large"}
    assert drawn(ev, result["out"]) == {"overview", "large"}  # not the attention tab it was clicked on
    # Each shows its own run: the overview's tokens are those of the sentence of that run.
    assert json.loads(plot_json(ev, opened, "overview")) != json.loads(plot_json(ev, result["out"], "overview"))
    assert plot_json(ev, result["out"], "overview") == plot(second.figure("overview")).plot


def test_a_tab_drawn_while_a_run_ends_is_drawn_again_from_that_run(page_events, monkeypatch):
    ev, shown = page_events, Shown()
    run(ev, DATE1, "attention", shown)
    first = shown.result(ev.ctx.kept)
    newer = analyze(get_model(Session(MODEL, "cpu"), ev.ctx), DATE2, "", Toggles())
    real, drawn_from = analysis_module.Analysis.figures, []

    def run_ends_meanwhile(a, tab, skip=()):
        drawn_from.append(a)
        if len(drawn_from) == 1:
            shown.ended(shown.request, newer, ev.ctx.kept)  # a Run ends while this tab is being drawn
        return real(a, tab, skip)

    monkeypatch.setattr(analysis_module.Analysis, "figures", run_ends_meanwhile)
    figures, notice = shown.open("rollout", ev.ctx.kept, ev.recompute)
    assert drawn_from[0] is first and drawn_from[1] is shown.result(ev.ctx.kept) and len(drawn_from) == 2
    assert drawn_from[1].output.rows == newer.output.rows and set(figures) == {"rollout"} and notice is None


def test_a_tab_whose_result_was_let_go_is_computed_again_and_says_so(page_events):
    """The store let this session's result go (other sessions needed the room): the tab opened next is computed from
    the session's own last request, equal to the figures its Run would have drawn, with a one-line notice."""
    ev, shown = page_events, Shown()
    run(ev, DATE1, "attention", shown)
    expected = plot_json(ev, ev.show_tab("rollout", shown), "rollout")
    assert ev.show_tab("rollout", shown)[ev.status] == gr.skip()  # kept: the status line keeps the Run's notices
    ev.ctx.kept.drop(shown.id)
    again = ev.show_tab("rollout", shown)
    assert plot_json(ev, again, "rollout") == expected and shown.result(ev.ctx.kept) is not None
    assert again[ev.status].startswith("⚠️") and "computed again" in again[ev.status] and "\n" not in again[ev.status]


def test_a_tab_opened_before_the_first_run_ends_draws_nothing_until_it_does(page_events):
    ev, shown = page_events, Shown()
    opened = ev.show_tab("generation", shown)
    assert drawn(ev, opened) == set() and opened[ev.page.visible_tab] == "generation"
    assert drawn(ev, run(ev, DATE1, "attention", shown)) == {"generation_self", "generation_cross"}


def test_the_api_draws_the_tab_it_names(page_events):
    """An API client's `tab` argument decides ("all": every tab), also after it opened another tab with /show_tab
    (a load test's client that had opened the rollout tab got no head figure from its next 'attention' Run)."""
    shown = Shown()
    assert shown.visible_tab("all") == "all" and shown.visible_tab(None) == "attention"
    ev = page_events
    heads = head_labels(2, 4)  # the date-translator: every head on
    form = RunForm(Session(MODEL, "cpu"), DATE1, "", True, True, "none", 0, 2, heads, heads, heads, "cross", 0, 0, 1,
                   tab="attention")
    ev.analyze_at_once(form, shown)
    ev.show_tab("rollout", shown)
    assert drawn(ev, ev.analyze_at_once(form, shown)) >= {"mask", "head", "baseline"}



# ---------------------------------------------------------------------------------------- a language model's Run
LM_TEXT = "The cat sat on the mat because the cat was tired"


@pytest.fixture(scope="module")
def lm_events(tmp_path_factory):
    """Events of a page whose model is a tiny GPT-2 in the Hugging Face layout (an allowed folder)."""
    transformers = pytest.importorskip("transformers")
    from explorer.app.demo import starting_point
    from explorer.app.events import PageEvents
    from explorer.app.serving.registry import ModelRegistry
    from explorer.app.serving.session import AppContext
    from explorer.app.page.layout import layout
    from tests.importers.harness import VOCAB, byte_level_tokenizer, make_case

    root = tmp_path_factory.mktemp("models")
    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=48, n_head=6, n_layer=2, n_positions=64,
                                     bos_token_id=0, eos_token_id=0)
    make_case(transformers.GPT2LMHeadModel, config, byte_level_tokenizer(), root / "tiny-gpt2",
              lambda hf, layer: hf.transformer.h[layer].attn.c_proj,
              {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "add_bos_token": False})
    ctx = AppContext(ModelRegistry(), allowed_dirs=(str(root),))
    page = layout(starting_point(ctx, "tiny-gpt2", "cpu"), Session("tiny-gpt2", "cpu"), TABS)
    with page.demo:
        ev = PageEvents(page, ctx)
    return ev


def lm_run(ev, tab, shown, heads_on=None):
    """/analyze of the tiny GPT-2 as Gradio calls it: the handler's generator of updates, not yet started."""
    return ev.analyze(lm_form(tab, heads_on), shown)


def lm_form(tab, heads_on=None) -> RunForm:
    """The tiny GPT-2's Run: decoder L1 H2, 3 tokens of continuation, `heads_on` (default: every head on)."""
    return RunForm(Session("tiny-gpt2", "cpu"), LM_TEXT, "", True, True, "none", 0, 2, [],
                   head_labels(2, 6) if heads_on is None else heads_on, [], "decoder", 1, 2, 1, continue_tokens=3,
                   tab=tab)


def test_a_language_model_shows_its_attention_before_its_outputs(lm_events):
    ev, shown = lm_events, Shown()
    v, steps = ev.page.parts["attention"], lm_run(ev, "overview", shown=shown)
    first = next(steps)
    # The grid of the visible tab, while the vocabulary head, predictions and continuation are computed.
    assert drawn(ev, first) == {"overview"} and shown.result(ev.ctx.kept) is None
    assert WAITING in first[ev.status] and first[v.output_md] == WAITING
    assert first[v.output_df].empty and list(first[v.output_df].columns) == NEXT_TOKEN_HEADERS  # no stale rows
    assert v.tokens_df not in first
    # Then the chosen head's view below the grid, alone (the outputs are still being computed).
    second = next(steps)
    assert drawn(ev, second) == {"large"} and set(second) == {ev.plots["large"]}
    # The outputs are sent before the other tabs' reductions are made and the result is kept; then it is.
    last = next(steps)
    assert shown.result(ev.ctx.kept) is None
    closing, = list(steps)
    assert closing == {ev.status: gr.skip()}
    a = shown.result(ev.ctx.kept)
    # The figures on the page already are not sent again; they are the finished result's own.
    assert drawn(ev, last) == set() and last[ev.page.kept] is shown
    assert plot_json(ev, first, "overview") == plot(a.figure("overview")).plot
    assert "No toggle" in last[ev.page.results.state] and WAITING not in last[ev.status]
    assert list(last[v.output_df].columns) == NEXT_TOKEN_HEADERS and len(last[v.output_df]) == 10
    assert len(last[v.tokens_df]) == len(a.tokens[1])
    # The same answer as a Run made in one step.
    whole = analyze(get_model(Session("tiny-gpt2", "cpu"), ev.ctx), LM_TEXT, "", Toggles(), View("decoder", 1, 2, 1),
                    new_tokens=3)
    assert a.output.rows == whole.output.rows and a.output.summary == whole.output.summary
    assert plot(a.figure("overview")).plot == plot(whole.figure("overview")).plot


def test_a_tab_opened_after_the_outputs_are_sent_is_drawn_again_from_that_run(lm_events):
    """The outputs are sent before the Run's result is kept: a tab opened in between draws the Run before (the newest
    kept then), and the Run's last update draws it again from its own result."""
    ev, shown = lm_events, Shown()
    list(lm_run(ev, "overview", shown))  # Run 1, kept
    first = shown.result(ev.ctx.kept)
    steps = lm_run(ev, "overview", shown, heads_on=[h for h in head_labels(2, 6) if h != "L0 H1"])  # Run 2
    next(steps), next(steps), next(steps)  # its grid, its chosen head, its outputs: not kept yet
    opened = ev.show_tab("rollout", shown)
    assert plot_json(ev, opened, "rollout") == plot(first.figure("rollout")).plot  # Run 1's, the newest then
    closing, = list(steps)
    second = shown.result(ev.ctx.kept)
    assert second is not first and drawn(ev, closing) == {"rollout"}
    assert plot_json(ev, closing, "rollout") == plot(second.figure("rollout")).plot
    assert plot_json(ev, closing, "rollout") != plot_json(ev, opened, "rollout")  # the head off changed it


def test_the_end_of_a_run_draws_what_its_first_look_could_not(lm_events):
    """The attention tab's first look has the four heatmaps; the surprisal chart and the sampling view (greedy here, in
    words) need the outputs and come last.
    With a head switched off, the toggled run rates the baseline's favourites in the second step."""
    ev, shown = lm_events, Shown()
    on = [label for label in head_labels(2, 6) if label != "L1 H2"]
    steps = lm_run(ev, "attention", shown, heads_on=on)
    assert drawn(ev, next(steps)) == {"mask", "head", "baseline", "difference"}
    last, _ = list(steps)
    assert drawn(ev, last) == {"surprisal", "sampling"}
    output_md = ev.page.parts["attention"].output_md
    assert "p = " in last[output_md] and "with the toggles p = " in last[output_md]


def test_a_tab_opened_after_the_first_look_is_drawn_whole_at_the_end(lm_events):
    """The person opens "All heads" and comes back to "Attention" between the two steps: the tab then showed an
    older Run (or nothing), so the end of the Run draws all of the tab, not only what the first look lacked."""
    ev, shown = lm_events, Shown()
    steps = lm_run(ev, "attention", shown)
    assert drawn(ev, next(steps)) == {"mask", "head", "baseline", "difference"}
    ev.show_tab("overview", shown=shown)
    ev.show_tab("attention", shown)
    last, _ = list(steps)
    assert drawn(ev, last) == {"mask", "head", "baseline", "difference", "surprisal", "sampling"}


def test_an_error_after_the_first_look_becomes_the_status_line(lm_events, monkeypatch):
    ev, shown = lm_events, Shown()
    real = ev.compute.analyze

    def fails_after_the_first_look(*args, **kwargs):
        steps = real(*args, **kwargs)
        yield next(steps)
        raise AppError("the vocabulary head ran out of memory")

    monkeypatch.setattr(ev.compute, "analyze", fails_after_the_first_look)
    updates = list(lm_run(ev, "overview", shown=shown))
    assert len(updates) == 3 and drawn(ev, updates[0]) == {"overview"}
    # The output panel no longer says its predictions are coming, and the status line says why.
    assert updates[1] == {ev.page.parts["attention"].output_md: NO_OUTPUTS}
    assert updates[2] == {ev.status: "⚠️ the vocabulary head ran out of memory"} and shown.result(ev.ctx.kept) is None


def test_each_step_of_a_run_computes_with_the_requests_share_of_the_cores(lm_events, monkeypatch):
    """Gradio may resume a Run on another worker thread: its torch threads are set again there (app.serving.cores). The
    outputs, computed in a thread of their own (pair.Outputs) while the attention is drawn and sent, use half the
    request's share (the vocabulary head at the chosen position, the continuation); the predictions at every
    position, made on the Run's thread once the outputs are sent, the whole share."""
    from explorer.outputs import causal_lm as lm
    from explorer.app.serving.cores import CoreShare

    ev, shown, seen, outputs = lm_events, Shown(), [], []
    real, real_predictions = ev.compute.analyze, lm.head_predictions

    def recording(*args, **kwargs):
        for step in real(*args, **kwargs):
            seen.append(torch.get_num_threads())
            yield step

    def predictions(*args, **kwargs):
        outputs.append((threading.current_thread().name, torch.get_num_threads()))
        return real_predictions(*args, **kwargs)

    monkeypatch.setattr(ev.compute, "analyze", recording)
    monkeypatch.setattr(lm, "head_predictions", predictions)
    monkeypatch.setattr(ev, "ctx", dataclasses.replace(ev.ctx, cores=CoreShare(2, shared=True)))
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        steps = lm_run(ev, "overview", shown=shown)
        next(steps)  # on this thread
        worker = threading.Thread(target=lambda: list(steps))  # the rest on another one, which has 1 thread
        worker.start()
        worker.join(HANG_S)
        assert not worker.is_alive() and seen == [2, 2, 2] and shown.result(ev.ctx.kept) is not None
        assert outputs == [("run-outputs", 1), (worker.name, 2)]
    finally:
        torch.set_num_threads(before)


def test_the_api_gets_a_language_models_run_in_one_answer(lm_events):
    """/analyze (analyze_at_once): the two steps merged, nothing left saying the outputs are coming."""
    ev, shown = lm_events, Shown()
    out = ev.analyze_at_once(lm_form("overview"), shown)
    v = ev.page.parts["attention"]
    assert drawn(ev, out) == {"overview", "large"} and len(out[v.output_df]) == 10
    assert WAITING not in out[ev.status] and out[v.output_md].startswith("Sentence 1")
    assert plot_json(ev, out, "overview") == plot(shown.result(ev.ctx.kept).figure("overview")).plot


def test_the_positions_tab_redrawn_after_a_run_leaves_its_status(page_events):
    """After a model change the page runs the model, then redraws the Positions tab: that must not wipe what the Run
    said on the status line (its notices: a cut sentence, an adjusted mask); its own error would still show."""
    from explorer.app.tabs.positions import PositionalForm, PositionsEvents

    ev = page_events
    parts = ev.page.parts["positions"]
    tab = PositionsEvents(ev, parts)
    session = Session(MODEL, "cpu")
    after = tab.after_run(PositionalForm(session, 32, 20, 10000))
    assert ev.status not in after and parts.heat in after
    assert tab.shown(PositionalForm(session, 32, 20, 10000))[ev.status] == ""  # /positional itself still clears it
    failed = tab.after_run(PositionalForm(session, 5000, 20, 10000))
    assert failed[ev.status].startswith("⚠️")

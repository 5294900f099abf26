"""The app on a ZeroGPU Space (explorer.app.serving.compute): every handler that runs a model does it through
spaces.GPU, which there runs each call in a forked process with its arguments and results pickled. With a test double
that does exactly that (tests/app/zerogpu.py), each handler gives the answer it gives in-process, the server itself
never runs a model's forward pass, and what a Run keeps (the kept results, the session's state) stays in the server."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pandas as pd
import pytest
from gradio.components.plot import PlotData

from explorer.app.forms import RunForm, form_of
from explorer.app.page.head_labels import head_labels
from explorer.app.serving import compute
from explorer.app.serving.kept import Shown
from explorer.app.serving.session import AppContext, Session
from explorer.app.tabs import TABS
from explorer.app.tabs.circuit.forms import CircuitForm
from explorer.app.tabs.compare.forms import CompareForm
from explorer.app.tabs.contributions.result import Contributions
from explorer.app.tabs.contributions.tab import ContributionForm
from explorer.app.tabs.head.forms import HeadForm
from explorer.app.tabs.head.tab import HeadState
from explorer.app.tabs.importance import ImportanceForm
from explorer.app.tabs.lens import LensForm
from explorer.app.tabs.positions import PositionalForm
from explorer.app.tabs.roles.tab import RolesForm, SwitchOffForm
from explorer.model import Transformer
from tests.app.zerogpu import ForkedCalls

MODEL = "date-translator"
DATE1, DATE2 = "samedi 21 novembre 2026", "3 May 2024"
HEADS = head_labels(2, 4)


def page(ctx: AppContext, model: str = MODEL):
    from explorer.app.demo import starting_point
    from explorer.app.events import PageEvents
    from explorer.app.page.layout import layout

    built = layout(starting_point(ctx, model, "cpu"), Session(model, "cpu"), TABS)
    with built.demo:
        ev = PageEvents(built, ctx)
        ev.wire()  # the tabs' handlers (ev.tab_events)
    return ev


@pytest.fixture(scope="module")
def pages():
    """(in-process PageEvents, PageEvents whose computations fork like ZeroGPU, the double's record of calls)."""
    from explorer.app.serving.registry import ModelRegistry

    forked = ForkedCalls()
    here = page(AppContext(ModelRegistry()))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compute, "GPU", forked)
        there = page(AppContext(ModelRegistry()))
    return here, there, forked


@contextlib.contextmanager
def server_runs_no_model():
    """Within it, the server process may read a model's config and tokenizer, never run it."""
    server = os.getpid()
    with pytest.MonkeyPatch.context() as mp:
        for name in ("forward", "encode", "decode"):
            real = getattr(Transformer, name)

            def guarded(self, *args, _real=real, _name=name, **kwargs):
                assert os.getpid() != server, f"the server ran Transformer.{_name}"
                return _real(self, *args, **kwargs)
            mp.setattr(Transformer, name, guarded)
        yield


def files_read(updates: dict) -> dict:
    """The Circuit tab's updates with its files' contents for their paths (each page writes its own folder)."""
    return {c: Path(v).read_text(encoding="utf-8") if isinstance(v, str) and v.endswith((".csv", ".json")) else v
            for c, v in updates.items()}


def values(ev, updates) -> dict:
    """Updates by component name (elem_id or label), figures as parsed JSON: comparable across two pages."""
    out, order = {}, {id(c): n for n, c in enumerate(ev.page.demo.blocks.values())}
    for component, value in updates.items():
        if isinstance(value, (Shown, HeadState)):
            continue  # each page's own session state
        if isinstance(value, Contributions):  # the Contributions tab's kept result: its drawn tables are compared
            value = (value.token, value.baseline.logit, value.notices)
        key = getattr(component, "elem_id", None) or order[id(component)]  # both pages are laid out alike
        if isinstance(value, PlotData):
            value = json.loads(value.plot)
        elif isinstance(value, pd.DataFrame):
            value = value.to_dict()
        out[key] = value
    return out


def analyze(ev, shown, tab="attention", text=DATE1, enc=HEADS[1:]):
    return ev.analyze_at_once(RunForm(Session(MODEL, "cpu"), text, DATE2, True, True, "none", 0, 2, enc, HEADS, HEADS,
                                      "cross", 1, 0, 1, tab=tab), shown)


def test_a_run_and_its_tabs_are_computed_in_a_forked_worker_and_kept_in_the_server(pages):
    here, there, forked = pages
    ours, theirs = Shown(), Shown()
    expected = values(here, analyze(here, ours, "all"))
    rollout, overview = (values(here, here.show_tab(tab, ours)) for tab in ("rollout", "overview"))
    calls = len(forked.pids)
    with server_runs_no_model():
        assert values(there, analyze(there, theirs, "all")) == expected
        assert len(forked.pids) == calls + 1 and os.getpid() not in forked.pids
        # Kept in the server's store (not in the worker, which is gone): a tab opens without a model run.
        assert theirs.result(there.ctx.kept) is not None
        assert values(there, there.show_tab("rollout", theirs)) == rollout and len(forked.pids) == calls + 1
        # Let go: the tab is computed again in a worker, from the session's own request.
        there.ctx.kept.drop(theirs.id)
        again = there.show_tab("overview", theirs)
    assert len(forked.pids) == calls + 2 and "computed again" in again[there.status]
    assert values(there, again)["overview-plot"] == overview["overview-plot"]


def test_the_other_model_tabs_run_in_a_forked_worker(pages):
    here, there, forked = pages
    session = Session(MODEL, "cpu")
    compare = form_of(CompareForm, session=session, model2="date-gpt", sentence1=DATE1, sentence2=DATE2,
                      padding_mask=True, causal_mask=True, custom_mask="none", blocked_position=0, window=2,
                      encoder_heads_on=HEADS, decoder_heads_on=HEADS, cross_heads_on=HEADS[1:], kind="cross", layer=1,
                      head=0, sentence=1, predict_after=-1, continue_tokens=8, measure="weights", kind2="decoder",
                      layer2=3, head2=1, encoder_heads_on2=[], decoder_heads_on2=head_labels(4, 4)[2:],
                      cross_heads_on2=[])
    calls = {
        "importance": lambda ev: ev.tab_events["importance"].ranked(
            form_of(ImportanceForm, session, DATE1, DATE2, True, True, "none", 0, 2, "cross")),
        "positional": lambda ev: ev.tab_events["positions"].shown(PositionalForm(session, 64, 40, 10000)),
        "roles": lambda ev: ev.tab_events["roles"].scored(RolesForm(session, DATE1, "decoder", HEADS, HEADS[2:],
                                                                    HEADS)),
        "lens": lambda ev: ev.tab_events["lens"].read(LensForm(session, DATE1)),
        "switch_off_role": lambda ev: ev.tab_events["roles"].switched_off(
            SwitchOffForm(session, DATE1, "decoder", "self", 2, "probe")),
        "compare_models": lambda ev: ev.tab_events["compare"].compared(compare),
        "head_computation": lambda ev: ev.tab_events["head"].api(
            form_of(HeadForm, session, DATE1, DATE2, True, False, "none", 0, 2, HEADS, HEADS[2:], HEADS, "cross", 1,
                    2, 2, query=3)),
        "contributions": lambda ev: ev.tab_events["contributions"].attributed(
            ContributionForm(session, DATE1, position=3, steps=4, encoder_heads_on=HEADS, decoder_heads_on=HEADS,
                             cross_heads_on=HEADS[1:])),
        "circuit": lambda ev: files_read(list(ev.tab_events["circuit"].found(
            CircuitForm(session, generated=8, held_out=2, method="eap", edges=30)))[-1]),
    }
    expected = {name: values(here, call(here)) for name, call in calls.items()}
    assert not expected["compare_models"]["status"] and "date-gpt" in expected["compare_models"]["compare2-md"]
    before = len(forked.pids)
    with server_runs_no_model():
        for name, call in calls.items():
            assert values(there, call(there)) == expected[name], name
    assert len(forked.pids) == before + len(calls)


def test_an_error_in_a_worker_is_a_message_in_the_server(pages):
    _, there, _ = pages
    out = analyze(there, Shown(), text="   ")
    assert out[there.status].startswith("⚠️") and "empty" in out[there.status]


def test_a_language_models_run_comes_in_two_steps_from_the_worker(tmp_path):
    """The first looks (attention reduced for the visible tab: the All heads grid, then the chosen head below it)
    cross the process boundary, then the outputs."""
    transformers = pytest.importorskip("transformers")
    from explorer.app.serving.registry import ModelRegistry
    from tests.importers.harness import VOCAB, byte_level_tokenizer, make_case

    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=48, n_head=6, n_layer=2, n_positions=64,
                                     bos_token_id=0, eos_token_id=0)
    make_case(transformers.GPT2LMHeadModel, config, byte_level_tokenizer(), tmp_path / "tiny-gpt2",
              lambda hf, layer: hf.transformer.h[layer].attn.c_proj,
              {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "add_bos_token": False})
    forked = ForkedCalls()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compute, "GPU", forked)
        ev = page(AppContext(ModelRegistry(), allowed_dirs=(str(tmp_path),)), "tiny-gpt2")
    shown, labels = Shown(), head_labels(2, 6)
    with server_runs_no_model():
        form = RunForm(Session("tiny-gpt2", "cpu"), "The cat sat on the mat", "", True, True, "none", 0, 2, [],
                       labels[1:], [], "decoder", 1, 2, 1, continue_tokens=3, tab="overview")
        steps = list(ev.analyze(form, shown))
    first, second, last = steps[0], steps[1], steps[2]
    assert "overview-plot" in values(ev, first) and "computing the next-token" in first[ev.status]
    assert list(values(ev, second)) == ["large-plot"]
    assert len(last[ev.page.parts["attention"].output_df]) == 10 and len(forked.pids) == 1
    assert shown.result(ev.ctx.kept) is not None

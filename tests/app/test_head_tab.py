"""The Inside a head tab's handlers (explorer.app.tabs.head) with typed forms, on the shipped date-translator and tiny
GPT-2 and Llama (grouped-query attention) models: the numbers are explorer.interpret.head_computation's on the rows
the page's Run reads, and its weights are the attention the Run returned (the heatmap's numbers), baseline and
toggled (a head off, the causal mask off); a second query of the same block runs no model; a click on the Attention
tab's heatmap opens the tab on that query; bad input is a message naming the value."""

from __future__ import annotations

import gradio as gr
import numpy as np
import pytest
import torch

from explorer.app.forms import form_of, replaced
from explorer.app.page.head_labels import head_labels
from explorer.app.run.inputs import pad_id_of
from explorer.app.run.pair import compare
from explorer.app.run.toggles import Toggles
from explorer.app.serving.kept import Shown
from explorer.app.serving.registry import ModelRegistry
from explorer.app.serving.session import AppContext, Session
from explorer.app.tabs.head.computation import computation_json
from explorer.app.tabs.head.forms import HeadForm
from explorer.app.tabs.head.tab import HeadState
from explorer.batching import pad_rows
from explorer.interpret import head_computation
from tests.app.tiny_models import tiny_gpt2, tiny_llama

DATE1, DATE2 = "samedi 21 novembre 2026", "3 May 2024"
LM1, LM2 = "The cat sat on the mat", "A dog ran"


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    return head_events(tmp_path_factory)


def head_events(tmp_path_factory):
    """The page on date-translator, every event wired; tiny-gpt2 and tiny-llama loadable from an allowed folder:
    the Inside a head tab's events."""
    from explorer.app.demo import starting_point
    from explorer.app.events import PageEvents
    from explorer.app.page.layout import layout
    from explorer.app.tabs import TABS

    root = tmp_path_factory.mktemp("models")
    tiny_gpt2(root / "tiny-gpt2")
    tiny_llama(root / "tiny-llama")
    ctx = AppContext(ModelRegistry(), (str(root),))
    page = layout(starting_point(ctx, "date-translator", "cpu"), Session("date-translator", "cpu"), TABS)
    with page.demo:
        events = PageEvents(page, ctx)
        events.wire()
    return events.tab_events["head"]


def form(ev, source, text1, text2, off=None, **over):
    """A HeadForm with every head on but `off` ({kind: ["L0 H1"]}) and the page's defaults."""
    from explorer.app.serving.session import get_model

    session = Session(source, "cpu")
    kinds = get_model(session, ev.ctx).config.attention_kinds()
    on = {k: [h for h in head_labels(*kinds[k]) if h not in (off or {}).get(k, ())] if k in kinds else []
          for k in ("encoder", "decoder", "cross")}
    values = dict(session=session, sentence1=text1, sentence2=text2, padding_mask=True, causal_mask=True,
                  custom_mask="none", blocked_position=0, window=2, encoder_heads_on=on["encoder"],
                  decoder_heads_on=on["decoder"], cross_heads_on=on["cross"], kind="decoder", layer=1, head=0,
                  sentence=1, continue_tokens=8, measure="weights", query=-1, lines_heads=None,
                  words="details")
    values.update(over)
    return form_of(HeadForm, **values)


def numbers(ev, f):
    """/head_computation's updates and its numbers (JSON data)."""
    updates = ev.api(f)
    assert not str(updates[ev.status]).startswith("⚠️"), updates[ev.status]
    return updates, updates[ev.parts.data]


def reference(loaded, cmp, kind, layer, head, query, row, toggles, hm):
    """explorer.interpret.head_computation on row `row` of the Run's own sequences (padded as in its batch)."""
    model, pad = loaded.model, pad_id_of(loaded)
    src_rows = cmp.baseline.ids["encoder" if "encoder" in cmp.baseline.ids else "decoder"]
    tgt = None
    if loaded.arch == "encoder-decoder":
        dec = cmp.baseline.ids["decoder"]
        tgt = pad_rows(dec, pad)[row:row + 1]
        tgt_mask = torch.arange(tgt.shape[1])[None] < len(dec[row])
    src = pad_rows(src_rows, pad)[row:row + 1]
    key_mask = torch.arange(src.shape[1])[None] < len(src_rows[row])
    extra = {} if tgt is None else dict(tgt=tgt, tgt_key_mask=tgt_mask)
    return head_computation(model, src, kind, layer, head, query, key_mask=key_mask, padding=toggles.padding,
                            causal=toggles.causal, head_mask=hm, **extra)


def same(data, comp):
    """Every field of the JSON equals the HeadComputation's, or another JSON's (floats within 1e-5; -inf as None)."""
    expected = comp if isinstance(comp, dict) else computation_json(comp)
    assert data.keys() == expected.keys()
    for name, value in expected.items():
        if isinstance(value, list) and value and not isinstance(value[0], str):
            a = np.array(data[name], dtype=object)
            b = np.array(value, dtype=object)
            assert (a == None).tolist() == (b == None).tolist(), name  # noqa: E711
            keep = b != None  # noqa: E711
            assert np.allclose(a[keep].astype(float), b[keep].astype(float), atol=1e-5), name
        elif isinstance(value, float):
            assert data[name] == pytest.approx(value, abs=1e-5), name
        else:
            assert data[name] == value, name


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_date_translator_numbers_are_the_runs(ev, kind):
    """Sentence 2 (padded), decoder L0 H1 off and the causal mask off: baseline and toggled numbers are
    head_computation's on the Run's rows, and their weights are the attention the page's Run returned."""
    from explorer.app.serving.session import get_model

    off = {"decoder": ["L0 H1"]}
    f = form(ev, "date-translator", DATE1, DATE2, off, kind=kind, layer=1, head=2, sentence=2, causal_mask=False,
             query=3)
    _, data = numbers(ev, f)
    loaded = get_model(f.session, ev.ctx)
    toggles = Toggles(causal=False, heads_on={"decoder": frozenset({(0, 0), (0, 2), (0, 3)} | {(1, h) for h in
                                                                                                  range(4)})})
    cmp = compare(loaded, DATE1, DATE2, toggles, 1024)
    hm = cmp.head_mask
    assert data["changes"] == ["causal mask off", "decoder L0 H1 off"]
    for run, name, tog, mask in ((cmp.baseline, "baseline", Toggles(), None), (cmp.toggled, "toggled", toggles, hm)):
        shown = run.attentions[kind][1][1, 2, 3].numpy()  # (S,) the Run's row: sentence 2, head 2, query 3
        assert np.abs(np.array(data[name]["weights"]) - shown).max() < 1e-6, name
        same(data[name], reference(loaded, cmp, kind, 1, 2, 3, 1, tog, mask))
    assert data["key_labels"] == cmp.baseline.keys[kind][1] and data["query_labels"] == cmp.baseline.queries[kind][1]
    if kind == "encoder":  # sentence 2's padding keys are blocked, and say why
        assert "padding" in data["baseline"]["blocked_by"] and data["baseline"]["masked_scores"][-1] is None
    if kind == "decoder":
        assert data["baseline"]["blocked_by"][4] == "causal" and data["toggled"]["blocked_by"][4] == ""


@pytest.mark.parametrize("source", ["tiny-gpt2", "tiny-llama"])
def test_language_models_numbers_are_the_runs(ev, source):
    """A language model reads the sentences as typed; a head off below the block changes its input; under
    grouped-query attention the query head names the key/value head it reads; rotary keeps q before rotation."""
    from explorer.app.serving.session import get_model

    off = {"decoder": ["L0 H0"]}
    f = form(ev, source, LM1, LM2, off, layer=1, head=1, query=-1)
    updates, data = numbers(ev, f)
    loaded = get_model(f.session, ev.ctx)
    n_heads = loaded.config.n_heads
    on = frozenset((la, h) for la in range(2) for h in range(n_heads)) - {(0, 0)}
    toggles = Toggles(heads_on={"decoder": on})
    cmp = compare(loaded, LM1, LM2, toggles, 1024, 8)
    T = len(cmp.baseline.ids["decoder"][0])
    for run, name, mask in ((cmp.baseline, "baseline", None), (cmp.toggled, "toggled", cmp.head_mask)):
        assert data[name]["query"] == T - 1
        assert np.abs(np.array(data[name]["weights"]) - run.attentions["decoder"][1][0, 1, T - 1].numpy()).max() < 1e-6
        same(data[name], reference(loaded, cmp, "decoder", 1, 1, T - 1, 0, Toggles(), mask))
    assert data["baseline"]["x"] != data["toggled"]["x"]  # L0 H0 off changes what layer 1 reads
    summary = updates[ev.parts.summary]
    if source == "tiny-llama":
        assert data["baseline"]["kv_head"] == 0 and data["baseline"]["n_kv_heads"] == 1
        assert "reads key/value head 0" in summary and data["baseline"]["q_unrotated"] is not None
    else:
        assert "key/value head" not in summary and data["baseline"]["q_unrotated"] is None


def test_causal_mask_off_side_by_side(ev):
    f = form(ev, "tiny-gpt2", LM1, "", causal_mask=False, layer=0, head=3, query=2)
    updates, data = numbers(ev, f)
    base, tog = data["baseline"], data["toggled"]
    assert base["blocked_by"][3:] == ["causal"] * (len(base["weights"]) - 3) and set(tog["blocked_by"]) == {""}
    assert sum(base["weights"][3:]) == 0 and sum(tog["weights"][3:]) > 0
    assert data["changes"] == ["causal mask off"] and "causal mask off" in updates[ev.parts.summary]
    assert list(updates[ev.parts.table].columns)[-4:] == ["blocked (toggled)", "score (toggled)",
                                                         "weight (toggled)", "|v W_O|"]


def test_a_second_query_of_the_block_runs_no_model(ev, monkeypatch):
    f = form(ev, "date-translator", DATE1, "", query=2, lines_heads=[0, 3])
    first = ev.shown_tab(f, None)
    state = first[ev.parts.state]
    assert isinstance(state, HeadState) and first[ev.parts.lines] is not gr.skip()
    calls = []
    real = ev.compute.call
    monkeypatch.setattr(ev.compute, "call", lambda *a: calls.append(a) or real(*a))
    again = ev.shown_tab(replaced(f, query=5, head=3), state)
    assert calls == [] and "query 5" in again[ev.parts.summary] and "L1 H3" in again[ev.parts.summary]
    assert again[ev.parts.lines] == gr.skip()  # the same heads as lines: not drawn again
    values = ev.shown_tab(replaced(f, query=5, measure="values"), state)
    assert calls == [] and "|value written|" in values[ev.parts.lines].plot
    moved = ev.shown_tab(replaced(f, layer=0), state)
    assert len(calls) == 1 and moved[ev.parts.lines] != gr.skip()


def test_a_click_on_the_heatmap_opens_the_tab_on_that_query(ev):
    shown = Shown()
    f = form(ev, "date-translator", DATE1, "")
    out = ev.clicked(f, "decoder|1|0|4|1700000000", None, shown)
    page = ev.page
    assert out[ev.parts.query] == 4 and out[page.visible_tab] == "head"
    assert out[page.tab_strip] == gr.update(selected="head") and shown.tab == "head"
    assert "query 4" in out[ev.parts.summary]
    assert ev.clicked(f, "not a click", None, shown) == {ev.status: gr.skip()}


@pytest.mark.parametrize("over, message", [
    (dict(query=40), "query position 40 is outside the 12 query tokens of sentence 1"),
    (dict(query=-13), "query position -13 is outside"),
    (dict(head=9), "head 9 is outside the 4 heads"),
    (dict(layer=5), "layer 5 is outside the 2 decoder layers"),
    (dict(kind="self"), "kind 'self' is not an attention of this model"),
    (dict(sentence=2), "sentence 2 is not one of the 1 sentences"),
    (dict(lines_heads=[0, 7]), "head 7 is not a head of this layer"),
    (dict(measure="size"), "unknown measure 'size'"),
])
def test_bad_input_is_a_message_naming_it(ev, over, message):
    out = ev.api(form(ev, "date-translator", DATE1, "", **over))
    assert out[ev.status].startswith("⚠️") and message in out[ev.status].replace("\\", ""), out[ev.status]


def test_a_custom_mask_blocks_its_key_and_says_so(ev):
    """"block token" on the first stack's self-attention (the encoder here): the toggled run's key 2 is blocked, by
    "custom", its weight 0; the baseline sees it."""
    f = form(ev, "date-translator", DATE1, "", kind="encoder", layer=0, head=1, query=5, custom_mask="block token",
             blocked_position=2)
    _, data = numbers(ev, f)
    assert data["changes"] == ["custom mask"]
    assert data["baseline"]["blocked_by"][2] == "" and data["toggled"]["blocked_by"][2] == "custom"
    assert data["toggled"]["weights"][2] == 0 and data["toggled"]["masked_scores"][2] is None


def page_run(ev, f):
    """The page's Run (/analyze, as a click makes it) of the head form's sentences, toggles and view: its Shown."""
    from explorer.app.run.request import RunRequest
    from explorer.app.run.view import View
    from explorer.app.serving.session import get_model

    block, v = f.block(get_model(f.session, ev.ctx).config.attention_kinds()), f.view
    view = View(v.kind, v.layer, v.head, v.sentence, -1, f.measure)
    shown = Shown()
    request = RunRequest.of(f.session, v.sentence1, v.sentence2, block.toggles, view, f.continue_tokens)
    for _ in ev.app.run(request, "attention", shown):
        pass
    return shown


@pytest.mark.parametrize("source, texts, over", [
    ("date-translator", (DATE1, DATE2), dict(kind="cross", layer=1, head=2, sentence=2, causal_mask=False, query=3)),
    ("date-translator", (DATE1, ""), dict(kind="encoder", layer=0, head=1, query=5, custom_mask="block token",
                                          blocked_position=2)),
    ("tiny-gpt2", (LM1, LM2), dict(layer=1, head=1, query=-1)),
    ("tiny-llama", (LM1, LM2), dict(layer=1, head=1, query=2)),
])
def test_the_first_open_after_a_run_reads_the_block_the_run_captured(ev, monkeypatch, source, texts, over):
    """The page's Run records the view's block: the tab opened after it runs no model, and shows the numbers the tab
    reads on its own (within 1e-5: the Run computed both sentences as one batch); another block is read anew."""
    f = form(ev, source, *texts, {"decoder": ["L0 H0"]}, **over)
    shown = page_run(ev, f)
    calls = []
    real = ev.compute.call
    monkeypatch.setattr(ev.compute, "call", lambda *a: calls.append(a) or real(*a))
    updates, data = ev.draw(f, None, shown=shown)
    assert calls == [] and not str(updates[ev.status]).startswith("⚠️"), updates[ev.status]
    _, read = numbers(ev, f)  # the API reads the block itself
    assert len(calls) == 1 and data["changes"] == read["changes"] and data["changes"]
    assert data["query_labels"] == read["query_labels"] and data["key_labels"] == read["key_labels"]
    for name in ("baseline", "toggled"):
        same(data[name], read[name])
    ev.draw(replaced(f, layer=1 - f.view.layer), None, shown=shown)  # not the Run's block
    assert len(calls) == 2

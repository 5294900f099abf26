"""The Features tab (explorer.app.tabs.features) through its handlers with typed forms, on shipped date models and a
tiny GPT-2 with random SAEs saved in an allowed folder: the reading's numbers are explorer.interpret.sae's, a latent's
dashboard is latent_dashboards' on the model's example set, nothing switched is the baseline to the bit, a latent
switched changes the output as switch_outputs says (a language model) and as generation with the splice hook does (a
sequence model), steering with a coefficient of 0 is the baseline and otherwise contrast_steering's; shipped SAEs are
found for their model; bad input is one message on the status line; the link carries the tab's keys."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle

import gradio as gr
import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from explorer.app.link.state import parse_link
from explorer.app.run.inputs import codec_for
from explorer.app.run.readings import read_texts
from explorer.app.serving.errors import AppError
from explorer.app.serving.registry import ModelRegistry
from explorer.app.serving.session import AppContext, Session
from explorer.app.tabs import TABS
from explorer.app.tabs.features.dashboards import example_set
from explorer.app.tabs.features.forms import FeatureForm, SteerForm, SwitchForm
from explorer.app.tabs.features.result import (FeatureRequest, SteerRequest, SwitchRequest, features, steer,
                                               switch_latents)
from explorer.app.tabs.features.sae_store import SAESource, saes_for
from explorer.app.tabs.features.text import output_markdown, output_table
from explorer.interpret.sae import (capture_site, contrast_steering, features_view, latent_dashboards, latent_examples,
                                    random_sae, read_latents, sae_hook, save_sae, sources, switch_outputs)
from explorer.outputs.generate import generate
from tests.app.tiny_models import tiny_gpt2

DATE = "21/11/2026"
TEXT = "The cat sat on the mat"
MAX_TOKENS = 1024


def sharpened(sae, latent: int, scale: float = 30.0):
    """The SAE with one latent's decoder row scaled up: switching it off (where it fires) must change the output."""
    W_dec = sae.W_dec.clone()
    W_dec[latent] *= scale
    return dataclasses.replace(sae, W_dec=W_dec)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """An allowed folder: a tiny GPT-2 and random SAEs for it, date-gpt and date-translator."""
    import explorer

    root = tmp_path_factory.mktemp("features")
    tiny_gpt2(root / "tiny-gpt2")
    widths = {"tiny-gpt2": 48, "date-gpt": 64, "date-translator": 64}
    for name, hook in (("tiny-gpt2", "blocks.1.hook_resid_pre"), ("date-gpt", "blocks.2.hook_resid_pre"),
                       ("date-translator", "decoder.1.hook_resid_pre"),
                       ("date-translator", "encoder.1.hook_resid_post")):
        save_sae(random_sae(widths[name], 128, hook, seed=2), root / f"sae-{name}-{hook.split('.')[0]}",
                 model_name=name)
    save_sae(random_sae(32, 64, "blocks.0.hook_resid_pre", seed=0), root / "sae-narrow", model_name="date-gpt")
    assert explorer.load(root / "tiny-gpt2", "cpu").config.d_model == 48
    return root


@pytest.fixture(scope="module")
def page(root):
    """The page on date-gpt, every event wired, with `root` allowed: (PageEvents, the Features tab's events)."""
    from explorer.app.demo import starting_point
    from explorer.app.events import PageEvents
    from explorer.app.page.layout import layout

    ctx = AppContext(ModelRegistry(), allowed_dirs=(str(root),))
    page = layout(starting_point(ctx, "date-gpt", "cpu"), Session("date-gpt", "cpu"), TABS)
    with page.demo:
        ev = PageEvents(page, ctx)
        ev.wire()
    return ev, ev.tab_events["features"]


def session_of(page, name: str) -> tuple[Session, object]:
    from explorer.app.serving.session import load_session

    return load_session(name, "cpu", page[0].ctx)


def source(page, name: str) -> SAESource:
    return SAESource.of(name, page[0].ctx.allowed_dirs)


def status(out: dict, page) -> str:
    return out[page[1].status]


# ----------------------------------------------------------------------------------------------- the reading
def test_the_reading_is_explorer_interpret_saes(page):
    session, loaded = session_of(page, "date-gpt")
    src = source(page, "sae-date-gpt-blocks")
    r = features(loaded, FeatureRequest(session.key, "date-gpt", DATE, src), MAX_TOKENS)
    sae = random_sae(64, 128, "blocks.2.hook_resid_pre", seed=2)
    ids, _ = read_texts(loaded, DATE, None, MAX_TOKENS)[0].tensors()
    view = features_view(loaded.model, ids, sae, k=8, columns=24)
    reading = read_latents(loaded.model, ids, sae, k=8)
    assert r.labels == read_texts(loaded, DATE, None, MAX_TOKENS)[0].src_labels  # prompt and its own answer
    assert r.columns.tolist() == view.columns.tolist() and r.latent == view.latent == int(reading.top_latents[-1, 0])
    np.testing.assert_allclose(r.column_values, view.column_values.numpy(), rtol=0, atol=1e-6)
    np.testing.assert_allclose(r.activations, view.activations.numpy(), rtol=0, atol=1e-6)
    assert r.l0.tolist() == reading.l0.tolist()
    assert r.explained_variance == pytest.approx(reading.explained_variance, abs=1e-9)
    np.testing.assert_allclose(r.error_norm, reading.error_norm.numpy(), rtol=0, atol=1e-5)
    promoted = codec_for(loaded).labels(view.tokens.promoted_ids.tolist())
    assert [p for p, _ in r.promoted] == promoted
    np.testing.assert_allclose([v for _, v in r.promoted], view.tokens.promoted_logits.numpy(), atol=1e-6)
    pickle.loads(pickle.dumps(r))  # it comes back from a GPU worker


def test_a_latents_dashboard_is_latent_dashboards_on_the_models_example_set(page):
    session, loaded = session_of(page, "date-gpt")
    src = source(page, "sae-date-gpt-blocks")
    first = features(loaded, FeatureRequest(session.key, "date-gpt", DATE, src), MAX_TOKENS)
    latent = int(first.columns[1])
    r = features(loaded, FeatureRequest(session.key, "date-gpt", DATE, src, latent=latent), MAX_TOKENS)
    assert r.latent == latent and r.card.latent == latent
    examples = example_set(loaded, MAX_TOKENS)
    assert len(examples.texts) == 2000 and examples.tgts is None
    texts = [torch.tensor(t) for t in examples.texts]
    sae = random_sae(64, 128, "blocks.2.hook_resid_pre", seed=2)
    dash = latent_dashboards(loaded.model, texts, sae, latents=[latent], k=10, bins=32)
    assert r.card.tokens == dash.tokens == sum(map(len, texts))
    assert r.card.density == pytest.approx(float(dash.density[0]), abs=1e-7)
    assert r.card.counts.tolist() == dash.hist_counts[0].tolist()
    want = latent_examples(loaded.model, texts, sae, dash, latent, window=8)
    assert [e.value for e in r.card.examples] == pytest.approx([w.value for w in want], abs=1e-5)
    for got in r.card.examples:  # (equal values may come in another order: compare each with its own text)
        x = capture_site(loaded.model, texts[got.text], "decoder.2.resid_pre")[0]
        along = sae.encode_latents(x, torch.tensor([latent]))[:, 0]
        start = got.position - got.at
        assert got.labels == codec_for(loaded).labels(examples.texts[got.text][start:start + len(got.labels)])
        np.testing.assert_allclose(got.activations, along[start:start + len(got.labels)].numpy(), atol=1e-5)
        assert got.activations[got.at] == pytest.approx(got.value, abs=1e-5)


def test_an_encoder_sae_of_the_translator_reads_the_source_and_has_no_tokens(page):
    session, loaded = session_of(page, "date-translator")
    r = features(loaded, FeatureRequest(session.key, "date-translator", DATE,
                                        source(page, "sae-date-translator-encoder")), MAX_TOKENS)
    assert r.labels == read_texts(loaded, DATE, None, MAX_TOKENS)[0].src_labels and r.promoted is None
    assert any("cross-attention" in n for n in r.notes) and r.card.tokens > 0
    decoder = features(loaded, FeatureRequest(session.key, "date-translator", DATE,
                                              source(page, "sae-date-translator-decoder")), MAX_TOKENS)
    assert decoder.labels == read_texts(loaded, DATE, None, MAX_TOKENS)[0].tgt_labels and decoder.promoted


# ----------------------------------------------------------------------------------------------- switches
def test_nothing_switched_is_the_baseline_to_the_bit(page):
    for name, sae_name, text in (("date-gpt", "sae-date-gpt-blocks", DATE),
                                 ("tiny-gpt2", "sae-tiny-gpt2-blocks", TEXT)):
        session, loaded = session_of(page, name)
        out = switch_latents(loaded, SwitchRequest(name, text, source(page, sae_name), "", 5), MAX_TOKENS)
        assert out.nothing_changed and not out.differs
        assert out.baseline == out.changed  # ids, labels and every probability equal, exactly
        assert out.next_baseline == out.next_changed
        assert "Nothing is switched" in output_markdown(out)


def test_a_latent_off_changes_a_language_models_output_as_switch_outputs_says(page):
    session, loaded = session_of(page, "tiny-gpt2")
    src = source(page, "sae-tiny-gpt2-blocks")
    latent = features(loaded, FeatureRequest(session.key, "tiny-gpt2", TEXT, src), MAX_TOKENS).latent
    switches = f"{latent}:off,3:clamp=40,7:add=-5"
    out = switch_latents(loaded, SwitchRequest("tiny-gpt2", TEXT, src, switches, 6), MAX_TOKENS)
    sae = random_sae(48, 128, "blocks.1.hook_resid_pre", seed=2)
    ref = switch_outputs(loaded.model, loaded.tokenizer, TEXT, sae, switches, max_new_tokens=6)
    assert out.next_baseline.ids == ref.next.baseline.ids and out.next_changed.ids == ref.next.toggled.ids
    np.testing.assert_allclose(out.next_changed.probs, ref.next.toggled.probs, atol=1e-6)
    assert out.favourite_changed == pytest.approx(ref.next.toggled_prob, abs=1e-6)
    assert out.baseline.ids == ref.baseline.ids and out.changed.ids == ref.steered.ids
    assert out.differs == (ref.next.baseline.ids[0] != ref.next.toggled.ids[0] or ref.baseline.ids != ref.steered.ids)
    headers, rows = output_table(out)
    assert headers[1] == "next token (baseline)" and headers[3] == "next token (switched)" and len(rows) == 10


def test_a_latent_off_changes_a_sequence_models_answer_as_the_spliced_generation(page, root):
    session, loaded = session_of(page, "date-gpt")
    sae = random_sae(64, 128, "blocks.2.hook_resid_pre", seed=2)
    ids, _ = read_texts(loaded, DATE, None, MAX_TOKENS)[0].tensors()
    latent = int(read_latents(loaded.model, ids, sae).top_latents[-1, 0])
    save_sae(sharpened(sae, latent), root / "sae-sharp", model_name="date-gpt")
    out = switch_latents(loaded, SwitchRequest("date-gpt", DATE, source(page, "sae-sharp"), f"{latent}:off"),
                         MAX_TOKENS)
    prompt = torch.tensor([loaded.tokenizer.encode(f"[BOS]{DATE}[SEP]").ids])
    hook = sae_hook(loaded.model, sharpened(sae, latent), f"{latent}:off")
    want = generate(loaded.model, prompt, eos_id=loaded.task["eos_id"], max_new_tokens=12, resid_hook=hook)
    eos = loaded.task["eos_id"]
    ids = want.tokens[0].tolist()
    assert out.changed.ids == ids[:ids.index(eos) + 1] if eos in ids else ids
    assert out.baseline.text == "2026-11-21" and out.differs and out.next_baseline is None
    assert "The switches changed the output" in output_markdown(out)
    assert [row[0] for row in output_table(out)[1]] == ["baseline", "switched"]


# ----------------------------------------------------------------------------------------------- steering
def test_steering_with_a_coefficient_of_0_is_the_baseline_and_otherwise_contrast_steerings(page):
    session, loaded = session_of(page, "tiny-gpt2")
    zero = steer(loaded, SteerRequest(TEXT, "", "A dog ran", 1, 0.0, 5), MAX_TOKENS)
    assert zero.nothing_changed and zero.baseline == zero.changed and zero.next_baseline == zero.next_changed
    out = steer(loaded, SteerRequest(TEXT, "Love", "Hate", 1, 8.0, 5), MAX_TOKENS)
    ref = contrast_steering(loaded.model, loaded.tokenizer, TEXT, "Love", "Hate", layer=1, coefficient=8.0,
                            max_new_tokens=5)
    assert out.next_changed.ids == ref.outputs.next.toggled.ids and out.changed.ids == ref.outputs.steered.ids
    np.testing.assert_allclose(out.next_changed.probs, ref.outputs.next.toggled.probs, atol=1e-6)
    assert "decoder.1.resid_pre" in out.what
    # an encoder-decoder is steered at its encoder's layer (the texts are sources)
    session, translator = session_of(page, "date-translator")
    moved = steer(translator, SteerRequest(DATE, "", "3 May 1999", 1, 4.0), MAX_TOKENS)
    assert "encoder.1.resid_pre" in moved.what and moved.baseline.text == "2026-11-21"


# ----------------------------------------------------------------------------------------------- the handlers
def test_the_handlers_answer_with_typed_forms_and_the_figures(page):
    ev, fe = page
    session, _ = session_of(page, "date-gpt")
    p = fe.parts
    out = fe.read(FeatureForm(session, DATE, "sae-date-gpt-blocks"))
    assert status(out, page) == "" and "explains" in out[p.summary] and out[p.latent] is not None
    heat = json.loads(out[p.heatmap].plot)
    assert heat["data"][0]["type"] == "heatmap" and heat["data"][0]["x"][0].startswith("latent ")
    assert f"latent {out[p.latent]}" in heat["data"][0]["x"]  # the dashboard's latent is a column
    assert "Latent" in out[p.latent_md] and "<span" in out[p.examples] and len(out[p.tokens]) == 10
    clicked = fe.clicked("5|1234", session, DATE, "sae-date-gpt-blocks")
    assert clicked[p.latent] == 5 and "### Latent 5" in clicked[p.latent_md]
    added = fe.add_switch("3:add=2", 5, "clamp", 2.5)
    assert added[p.switches] == "3:add=2,5:clamp=2.5"
    assert fe.add_switch(added[p.switches], 5, "off", 9)[p.switches] == "3:add=2,5:off"
    switched = fe.switch(SwitchForm(session, DATE, "sae-date-gpt-blocks", "5:off"))
    assert status(switched, page) == "" and list(switched[p.out_df].columns)[0] == "run"
    steered = fe.steer(SteerForm(session, DATE, "3 May 1999", "", 2, 0))
    assert "Nothing is steered" in steered[p.out_md]


@pytest.mark.parametrize("form, message", [
    (FeatureForm(None, DATE, "no-such-sae"), "Unknown SAE"),
    (FeatureForm(None, DATE, "sae-narrow"), "32 wide, but this model's is 64"),
    (FeatureForm(None, DATE, "sae-date-gpt-blocks", 128), "Latent 128 is not a latent of this SAE: its latents are "
                                                           "0..127"),
    (FeatureForm(None, DATE, "sae-date-gpt-blocks", 2.5), "The latent must be a whole number"),
    (FeatureForm(None, DATE, "/etc"), "Unknown SAE"),
    (SwitchForm(None, DATE, "sae-date-gpt-blocks", "12:of"), "Latent switches: latent switch '12:of' is not"),
    (SwitchForm(None, DATE, "sae-date-gpt-blocks", "500:off"), "latent 500 is not a latent of this SAE"),
    (SteerForm(None, DATE, ""), "Type a contrast text"),
    (SteerForm(None, DATE, "1999", "", 9), "Layer 9 is not a layer of this model's decoder: choose 0..3"),
    (SteerForm(None, DATE, "1999", "", 1, "big"), "The coefficient must be a number"),
    (SteerForm(None, DATE, "1999", "", 1, 1e9), "between −10000 and 10000"),
])
def test_bad_input_is_one_message_on_the_status_line(page, form, message):
    _, fe = page
    session, _ = session_of(page, "date-gpt")
    form = type(form)(session, *[getattr(form, f) for f in form.__dataclass_fields__][1:])
    handler = {FeatureForm: fe.read, SwitchForm: fe.switch, SteerForm: fe.steer}[type(form)]
    line = status(handler(form), page)
    assert line.startswith("⚠️") and message in line.replace("\\", "") and "\n" not in line, line


# ----------------------------------------------------------------------------------------------- SAEs and links
def test_shipped_saes_are_found_for_their_model(page, tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "SAES_DIR", tmp_path)
    save_sae(random_sae(64, 32, "blocks.1.hook_resid_pre", seed=0), tmp_path / "date-gpt-res1", model_name="date-gpt")
    save_sae(random_sae(64, 32, "encoder.0.hook_resid_pre", seed=0), tmp_path / "translator-enc",
             model_name="date-translator")
    save_sae(random_sae(768, 32, "blocks.0.hook_resid_pre", seed=0), tmp_path / "gpt2-res0",
             metadata={"model_name": "gpt2-small"})
    assert saes_for("date-gpt") == ["date-gpt-res1"] and saes_for("date-translator") == ["translator-enc"]
    assert saes_for("openai-community/gpt2") == ["gpt2-res0"] and saes_for("") == []
    _, fe = page
    session, _ = session_of(page, "date-gpt")
    out = fe.read(FeatureForm(session, DATE, ""))  # blank: the model's first shipped SAE
    assert "date-gpt-res1" in out[fe.parts.summary] and "blocks.1.hook_resid_pre" in out[fe.parts.summary]
    assert fe.fit_to_model(session, "translator-enc")[fe.parts.sae]["value"] == "date-gpt-res1"
    assert fe.fit_to_model(session, "sae-date-gpt-blocks")[fe.parts.sae]["value"] == "sae-date-gpt-blocks"
    none = fe.read(FeatureForm(session_of(page, "tiny-gpt2")[0], TEXT, ""))
    assert none[fe.status] == "" and "No SAE is shipped" in none[fe.parts.summary]


def test_the_link_carries_the_tabs_keys_checked(page):
    state, notices = parse_link("tab=features&sae=sae-date-gpt-blocks&latent=12&switches=12:off,4:clamp=3.50"
                                "&contrast=1999&steer_layer=2&coefficient=-3", check_model=str, tabs=TABS)
    assert notices == [] and state.tab_values == {"sae": "sae-date-gpt-blocks", "latent": 12,
                                                  "switches": "4:clamp=3.5,12:off", "contrast": "1999",
                                                  "steer_layer": 2, "coefficient": -3.0}
    assert "switches=4:clamp%3D3.5,12:off" in state.to_query()  # "=" encoded (link.state.SAFE)
    _, notices = parse_link("switches=12:of&latent=-1&coefficient=nan", check_model=str, tabs=TABS)
    assert len(notices) == 3 and "switches '12:of' are not latent switches" in notices[0]
    ev, fe = page
    from explorer.app.tabs.features import TAB

    updates, notices = TAB.restore_link(fe.parts, ev, {"sae": "/etc", "latent": 3})
    assert notices == ["sae '/etc' is not a shipped SAE, an allowed folder nor a Hub repo's folder"]
    assert updates == {fe.parts.latent: 3}


def test_an_sae_name_must_pass_the_allow_list():
    with pytest.raises(AppError, match="Unknown SAE"):
        SAESource.of("../secrets", ())
    hub = SAESource.of("jbloom/GPT2-Small-SAEs-Reformatted/blocks.8.hook_resid_pre", ())
    assert hub.kind == "hub" and hub.where.endswith("blocks.8.hook_resid_pre")


def test_the_tabs_computations_run_in_a_forked_worker_as_on_zerogpu(page, root):
    """Through a double of ZeroGPU's spaces.GPU (each call forked, arguments and results pickled): the same answers
    as in-process, and the server itself never runs the model (it reads the SAE's size for the memory gate)."""
    from explorer.app.serving import compute
    from tests.app.test_compute import page as make_page, server_runs_no_model, values
    from tests.app.zerogpu import ForkedCalls

    forked = ForkedCalls()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compute, "GPU", forked)
        there = make_page(AppContext(ModelRegistry(), allowed_dirs=(str(root),)), "date-gpt")
    here = page[0]
    session = Session("date-gpt", "cpu")
    calls = {"features": lambda ev: ev.tab_events["features"].read(FeatureForm(session, DATE, "sae-date-gpt-blocks")),
             "switch_latents": lambda ev: ev.tab_events["features"].switch(
                 SwitchForm(session, DATE, "sae-date-gpt-blocks", "3:off,5:clamp=20")),
             "steer": lambda ev: ev.tab_events["features"].steer(SteerForm(session, DATE, "3 May 1999", "", 2, 3.0))}
    expected = {name: values(here, call(here)) for name, call in calls.items()}
    with server_runs_no_model():
        for name, call in calls.items():
            assert values(there, call(there)) == expected[name], name
    assert len(forked.pids) == len(calls) and os.getpid() not in forked.pids


def test_the_latents_switched_are_said_beside_them_until_cleared():
    from explorer.app.tabs.features.switch_state import NONE, switches_line

    assert switches_line("") == switches_line(None) == NONE and "none" in NONE
    line = switches_line("40:clamp=3.5,12:off,7:add=-2")
    assert "until cleared" in line and line.endswith("latents 7 added ×-2, 12 off, 40 clamped to 3.5.")
    assert switches_line("12:off").endswith("latent 12 off.")
    assert "⚠️" in switches_line("12:sideways") and "12" in switches_line("12:sideways")


def test_the_tab_reads_itself_when_opened_and_again_only_when_its_reading_changed(page, root):
    """auto_read (the tab opened, a Run while it is shown): the reading and the model's own output without the
    button; nothing again for the same model, sentence and SAE, nor while another tab is shown; a model without a
    shipped SAE: what to do, said."""
    from explorer.app.tabs.features.forms import NO_SAE

    ev, fe = page
    session, _ = session_of(page, "date-gpt")
    p, sae = fe.parts, "sae-date-gpt-blocks"
    out = fe.auto_read(session, DATE, sae, "", 8, "features", "")
    assert status(out, page) == "" and "explains" in out[p.summary] and out[p.latent] is not None
    assert "Nothing is switched" in out[p.out_md] and out[p.read_key]
    assert fe.auto_read(session, DATE, sae, "", 8, "features", out[p.read_key]) == {fe.status: gr.skip()}
    assert fe.auto_read(session, DATE, sae, "", 8, "attention", "") == {fe.status: gr.skip()}
    again = fe.auto_read(session, "3/5/2024", sae, "", 8, "features", out[p.read_key])
    assert again[p.read_key] != out[p.read_key] and "explains" in again[p.summary]
    tiny, _ = session_of(page, str(root / "tiny-gpt2"))
    none = fe.auto_read(tiny, TEXT, "", "", 8, "features", "")
    assert none[p.summary] == NO_SAE and p.out_md not in none

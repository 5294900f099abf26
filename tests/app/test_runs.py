"""One model run -> a typed result, and baseline vs toggled (explorer.app.run.model_run, explorer.app.run.pair)."""

from __future__ import annotations

import torch

from explorer.app.run.pair import compare
from explorer.app.run.inputs import codec_for, encode_inputs
from explorer.app.run.model_run import run_model
from explorer.app.run.sentence_outputs import ClassProbabilities, Embedding, GeneratedText
from explorer.app.run.toggles import Toggles


def test_sequence_run_has_every_kind_with_masks_and_labels(app):
    _, loaded = app.build()
    codec = codec_for(loaded)
    inputs = encode_inputs(loaded, codec, app.DATE1, app.DATE2, 128)
    run = run_model(loaded, codec, inputs, Toggles(), None)
    assert set(run.attentions) == {"encoder", "decoder", "cross"} == set(run.masks)
    B, S = len(inputs.rows), max(map(len, inputs.rows))
    T = 1 + max(len(r) for r in run.decoder_rows)  # [BOS] + the longest answer
    assert run.attentions["cross"][0].shape == (B, 4, T, S) and run.masks["cross"].shape == (B, T, S)
    assert run.masks["decoder"][0].tril().sum() >= run.masks["decoder"][0].sum()  # causal
    assert not run.masks["cross"][1, :, len(inputs.rows[1]):].any()  # sentence 2's padding is masked
    assert all(isinstance(o, GeneratedText) for o in run.outputs) and len(run.generations) == B
    assert len(run.queries["cross"][0]) == T and len(run.keys["cross"][0]) == S


def test_masks_are_what_the_model_applied(app):
    """Zero weight exactly where the run's mask says blocked, whatever the settings."""
    _, loaded = app.build("decoder", positional="learned")
    codec = codec_for(loaded)
    inputs = encode_inputs(loaded, codec, app.DATE1, None, 128)
    for toggles in (Toggles(), Toggles(custom="no self"), Toggles(causal=False, custom="local window", window=1)):
        run = run_model(loaded, codec, inputs, toggles, None)
        mask = run.masks["decoder"][:, None]  # (B, 1, T, T)
        for weights in run.attentions["decoder"]:
            assert (weights.masked_select(~mask.expand_as(weights)) == 0).all()


def test_toggled_run_reads_the_baselines_answer(app):
    """With a toggle, the decoder attends over the baseline's answer (teacher), so the maps can be subtracted."""
    _, loaded = app.build()
    heads = {**app.all_heads(loaded), "cross": []}
    cmp = compare(loaded, app.DATE1, None, app.toggles(heads), 128)
    assert not cmp.no_toggle and cmp.toggled.decoder_rows == cmp.baseline.decoder_rows
    assert cmp.toggled.attentions["cross"][0].shape == cmp.baseline.attentions["cross"][0].shape
    assert cmp.head_mask["cross"].sum() == 0


def test_no_toggle_runs_once(app, monkeypatch):
    import explorer.app.run.pair as compare_module

    _, loaded = app.build("encoder")
    calls = []
    real = compare_module.run_model
    monkeypatch.setattr(compare_module, "run_model", lambda *a, **k: calls.append(1) or real(*a, **k))
    cmp = compare(loaded, app.DATE1, app.DATE2, Toggles(), 128)
    assert cmp.no_toggle and cmp.toggled is cmp.baseline and len(calls) == 1
    compare(loaded, app.DATE1, app.DATE2, Toggles(padding=False), 128)
    assert len(calls) == 3


def test_encoder_outputs(app):
    _, enc = app.build("encoder")
    codec = codec_for(enc)
    run = run_model(enc, codec, encode_inputs(enc, codec, app.DATE1, app.DATE2, 128), Toggles(), None)
    assert all(isinstance(o, Embedding) and o.vector.shape == (32,) for o in run.outputs)
    assert run.generations == [] and run.decoder_rows == []
    _, classifier = app.build("encoder", preset="seed001-classifier", d_model=32, n_heads=4)
    run = run_model(classifier, codec, encode_inputs(classifier, codec, app.DATE1, None, 128), Toggles(), None)
    assert isinstance(run.outputs[0], ClassProbabilities) and len(run.outputs[0].probs) == 5
    assert abs(sum(run.outputs[0].probs.values()) - 1) < 1e-5


def test_runs_do_not_touch_the_shared_model(app):
    _, loaded = app.build()
    before = {k: v.clone() for k, v in loaded.model.state_dict().items()}
    heads = {**app.all_heads(loaded), "encoder": ["L0 H0"]}
    compare(loaded, app.DATE1, app.DATE2, app.toggles(heads, causal=False), 128)
    after = loaded.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before) and not loaded.model.training

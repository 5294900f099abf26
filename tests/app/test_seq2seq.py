"""Encoder-decoder Hub models in the app (tiny random Marian and T5 saved in the Hugging Face layout): the output
is explorer.outputs.seq2seq's greedy translation (Marian's padding token never generated), baseline vs toggled side by
side; a cross-attention head switched off changes it; the generation tab has cross- and decoder self-attention per
generated token; the page's length control caps the answer; T5 offers its task prefixes; the positional tab names
each model's scheme (T5's relative bias per stack, Marian's split sinusoid, Llama's rotary)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

from explorer.app.page.model_panel import model_info
from explorer.app.run.pair import compare
from explorer.app.run.result import Analysis
from explorer.app.run.view import View
from explorer.app.serving.registry import ModelRegistry
from explorer.app.serving.session import AppContext, load_session
from explorer.app.tabs import RUN_FIGURES
from explorer.app.tabs.positions import positional_view
from explorer.outputs.seq2seq import compare_outputs, translate

from tests.app.tiny_models import MARIAN_HEAD, MARIAN_TEXT, tiny_llama, tiny_marian, tiny_t5


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """An app context allowed to load the tiny Marian, T5 and Llama folders; name -> loaded model."""
    root = tmp_path_factory.mktemp("hub")
    tiny_marian(root / "tiny-marian")
    tiny_t5(root / "tiny-t5")
    tiny_llama(root / "tiny-llama")
    ctx = AppContext(ModelRegistry(), allowed_dirs=(str(root),))
    return {name: load_session(name, "cpu", ctx)[1] for name in ("tiny-marian", "tiny-t5", "tiny-llama")}


def cross_off(app, loaded, *labels):
    heads = app.all_heads(loaded)
    return app.toggles({**heads, "cross": [h for h in heads["cross"] if h not in labels]})


def test_output_is_the_greedy_translation(models, app):
    marian = models["tiny-marian"]
    cmp = compare(marian, MARIAN_TEXT, "Where is the station?", app.toggles(), 128, new_tokens=12)
    pad = marian.config.pad_id
    for b, text in enumerate((MARIAN_TEXT, "Where is the station?")):
        ours = translate(marian, text, 12)
        out = cmp.baseline.outputs[b]
        assert out.ids == ours.ids and out.text == ours.text and len(out.ids) <= 12
        np.testing.assert_allclose(out.probs, ours.probs, atol=1e-5)
        assert pad not in out.ids  # suppress_ids: Marian never generates its padding token
    # The teacher-forced run reads the decoder start token (Marian's padding id) as a real token.
    assert bool(cmp.baseline.masks["decoder"][:, :, 0].all())


def test_a_cross_attention_head_off_changes_the_translation(models, app):
    marian = models["tiny-marian"]
    toggles = cross_off(app, marian, MARIAN_HEAD)
    a = Analysis(compare(marian, MARIAN_TEXT, None, toggles, 128, new_tokens=40), View("cross", 1, 0, 1), RUN_FIGURES)
    layer, head = (int(x[1:]) for x in MARIAN_HEAD.split())
    mask = torch.ones(2, 4)
    mask[layer, head] = 0
    change = compare_outputs(marian, MARIAN_TEXT, {"cross": mask}, 40)
    assert change.first_difference is not None  # explorer.outputs.seq2seq says the head matters ...
    base, tog = a.output.rows[0], a.output.rows[1]  # ... and the app shows the same two outputs side by side
    assert (base[1], tog[1]) == ("baseline", "toggled") and a.output.changed
    assert base[2] == change.baseline.text and tog[2] == change.toggled.text
    assert "with the toggles:" in a.output.summary and f"token {change.first_difference}" in a.output.summary


def test_generation_tab_shows_both_attentions_per_generated_token(models, app):
    marian = models["tiny-marian"]
    cmp = compare(marian, MARIAN_TEXT, None, cross_off(app, marian, "L0 H1"), 128, new_tokens=6)
    figures = Analysis(cmp, View("cross", 1, 2, 1), RUN_FIGURES).figures("generation")
    out, n_source = cmp.toggled.outputs[0], len(cmp.inputs.rows[0])
    cross, own = figures["generation_cross"].data[0], figures["generation_self"].data[0]
    rows = cmp.toggled.generations[0][0].attention_matrix("cross", 1, 0)[2]  # (N, S) layer 1, head 2
    z = np.array(cross.z, dtype=float)
    assert z.shape == (len(out.ids), n_source) and np.isfinite(z).all()
    assert np.abs(z - rows[: len(out.ids)].numpy()).max() < 0.01  # drawn at screen resolution (one byte)
    assert np.array(own.z, dtype=float).shape[0] == len(out.ids)
    assert "Cross-attention per generated token (layer 1, head 2)" in figures["generation_cross"].layout.title.text


def test_length_control_caps_the_answer(models, app):
    marian = models["tiny-marian"]
    assert model_info(marian).answer_length == 40  # the page's control starts at the task's limit
    short = compare(marian, MARIAN_TEXT, None, app.toggles(), 128, new_tokens=3)
    assert len(short.baseline.outputs[0].ids) <= 3
    assert len(compare(marian, MARIAN_TEXT, None, app.toggles(), 128, new_tokens=0).baseline.outputs[0].ids) == 1


def test_date_models_keep_their_own_answer_length(app):
    _, loaded = app.build()
    assert model_info(loaded).answer_length is None
    cmp = compare(loaded, app.DATE1, None, app.toggles(), 128, new_tokens=2)
    assert cmp.baseline.generations[0][0].tokens.shape[1] > 2  # not cut to the language-model control


def test_t5_offers_its_task_prefixes(models):
    info = model_info(models["tiny-t5"])
    assert info.examples[0].startswith("translate English to German: ")
    assert any(e.startswith("summarize: ") for e in info.examples)
    assert info.kinds == {"encoder": (2, 8), "decoder": (2, 8), "cross": (2, 8)}


def test_positional_tab_shows_each_models_scheme(models, app):
    t5 = positional_view(models["tiny-t5"], 64, 64, 10000)
    assert "relative position bias" in t5.scheme
    titles = [f.layout.title.text for f in t5.model]
    assert len(t5.model) == 2 and "encoder (bidirectional" in titles[0] and "decoder (causal" in titles[1]
    assert np.array(t5.model[0].data[0].z, dtype=float).shape[0] == 8  # one row per head
    marian = positional_view(models["tiny-marian"], 64, 64, 10000)
    assert "sinusoidal positions" in marian.scheme and "split layout" in marian.model[1].layout.title.text
    llama = positional_view(models["tiny-llama"], 64, 64, 10000)
    assert "rotary positions" in llama.scheme and "64 of 64 dimensions" in llama.scheme and " 100000," in llama.scheme
    assert len(llama.model) == 2 and "Rotary frequencies" in llama.model[0].layout.title.text

"""The positional, importance and model-panel views, and the shipped models through the app's views."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.app.page.model_panel import model_info
from explorer.app.serving.errors import AppError
from explorer.app.tabs.importance import importance_view
from explorer.app.tabs.positions import positional_view
from explorer.loading import shipped_names
from explorer.viz.common import message_text


def z(fig):
    return np.array(fig.data[0].z, dtype=float)


def test_model_info_and_examples(app):
    _, loaded = app.build()
    info = model_info(loaded)
    assert list(info.kinds) == ["encoder", "decoder", "cross"] and info.kinds["cross"] == (2, 4)
    assert "parameters" in info.markdown and "cpu" in info.markdown
    assert f"{loaded.model.num_parameters():,}" in info.markdown
    assert "encoder-decoder · 55,975 parameters" in info.headline
    assert info.examples, "date examples come with the date tokenizer"


def test_positional_limits():
    pv = positional_view(None, 16, 20, 100)
    assert z(pv.heat).shape == (20, 16) and z(pv.similarity).shape == (20, 20)
    assert "No model loaded" in message_text(pv.model[0]) and "No model" in pv.scheme
    with pytest.raises(AppError, match="d_model"):
        positional_view(None, 5000, 20, 10000)
    with pytest.raises(AppError, match="base"):
        positional_view(None, 16, 20, 1)


def test_positional_shows_the_models_own_table(app):
    _, loaded = app.build()  # sinusoidal, d_model 32
    pv = positional_view(loaded, 32, 30, 10000)
    assert "sinusoidal positions" in pv.scheme
    similarity, own = pv.model  # the encoder's table (the decoder's is the same formula)
    assert "Position table" in own.layout.title.text and "sinusoid" in own.layout.title.text
    np.testing.assert_allclose(z(own), z(pv.heat)[:30, :32], atol=1e-5)  # the model's buffer is the same formula
    _, gpt = app.build("decoder", positional="learned")
    pv = positional_view(gpt, 32, 40, 10000)
    assert "learned position table" in pv.scheme
    assert z(pv.model[1]).shape == (40, 32)  # the learned table, first 40 positions
    _, none = app.build("encoder", positional="none")
    pv = positional_view(none, 32, 30, 10000)
    assert "no positional encoding" in pv.scheme and "no positional encoding" in message_text(pv.model[0])


def test_importance(app):
    _, loaded = app.build()
    fig, md = importance_view(loaded, app.DATE1, app.DATE2, app.toggles(), "cross", 128)
    assert "log-probability" in md and "cross-attention" in fig.layout.title.text
    assert z(fig).shape == (2, 4)


@pytest.fixture(scope="module")
def translator(app):
    if "date-translator" not in shipped_names():
        pytest.skip("checkpoints/date-translator is not there")
    return app.load("date-translator")[1]


def test_trained_translator_head_toggles(app, translator):
    from explorer.app.run.pair import compare

    heads = app.all_heads(translator)
    base = app.analyze(translator, "samedi 21 novembre 2026", None, view=app.View("cross", 1, 0, 1))
    assert base.output.rows[0][2] == "2026-11-21"  # the trained model gets this right
    off = app.analyze(translator, "samedi 21 novembre 2026", None, app.toggles({**heads, "cross": []}),
                      app.View("cross", 1, 0, 1))
    assert off.output.changed and off.output.rows[1][2] != "2026-11-21"
    # Some single head matters for some input: stop at the first one-head-off run that changes an answer.
    def changes_answer(kind, label, text):
        one_off = app.toggles({**heads, kind: [h for h in heads[kind] if h != label]})
        cmp = compare(translator, text, None, one_off, 128)
        return cmp.baseline.outputs[0].ids != cmp.toggled.outputs[0].ids

    examples = model_info(translator).examples
    found = next(((k, label, text) for k in heads for label in heads[k] for text in examples
                  if changes_answer(k, label, text)), None)
    assert found is not None


def test_trained_gpt_needs_its_causal_mask(app):
    if "date-gpt" not in shipped_names():
        pytest.skip("checkpoints/date-gpt is not there")
    _, loaded = app.load("date-gpt")
    text = "samedi 21 novembre 2026"
    base = app.analyze(loaded, text, None, view=app.View("decoder", 1, 0, 1))
    assert base.output.rows[0][2] == "2026-11-21" and not base.output.changed
    peek = app.analyze(loaded, text, None, app.toggles(causal=False), app.View("decoder", 1, 0, 1))
    assert peek.output.changed  # trained with the look-ahead mask, it fails without it
    assert np.triu(np.nan_to_num(z(peek.figure("head"))), 1).sum() > 0

"""A tiny GPT-2-layout language model through the app: loaded from an allowed folder in the Hugging Face layout,
the next-token top 10 at a chosen position (baseline vs toggled), surprisal per token, continuation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from explorer.app.run.pair import compare
from explorer.app.run.result import Analysis
from explorer.app.run.sentence_outputs import NextTokens
from explorer.app.run.view import View
from explorer.app.serving.errors import AppError
from explorer.app.serving.registry import ModelRegistry
from explorer.app.serving.session import AppContext, load_session
from explorer.app.tabs import RUN_FIGURES
from explorer.viz.common import message_text
from tests.importers.harness import VOCAB, byte_level_tokenizer, make_case

TEXT = "The cat sat on the mat"


@pytest.fixture(scope="module")
def gpt(tmp_path_factory):
    """(session, loaded model, transformers model) for a tiny GPT-2 saved under an allowed folder."""
    root = tmp_path_factory.mktemp("models")
    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=48, n_head=6, n_layer=2, n_positions=64, bos_token_id=0,
                                     eos_token_id=0)
    case = make_case(transformers.GPT2LMHeadModel, config, byte_level_tokenizer(), root / "tiny-gpt2",
                     lambda hf, layer: hf.transformer.h[layer].attn.c_proj,
                     {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "add_bos_token": False})
    ctx = AppContext(ModelRegistry(), allowed_dirs=(str(root),))
    session, loaded = load_session("tiny-gpt2", "cpu", ctx)
    return session, loaded, case.hf


def test_next_tokens_equal_transformers(gpt, app):
    _, loaded, hf = gpt
    cmp = compare(loaded, TEXT, None, app.toggles(), 128, new_tokens=3)
    a = Analysis(cmp, View(position=2), RUN_FIGURES)
    out = cmp.baseline.outputs[0]
    assert isinstance(out, NextTokens)
    ids = torch.tensor([cmp.inputs.rows[0]])
    with torch.no_grad():
        probs = hf(ids).logits[0].float().softmax(-1)  # (T, V)
    top = probs[2].topk(10)
    assert out.top_ids[2].tolist() == top.indices.tolist()
    np.testing.assert_allclose(out.top_probs[2].numpy(), top.values.numpy(), atol=1e-5)
    actual = -probs[:-1].log().gather(-1, ids[0, 1:, None])[:, 0]  # surprisal of tokens 1.. in nats
    np.testing.assert_allclose(out.surprisal.numpy(), actual.numpy(), atol=1e-4)
    headers, rows = a.output.headers, a.output.rows
    assert headers == ["#", "rank", "next token (baseline)", "p baseline", "next token (toggled)", "p toggled"]
    assert len(rows) == 10
    assert rows[0][2] == loaded.tokenizer.labels([top.indices[0].item()])[0]
    words = cmp.inputs.labels[0]
    assert f"after “{words[2]}” (position 2)" in a.output.summary
    assert len(out.continuation.ids) == 3  # greedy continuation of the whole sentence


def test_its_output_tokens_are_the_candidates_and_the_continuation(gpt, app):
    """The chips above the tabs: the top 5 after the chosen position (probabilities as the table's), then the
    continuation, each token predicted where its target says (with the continuation so far appended)."""
    from explorer.app.run.readings import read_texts
    from explorer.app.run.output_chips import ClickTarget
    from explorer.app.tabs.contributions.why_token import extended

    _, loaded, hf = gpt
    cmp = compare(loaded, TEXT, None, app.toggles(), 128, new_tokens=3)
    a = Analysis(cmp, View(position=2), RUN_FIGURES)
    targets = [t for t in a.chips.targets if isinstance(t, ClickTarget)]
    candidates, continuation = targets[:5], targets[5:]
    assert [t.position for t in candidates] == [2] * 5
    assert [t.token for t in candidates] == cmp.baseline.outputs[0].top_ids[2, :5].tolist()
    assert [t.token for t in continuation] == cmp.baseline.outputs[0].continuation.ids
    reading = read_texts(loaded, TEXT, None, 128)[0]
    for t in continuation:
        longer = extended(loaded, reading, t.extend)
        with torch.no_grad():
            logits = hf(torch.tensor([longer.src])).logits[0]
        assert t.position == len(longer.src) - 1 and int(logits[t.position].argmax()) == t.token


def test_a_head_off_changes_the_favourites_probability(gpt, app):
    _, loaded, _ = gpt
    heads = {"decoder": [h for h in app.all_heads(loaded)["decoder"] if not h.startswith("L0")]}
    cmp = compare(loaded, TEXT, None, app.toggles(heads), 128, new_tokens=2)
    a = Analysis(cmp, View(), RUN_FIGURES)
    base, tog = cmp.baseline.outputs[0], cmp.toggled.outputs[0]
    last = len(cmp.inputs.rows[0]) - 1
    favourite, toggled_top = int(base.top_ids[last, 0]), tog.top_ids[last].tolist()
    assert tog.favourite_probs is not None and float(tog.favourite_probs[last]) != pytest.approx(
        float(base.top_probs[last, 0]), abs=1e-6)
    if favourite in toggled_top:  # the same probability as in the toggled run's own top-k list
        rank = toggled_top.index(favourite)
        assert float(tog.favourite_probs[last]) == pytest.approx(float(tog.top_probs[last, rank]), abs=1e-6)
    assert "with the toggles p =" in a.output.summary
    assert a.figure("surprisal").data[1].name == "with toggles" and len(a.figure("surprisal").data[0].x) == last


def test_two_sentences_without_a_pad_token(gpt, app):
    """GPT-2 has no pad token: the shorter sentence is padded and masked by its length."""
    _, loaded, hf = gpt
    assert loaded.config.pad_id is None
    cmp = compare(loaded, TEXT, "A dog", app.toggles(), 128, new_tokens=0)
    short = cmp.baseline.outputs[1]
    n = len(cmp.inputs.rows[1])
    ids = torch.tensor([cmp.inputs.rows[1]])
    with torch.no_grad():
        probs = hf(ids).logits[0, -1].float().softmax(-1)
    np.testing.assert_allclose(short.top_probs[n - 1].numpy(), probs.topk(10).values.numpy(), atol=1e-5)
    mask = cmp.baseline.masks["decoder"][1]
    assert not mask[:, n:].any() and mask[n - 1, :n].all()  # padding keys masked, causal within the sentence
    assert all(math.isnan(float(x)) is False for x in short.surprisal)


def test_position_out_of_range_is_clamped(gpt, app):
    _, loaded, _ = gpt
    cmp = compare(loaded, TEXT, None, app.toggles(), 128, new_tokens=0)
    a = Analysis(cmp, View(position=999), RUN_FIGURES)
    last = len(cmp.inputs.rows[0]) - 1
    assert f"(position {last})" in a.output.summary


def test_surprisal_view_only_for_language_models(app):
    _, loaded = app.build()
    a = app.analyze(loaded, app.DATE1, None)
    assert "language models" in message_text(a.figure("surprisal"))


def test_offline_hub_model_is_one_sentence_and_keeps_the_session(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    ctx = AppContext(ModelRegistry())
    with pytest.raises(AppError) as err:
        load_session("openai-community/gpt2", "cpu", ctx)
    message = str(err.value)
    assert "HF_HUB_OFFLINE is set and it is not in the Hugging Face cache" in message
    assert message.count(". ") == 0 and "Error:" not in message  # one sentence, no exception dump


def test_head_tabs_on_a_hub_language_model(gpt):
    """Roles, lens and patching on the tiny GPT-2 (no pad token; the sentence read as typed): the lens's last row
    is transformers' own prediction, patching compares the two sentences' top tokens."""
    from explorer.app.serving.errors import escape_md
    from explorer.app.tabs.lens import lens_view
    from explorer.app.tabs.patching import patching_view
    from explorer.app.tabs.roles.scores import score_roles

    _, loaded, hf = gpt
    roles = score_roles(loaded, TEXT, "decoder", None, 128)
    assert roles.text["previous"].shape == (2, 6) and roles.losses is not None
    fig, md = lens_view(loaded, TEXT, 128)
    ids = torch.tensor([loaded.tokenizer.encode(TEXT).ids])
    want = int(hf(ids).logits[0, -1].argmax())
    assert f"predicts **{escape_md(loaded.tokenizer.labels([want])[0])}**" in md and np.asarray(fig.data[0].z).shape == (3, ids.shape[1])
    corrupted = next(t for t in ("The mat sat on the cat", "The cat sat on the cat", "The cat sat in the mat")
                     if len(loaded.tokenizer.encode(t).ids) == ids.shape[1])
    fig, md = patching_view(loaded, TEXT, corrupted, "", "", 128)
    assert "Metric: logit" in md and np.asarray(fig.data[0].z).shape == (2, 6)
    n = len(loaded.tokenizer.encode("The dog").ids)
    with pytest.raises(AppError, match=f"Sentence 1 has {ids.shape[1]} tokens and sentence 2 has {n}:"):
        patching_view(loaded, TEXT, "The dog", "", "", 128)


def test_compare_in_steps_hands_over_the_attention_before_the_outputs(gpt, app):
    """A language model's comparison comes twice: attention only (outputs pending), then complete with the
    predictions after the chosen position (the last by default) and the continuation; the predictions at every other
    position come when asked for. The finished runs hold the same attention and the same outputs as a comparison made
    in one go."""
    from explorer.app.run.pair import compare_in_steps

    _, loaded, _ = gpt
    heads = app.all_heads(loaded)
    off = app.toggles({"decoder": [h for h in heads["decoder"] if h != "L1 H0"]})
    steps = compare_in_steps(loaded, TEXT, "A dog ran", off, 128, new_tokens=3)
    early = next(steps)
    assert not early.complete and early.baseline.outputs == [] and early.toggled.outputs == []
    attention = early.toggled.attentions["decoder"]
    assert len(attention) == 2 and attention[1][:, 0].sum() > 0
    (done,) = list(steps)
    assert done is early and done.complete and done.toggled.attentions["decoder"] is attention
    for run in (done.baseline, done.toggled):
        for out in run.outputs:  # the last position only, so far
            assert out.top_probs[:-1].isnan().all() and out.surprisal.isnan().all()
            assert 0 < float(out.top_probs[-1].sum()) <= 1 + 1e-6
    assert not done.toggled.outputs[0].favourite_probs[-1].isnan()
    done.predict_every_position()
    assert not any(out.top_probs.isnan().any() for out in done.baseline.outputs + done.toggled.outputs)
    whole = compare(loaded, TEXT, "A dog ran", off, 128, new_tokens=3)
    for mine, theirs in zip(done.toggled.outputs, whole.toggled.outputs):
        assert torch.equal(mine.top_ids, theirs.top_ids) and torch.equal(mine.favourite_probs, theirs.favourite_probs)
        assert mine.continuation == theirs.continuation
    for a, b in zip(attention, whole.toggled.attentions["decoder"]):
        assert torch.equal(a, b)
    assert len(done.toggled.generations) == 2


def test_other_models_compare_in_one_step(app):
    from explorer.app.run.pair import compare_in_steps

    _, loaded = app.build("encoder-decoder")
    (only,) = list(compare_in_steps(loaded, app.DATE1, None, app.toggles(), 128))
    assert only.complete and only.baseline.outputs


def test_a_sampled_continuation_is_transformers_probabilities_drawn_by_hand(gpt, app):
    """Sample on: the continuation equals transformers' logits sampled by hand (tests/app/test_sampling_run.py), and
    the sampling view's first step is those probabilities after the temperature and the cut-offs."""
    from explorer.outputs.sampling import Sampling
    from tests.app.test_sampling_run import hand_sample

    _, loaded, hf = gpt
    sampling = Sampling(temperature=0.7, top_k=5, top_p=0.8, seed=11)
    cmp = compare(loaded, TEXT, None, app.toggles(), 128, new_tokens=4, sampling=sampling)
    out, step = cmp.baseline.outputs[0], cmp.baseline.first_steps[0]
    ids, first, margin = hand_sample(hf, cmp.inputs.rows[0], sampling, 4, eos=0)
    assert margin > 1e-4 and out.continuation.ids == ids[:len(out.continuation.ids)] and step.chosen == ids[0]
    with torch.no_grad():
        logits = hf(torch.tensor([cmp.inputs.rows[0]])).logits[0, -1].double()
    np.testing.assert_allclose(step.dist.tempered.numpy(), (logits / 0.7).softmax(-1).numpy(), atol=1e-5)
    np.testing.assert_allclose(step.dist.final.numpy(), first.numpy(), atol=1e-5)

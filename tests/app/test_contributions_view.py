"""The Contributions tab's computation (explorer.app.tabs.contributions: result and text, no Gradio) on a tiny
GPT-2, the shipped date-translator (cross-attention heads), a tiny BERT masked LM at its [MASK] and a bare encoder: the
map's numbers are direct_logit_attribution's and add up to the model's own logit, a switched-off head's share is 0 and
the toggled logit is the toggled model's, the token attribution is token_attribution's, and bad input is a message."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from explorer.app.page.head_labels import head_labels, parse_heads
from explorer.app.run.readings import read_texts
from explorer.app.serving.errors import AppError
from explorer.app.serving.registry import ModelRegistry
from explorer.app.serving.session import AppContext, load_session
from explorer.app.tabs.contributions.result import ContributionRequest, contributions
from explorer.app.tabs.contributions.text import (attribution_markdown, attribution_table, contribution_figures,
                                                  graph_figure, head_table, parse_head, summary_markdown)
from explorer.interpret.attribution import token_attribution
from explorer.interpret.dla import direct_logit_attribution, residual_parts
from tests.app.tiny_models import MLM_SHAPE, tiny_bert_mlm
from tests.importers.harness import VOCAB, byte_level_tokenizer, make_case, perturb, save_folder
from tests.importers.seq2seq_harness import wordpiece_tokenizer
from tests.viz.strings import containing

TEXT = "The cat sat on the mat"
MAX_TOKENS = 1024


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """name -> loaded model: a tiny GPT-2, a tiny BERT masked LM, a bare BERT (Hugging Face layout, allowed folder)."""
    root = tmp_path_factory.mktemp("contrib")
    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=48, n_head=6, n_layer=2, n_positions=64, bos_token_id=0,
                                     eos_token_id=0)
    make_case(transformers.GPT2LMHeadModel, config, byte_level_tokenizer(), root / "tiny-gpt2",
              lambda hf, layer: hf.transformer.h[layer].attn.c_proj,
              {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "add_bos_token": False})
    tiny_bert_mlm(root / "tiny-bert")
    save_folder(perturb(transformers.BertModel(transformers.BertConfig(**MLM_SHAPE))).eval(), wordpiece_tokenizer(),
                root / "tiny-bare")
    ctx = AppContext(ModelRegistry(), allowed_dirs=(str(root),))
    return {name: load_session(name, "cpu", ctx)[1] for name in ("tiny-gpt2", "tiny-bert", "tiny-bare")}


def ids_of(loaded, text):
    reading = read_texts(loaded, text, None, MAX_TOKENS)[0]
    return reading.tensors()


def test_gpt2_map_equals_direct_logit_attribution(models):
    loaded = models["tiny-gpt2"]
    r = contributions(loaded, ContributionRequest(TEXT, position=2, method="input_x_gradient"), MAX_TOKENS)
    src, _ = ids_of(loaded, TEXT)
    ref = direct_logit_attribution(loaded.model, src, position=2)
    assert r.token == ref.token and r.position == 2 and r.toggled is None
    np.testing.assert_array_equal(r.baseline.heads["decoder"], ref.heads.numpy())
    np.testing.assert_array_equal(r.baseline.mlps, ref.mlps.numpy())
    assert (r.baseline.embeddings, r.baseline.rest, r.baseline.logit) == (ref.embeddings, ref.rest, ref.logit)
    with torch.no_grad():
        own = loaded.model(src, need_weights=False).logits[0, 2]
    assert r.baseline.logit == pytest.approx(float(own[r.token]), abs=1e-4)
    assert r.baseline.total == pytest.approx(r.baseline.logit, abs=1e-4)  # the parts add up to the model's logit
    # the figure draws exactly these numbers (exact float32 cells), and every head's tokens are dla's
    dla, strip = contribution_figures(r)
    heads = next(t for t in dla.data if t.type == "heatmap")
    np.testing.assert_array_equal(np.asarray(heads.z), ref.heads.numpy())
    assert heads.customdata[1][3] == "decoder|1|3" and "of logit" in heads.hovertemplate
    parts = residual_parts(loaded.model, src, position=2)
    one = parts.head_tokens("decoder", 1, 3, k=10)
    name, headers, rows, md = head_table(r, "L1 H3")
    assert name == "L1 H3" and [row[2] for row in rows] == loaded.tokenizer.labels(one.promoted_ids.tolist())
    np.testing.assert_allclose([row[3] for row in rows], one.promoted_logits.numpy(), atol=1e-4)
    assert [row[4] for row in rows] == loaded.tokenizer.labels(one.suppressed_ids.tolist())
    assert head_table(r, "decoder|1|3|12345")[2] == rows  # a clicked cell names the same head
    # token attribution: token_attribution's, up to the position read (the causal model reads nothing after it)
    ta = token_attribution(loaded.model, src[0], position=2, token=r.token, method="input_x_gradient")
    (_, labels, values), = r.attribution.sequences
    assert len(labels) == 3 and np.allclose(values, ta.attributions[:3].numpy(), atol=1e-6)
    assert r.attribution.delta == pytest.approx(ta.delta) and not r.attribution.toggled
    np.testing.assert_allclose(np.asarray(next(t for t in strip.data if t.type == "heatmap").z)[0], values)
    headers, rows = attribution_table(r)
    assert headers == ["position", "token", "attribution", "share"] and len(rows) == 3
    assert "Completeness" in attribution_markdown(r) and "delta" in attribution_markdown(r)
    assert len(pickle.dumps(r)) < 100_000  # small: it comes back from a GPU worker


def test_gpt2_a_head_off_is_zero_and_the_toggled_logit_is_the_toggled_models(models):
    loaded = models["tiny-gpt2"]
    on = [h for h in head_labels(2, 6) if h not in ("L1 H2", "L0 H0")]
    request = ContributionRequest(TEXT, token="#40", minus="#41", heads_on={"decoder": parse_heads(on)},
                                  method="integrated_gradients", steps=16)
    r = contributions(loaded, request, MAX_TOKENS)
    t = r.toggled
    assert t is not None and t.heads["decoder"][1, 2] == 0 and t.heads["decoder"][0, 0] == 0
    assert t.off["decoder"][1, 2] and not t.off["decoder"][1, 1]
    src, _ = ids_of(loaded, TEXT)
    mask = torch.ones(2, 6)
    mask[1, 2] = mask[0, 0] = 0
    with torch.no_grad():
        own = loaded.model(src, need_weights=False, head_mask={"decoder": mask}).logits[0, -1]
    assert t.logit == pytest.approx(float(own[40] - own[41]), abs=1e-4)
    assert t.total == pytest.approx(t.logit, abs=1e-4)
    ref = direct_logit_attribution(loaded.model, src, token=40, minus=41, head_mask={"decoder": mask})
    np.testing.assert_array_equal(t.heads["decoder"], ref.heads.numpy())
    # the token attribution of the difference: the two tokens' attributions subtracted (the toggled model)
    kw = dict(position=-1, head_mask={"decoder": mask}, steps=16, keep_ids=loaded.tokenizer.special_ids)
    a40, a41 = (token_attribution(loaded.model, src[0], token=tok, **kw) for tok in (40, 41))
    np.testing.assert_allclose(r.attribution.sequences[0][2], (a40.attributions - a41.attributions).numpy(),
                               atol=1e-5)
    assert r.attribution.logit == pytest.approx(t.logit, abs=1e-4) and r.attribution.toggled
    dla, _ = contribution_figures(r)
    titles = [a.text for a in dla.layout.annotations]
    assert any("without toggles" in s for s in titles) and any("with toggles" in s for s in titles)
    assert any(tr.type == "scatter" for tr in dla.data)  # the switched-off heads are crossed out
    name, _, rows, md = head_table(r, "L1 H2")
    assert "switched off" in md and {row[0] for row in rows} == {"baseline"}
    assert "With the toggles" in summary_markdown(r)


def test_date_translator_has_cross_heads(app):
    _, loaded = app.load("date-translator")
    on = {"cross": parse_heads(["L0 H0", "L1 H1"])}
    r = contributions(loaded, ContributionRequest("3 May 2024", position=3, heads_on=on, steps=8), MAX_TOKENS)
    assert r.kinds == ["decoder", "cross"]
    src, tgt = ids_of(loaded, "3 May 2024")
    ref = direct_logit_attribution(loaded.model, src, tgt=tgt, position=3)
    np.testing.assert_array_equal(r.baseline.heads["cross"], ref.cross.numpy())
    assert r.token == ref.token and r.baseline.logit == ref.logit
    assert r.toggled.heads["cross"][1, 0] == 0 and r.toggled.heads["cross"][1, 1] != 0
    names = [s[0] for s in r.attribution.sequences]
    assert names == ["source", "decoder input"] and len(r.attribution.sequences[1][1]) == 4  # up to position 3
    assert "cross L1 H1" in r.head_choices() and parse_head(r, "cross L1 H1") == ("cross", 1, 1)
    assert head_table(r, "cross|1|1|5")[0] == "cross L1 H1"
    dla, strip = contribution_figures(r)
    assert any(a.text == "cross-attention heads" for a in dla.layout.annotations)
    assert len([t for t in strip.data if t.type == "heatmap"]) == 2
    assert head_table(r, "cross L1 H1")[1][0] == "run"


def test_a_masked_lm_at_its_mask(models):
    loaded = models["tiny-bert"]
    text = "The cat sat on the [MASK] and the dog ran."
    r = contributions(loaded, ContributionRequest(text, steps=8), MAX_TOKENS)
    src, _ = ids_of(loaded, text)
    where = src[0].tolist().index(loaded.task["mask_id"])
    assert r.position == where and r.kinds == ["encoder"] and "[MASK]" in r.position_text
    ref = direct_logit_attribution(loaded.model, src, position=where)
    np.testing.assert_array_equal(r.baseline.heads["encoder"], ref.heads.numpy())
    with torch.no_grad():
        own = loaded.model(src, need_weights=False).logits[0, where]
    assert r.baseline.logit == pytest.approx(float(own.max()), abs=1e-4)
    assert len(r.attribution.sequences[0][1]) == src.shape[1]  # an encoder reads every token
    with pytest.raises(AppError, match=r"no \[MASK\]: write \[MASK\]"):
        contributions(loaded, ContributionRequest("The cat sat on the mat."), MAX_TOKENS)
    assert contributions(loaded, ContributionRequest("The cat sat.", position=2, steps=4), MAX_TOKENS).position == 2


def test_an_encoder_without_a_head_has_no_logit(models):
    with pytest.raises(AppError, match="There is no logit to attribute"):
        contributions(models["tiny-bare"], ContributionRequest(TEXT), MAX_TOKENS)


def test_bad_input_is_a_message(models):
    loaded = models["tiny-gpt2"]
    with pytest.raises(AppError, match="Type a sentence first"):
        contributions(loaded, ContributionRequest("   "), MAX_TOKENS)
    with pytest.raises(AppError, match=r"Position 40 is outside sentence 1.*0\.\.\d+"):
        contributions(loaded, ContributionRequest(TEXT, position=40), MAX_TOKENS)
    with pytest.raises(AppError, match="outside the vocabulary"):
        contributions(loaded, ContributionRequest(TEXT, token="#99999"), MAX_TOKENS)
    with pytest.raises(AppError, match="steps must be"):
        ContributionRequest(TEXT, steps=257)
    with pytest.raises(AppError, match="unknown method"):
        ContributionRequest(TEXT, method="saliency")
    with pytest.raises(AppError, match="minus token is the target"):
        contributions(loaded, ContributionRequest(TEXT, token="#40", minus="#40", method="input_x_gradient"),
                      MAX_TOKENS)
    # a typed token of several tokens: the first, said so
    several = "catmat sat"
    ids = loaded.target_tokenizer.encode(several, add_special_tokens=False).ids
    assert len(ids) > 1
    r = contributions(loaded, ContributionRequest(TEXT, token=several, method="input_x_gradient"), MAX_TOKENS)
    assert r.token == ids[0] and any("the first" in n for n in r.notices)
    assert "the first" in summary_markdown(r)


def test_labels_are_escaped(models):
    loaded = models["tiny-gpt2"]
    text = "<b>x</b> $y$ <script>"
    r = contributions(loaded, ContributionRequest(text, method="input_x_gradient"), MAX_TOKENS)
    for fig in contribution_figures(r):
        assert not containing(fig, "<b>x") and not containing(fig, "<script") and not containing(fig, "$y")
    dla, strip = contribution_figures(r)
    assert containing(strip, "&lt;") and containing(dla, "&lt;")  # the labels are there, escaped
    assert "<script" not in summary_markdown(r) and "<b>" not in head_table(r, "L0 H0")[3]


def test_the_graph_is_the_models_contribution_graph_baseline_beside_toggled(models):
    """The tab's graph is explorer.interpret.contribution_graph of the same prediction (same edges and shares), the
    toggled run's beside it when a head is off (no edge through that head); a head edge's midpoint names its head as
    the page script reads it; the threshold is checked."""
    import torch

    from explorer.interpret import contribution_graph

    loaded = models["tiny-gpt2"]
    off = {"decoder": frozenset((la, h) for la in range(2) for h in range(6)) - {(1, 2)}}
    r = contributions(loaded, ContributionRequest(TEXT, method="input_x_gradient", heads_on=off, threshold=0.02),
                      MAX_TOKENS)
    base, toggled = r.graphs
    ids = torch.tensor(loaded.tokenizer.encode(TEXT).ids)
    want = contribution_graph(loaded.model, ids, threshold=0.02)
    assert [(e.source, e.target, e.kind, e.head, round(e.share, 6)) for e in base.edges] == \
        [(e.source, e.target, e.kind, e.head, round(e.share, 6)) for e in want.edges]
    assert abs(base.shares[base.root].total() - 1) < 1e-5
    assert not any(e.kind == "head" and (e.layer, e.head) == (1, 2) for e in toggled.edges)
    fig = graph_figure(r)
    heads = [d for t in fig.data for d in (t.customdata or []) if d[0] == "head"]
    assert heads and all(d[3] == "decoder" and 0 <= d[1] < 2 and 0 <= d[2] < 6 for d in heads)
    assert len({t.xaxis for t in fig.data}) == 2  # baseline | toggled
    one = graph_figure(contributions(loaded, ContributionRequest(TEXT, method="input_x_gradient"), MAX_TOKENS))
    assert len({t.xaxis for t in one.data}) == 1
    for bad in (0, 1.5, True):
        with pytest.raises(AppError, match="threshold"):
            ContributionRequest(TEXT, threshold=bad)


def test_a_cross_heads_line_names_its_kind_once():
    """"cross-attention cross L1 H3" named the kind twice."""
    import explorer

    loaded = explorer.load("date-translator", "cpu")
    result = contributions(loaded, ContributionRequest("lundi 3 mars 2025", position=6, method="input_x_gradient"),
                           MAX_TOKENS)
    md = head_table(result, "cross L1 H3")[3]
    assert md.startswith("**cross-attention L1 H3** writes") and "cross L1" not in md

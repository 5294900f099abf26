"""Masked language models in the app (tiny random BertForMaskedLM and RobertaForMaskedLM saved in the Hugging Face
layout): a [MASK] / <mask> gets its top-10 fillers with transformers' probabilities, baseline vs toggled, with the
change of the baseline's top filler; a sentence without a mask token says how to add one; an encoder without an MLM
head keeps the embedding-similarity output; the curated list and the README's Space `models:` agree."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from explorer.app.run.pair import compare
from explorer.app.run.result import Analysis
from explorer.app.run.sentence_outputs import Embedding, MaskFillers
from explorer.app.run.view import View
from explorer.app.serving.catalog import CURATED
from explorer.app.serving.errors import escape_md
from explorer.app.serving.registry import ModelRegistry
from explorer.app.serving.session import AppContext, load_session
from explorer.app.tabs import RUN_FIGURES
from tests.app.tiny_models import MLM_SHAPE, tiny_bert_mlm, tiny_roberta_mlm
from tests.importers.harness import perturb, save_folder
from tests.importers.seq2seq_harness import wordpiece_tokenizer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def mlms(tmp_path_factory):
    """name -> (loaded model, transformers model) for a tiny BERT and RoBERTa MLM and a bare BERT."""
    root = tmp_path_factory.mktemp("mlm")
    hf = {"tiny-bert": tiny_bert_mlm(root / "tiny-bert"), "tiny-roberta": tiny_roberta_mlm(root / "tiny-roberta")}
    bare = perturb(transformers.BertModel(transformers.BertConfig(**MLM_SHAPE))).eval()
    save_folder(bare, wordpiece_tokenizer(), root / "tiny-bare")
    ctx = AppContext(ModelRegistry(), allowed_dirs=(str(root),))
    return {name: (load_session(name, "cpu", ctx)[1], hf.get(name)) for name in ("tiny-bert", "tiny-roberta",
                                                                                  "tiny-bare")}


@pytest.mark.parametrize("name", ["tiny-bert", "tiny-roberta"])
def test_fillers_equal_transformers(mlms, app, name):
    loaded, hf = mlms[name]
    mask = loaded.task["mask_token"]
    text = f"The cat sat on the {mask} and the dog ran."
    cmp = compare(loaded, text, "No mask here.", app.toggles(), 128)
    out = cmp.baseline.outputs[0]
    assert isinstance(out, MaskFillers) and len(out.fillers) == 1 and out.favourite_probs is None
    ids = torch.tensor([cmp.inputs.rows[0]])
    position = cmp.inputs.rows[0].index(loaded.task["mask_id"])
    with torch.no_grad():
        probs = hf(ids).logits[0, position].float().softmax(-1)
    top = probs.topk(10)
    filler = out.fillers[0]
    assert filler.position == position and filler.ids == top.indices.tolist()
    np.testing.assert_allclose(filler.probs, top.values.numpy(), atol=1e-5)
    a = Analysis(cmp, View(), RUN_FIGURES)
    assert a.output.headers == ["#", "position", "rank", "filler (baseline)", "p baseline", "filler (toggled)",
                                "p toggled"]
    assert len(a.output.rows) == 10 and a.output.rows[0][3] == loaded.tokenizer.labels([filler.ids[0]])[0]
    assert f"at position {position}: the model fills in" in a.output.summary
    # The second sentence has no mask: the summary says how to add one, naming this model's mask token.
    assert cmp.baseline.outputs[1].fillers == []
    assert f"Sentence 2 has no {escape_md(mask)}: write {escape_md(mask)} where a word is missing" in a.output.summary


def test_heads_off_change_the_fillers(mlms, app):
    loaded, _ = mlms["tiny-bert"]
    heads = app.all_heads(loaded)
    toggles = app.toggles({"encoder": [h for h in heads["encoder"] if not h.startswith("L1")]})
    text = "The capital of France is [MASK]."
    cmp = compare(loaded, text, None, toggles, 128)
    base, tog = cmp.baseline.outputs[0], cmp.toggled.outputs[0]
    favourite = base.fillers[0].ids[0]
    row = cmp.inputs.rows[0]
    hm = torch.ones(2, 6)
    hm[1] = 0
    with torch.no_grad():  # the toggled model by hand: every head of layer 1 off
        logits = loaded.model(torch.tensor([row]), head_mask={"encoder": hm}).logits[0]
    expected = logits[base.fillers[0].position].softmax(-1)[favourite].item()
    assert tog.favourite_probs == [pytest.approx(expected, abs=1e-6)]
    assert tog.favourite_probs[0] != pytest.approx(base.fillers[0].probs[0], abs=1e-4)
    a = Analysis(cmp, View(), RUN_FIGURES)
    assert "with the toggles p =" in a.output.summary
    assert any(r[3:5] != r[5:7] for r in a.output.rows)  # the toggled top 10 differs


def test_encoder_without_a_head_keeps_embeddings(mlms, app):
    loaded, _ = mlms["tiny-bare"]
    assert loaded.task["name"] == "sentence-embedding"
    cmp = compare(loaded, "The cat sat on the mat.", "A dog ran.", app.toggles(), 128)
    assert isinstance(cmp.baseline.outputs[0], Embedding)
    assert "cosine similarity" in Analysis(cmp, View(), RUN_FIGURES).output.rows[0][0]


def test_curated_models_are_the_spaces_models():
    front = (ROOT / "README.md").read_text().split("---")[1]
    listed = re.findall(r"^  - (\S+)$", front.split("models:")[1], flags=re.M)
    assert sorted(listed) == sorted(m.repo for m in CURATED)
    for repo in ("Helsinki-NLP/opus-mt-en-de", "google-t5/t5-small", "google/flan-t5-small", "facebook/bart-base",
                 "distilbert/distilbert-base-uncased", "FacebookAI/roberta-base"):
        assert repo in listed

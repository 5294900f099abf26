"""Encoders with their masked-LM heads and the two new encoder families: tiny random BertForMaskedLM,
RobertaForMaskedLM (positions after padding_idx, byte-level tokens) and DistilBertForMaskedLM (no token types),
and the bare RobertaModel / DistilBertModel, equal transformers' eager implementation: every layer's attention
and the MLM logits, with right and left padding and heads switched off; the top-10 fillers of explorer.outputs.masked_lm
equal transformers' probabilities."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from explorer.checkpoints import estimate_parameters
from explorer.outputs.masked_lm import compare_fillers, fill_masks, mask_positions

from tests.importers.harness import TOLERANCE, VOCAB, perturb, save_folder
from tests.importers.seq2seq_harness import roberta_tokenizer, wordpiece_tokenizer

import explorer

SHAPE = dict(vocab_size=VOCAB, hidden_size=48, num_attention_heads=6, num_hidden_layers=2, intermediate_size=96,
             max_position_embeddings=40)
DISTIL = dict(vocab_size=VOCAB, dim=48, n_heads=6, n_layers=2, hidden_dim=96, max_position_embeddings=40)
TEXTS = ["The cat sat on the {mask} and the dog ran.", "Once upon a {mask}", "A {mask}!"]


def case(model_class, config, tokenizer, folder, **tok_cfg):
    torch.manual_seed(0)
    hf = perturb(model_class(config)).eval()
    hf.set_attn_implementation("eager")
    save_folder(hf, tokenizer, folder, tok_cfg or None)
    return hf, explorer.load(folder, "cpu")


@pytest.fixture(scope="module", params=["bert", "roberta", "distilbert"])
def mlm(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    if request.param == "bert":
        return case(transformers.BertForMaskedLM, transformers.BertConfig(**SHAPE), wordpiece_tokenizer(), folder)
    if request.param == "roberta":
        config = transformers.RobertaConfig(**SHAPE, pad_token_id=1, bos_token_id=0, eos_token_id=2)
        return case(transformers.RobertaForMaskedLM, config, roberta_tokenizer(), folder, mask_token="<mask>")
    return case(transformers.DistilBertForMaskedLM, transformers.DistilBertConfig(**DISTIL), wordpiece_tokenizer(),
                folder)


def batch(loaded, side="right"):
    mask_token = loaded.task["mask_token"]
    rows = [loaded.tokenizer.encode(t.format(mask=mask_token)).ids for t in TEXTS]
    width, pad = max(map(len, rows)), loaded.config.pad_id
    ids = torch.full((len(rows), width), pad)
    real = torch.zeros(len(rows), width, dtype=torch.bool)
    for b, row in enumerate(rows):
        start = width - len(row) if side == "left" else 0
        ids[b, start:start + len(row)], real[b, start:start + len(row)] = torch.tensor(row), True
    return ids, real


def hf_positions(hf, real):
    """RoBERTa: its own rule from the ids (padding_idx + 1 + count of real tokens so far) written out, so the test
    also checks our offset. BERT / DistilBERT number the columns from 0 (a left-padded row's tokens then sit at
    other positions than alone); ours count from the first real token, as their generate() does: given here."""
    if isinstance(hf, transformers.RobertaForMaskedLM):
        return (real.long().cumsum(-1) * real) + hf.config.pad_token_id
    return (torch.arange(real.shape[1])[None] - real.long().argmax(-1, keepdim=True)).clamp(min=0)


def out_proj(hf, layer):
    if isinstance(hf, transformers.DistilBertForMaskedLM):
        return hf.distilbert.transformer.layer[layer].attention.out_lin
    body = hf.bert if isinstance(hf, transformers.BertForMaskedLM) else hf.roberta
    return body.encoder.layer[layer].attention.output.dense


def compare(hf, loaded, side="right", off=None):
    ids, real = batch(loaded, side)
    Dh = loaded.config.resolved_head_dim
    handle = None
    if off is not None:
        def hook(module, args):
            x = args[0].clone()
            x[..., off[1] * Dh:(off[1] + 1) * Dh] = 0
            return (x, *args[1:])
        handle = out_proj(hf, off[0]).register_forward_pre_hook(hook)
    heads = None
    if off is not None:
        heads = torch.ones(loaded.config.n_layers, loaded.config.n_heads)
        heads[off] = 0
    kwargs = {"position_ids": hf_positions(hf, real)}
    with torch.no_grad():
        ours = loaded.model(ids, key_mask=real, head_mask=None if heads is None else {"encoder": heads})
        ref = hf(input_ids=ids, attention_mask=real.long(), output_attentions=True, **kwargs)
    if handle is not None:
        handle.remove()
    live = real[:, None, :, None] & real[:, None, None, :]  # real query rows x real keys
    attention = max((a - b).abs().masked_select(live.expand_as(a)).max().item()
                    for a, b in zip(ours.attentions.encoder, ref.attentions))
    logits = (ours.logits - ref.logits).abs()[real].max().item()
    assert attention < TOLERANCE and logits < TOLERANCE, (attention, logits)
    return ours.logits, ref.logits, ids, real


def test_config_task_and_tied_head(mlm):
    hf, loaded = mlm
    c, model = loaded.config, loaded.model
    assert c.mlm_head and c.tie_embeddings and model.mlm.proj.weight is model.src_embed.token.weight
    assert loaded.task["name"] == "masked-lm" and loaded.task["mask_id"] == loaded.tokenizer.token_to_id(
        loaded.task["mask_token"])
    assert all(loaded.task["mask_token"] in e for e in loaded.task["examples"])
    theirs = sum(p.numel() for p in hf.parameters())
    assert model.num_parameters() == estimate_parameters(c) == theirs
    if isinstance(hf, transformers.RobertaForMaskedLM):
        assert (c.position_offset, c.max_len, c.type_vocab_size, c.mlm_activation) == (2, 38, 2, "gelu")
    if isinstance(hf, transformers.DistilBertForMaskedLM):
        assert c.type_vocab_size == 0 and c.layer_norm_eps == 1e-12


@pytest.mark.parametrize("side", ["right", "left"])
def test_equals_transformers(mlm, side):
    compare(*mlm, side=side)


def test_head_off_equals_hand_computation(mlm):
    compare(*mlm, off=(1, 2))
    compare(*mlm, off=(0, 5))


def test_fillers_equal_transformers_probabilities(mlm):
    hf, loaded = mlm
    ours, theirs, ids, real = compare(*mlm)
    mask_id = loaded.task["mask_id"]
    for b in range(ids.shape[0]):
        fillers = fill_masks(ours[b], ids[b], loaded.tokenizer, mask_id)
        positions = mask_positions(ids[b], mask_id)
        assert len(fillers) == len(positions) == 1
        probs = theirs[b, positions[0]].softmax(-1)
        top = probs.topk(10)
        assert fillers[0].ids == top.indices.tolist()
        assert torch.allclose(torch.tensor(fillers[0].probs), top.values, atol=1e-5)
        assert fillers[0].labels == loaded.tokenizer.labels(top.indices.tolist())
    heads = torch.ones(loaded.config.n_layers, loaded.config.n_heads)
    heads[1] = 0
    with torch.no_grad():
        toggled = loaded.model(ids, key_mask=real, head_mask={"encoder": heads}).logits
    change = compare_fillers(ours[0], toggled[0], ids[0], loaded.tokenizer, mask_id)[0]
    assert change.baseline.ids == fill_masks(ours[0], ids[0], loaded.tokenizer, mask_id)[0].ids
    assert abs(change.toggled_prob - toggled[0, change.baseline.position].softmax(-1)[change.top_id].item()) < 1e-6


@pytest.mark.parametrize("name", ["roberta", "distilbert"])
def test_bare_encoders_equal_transformers(tmp_path, name):
    """RobertaModel / DistilBertModel without a head: task "sentence-embedding", hidden states equal."""
    if name == "roberta":
        hf, loaded = case(transformers.RobertaModel, transformers.RobertaConfig(**SHAPE, pad_token_id=1),
                          roberta_tokenizer(), tmp_path)
    else:
        hf, loaded = case(transformers.DistilBertModel, transformers.DistilBertConfig(**DISTIL), wordpiece_tokenizer(),
                          tmp_path)
    assert loaded.task["name"] == "sentence-embedding" and not loaded.config.mlm_head
    rows = [loaded.tokenizer.encode(t).ids for t in ("The cat sat on the mat.", "A dog!")]
    ids = torch.full((2, len(rows[0])), loaded.config.pad_id)
    ids[0], ids[1, : len(rows[1])] = torch.tensor(rows[0]), torch.tensor(rows[1])
    real = ids != loaded.config.pad_id
    with torch.no_grad():
        ours = loaded.model(ids)
        ref = hf(input_ids=ids, attention_mask=real.long(), output_attentions=True)
    assert ours.logits is None
    assert (ours.last_hidden_state - ref.last_hidden_state).abs()[real].max() < TOLERANCE
    for a, b in zip(ours.attentions.encoder, ref.attentions):
        assert (a - b).abs().masked_select((real[:, None, :, None] & real[:, None, None, :]).expand_as(a)).max() \
            < TOLERANCE
    theirs = sum(p.numel() for p in hf.parameters()) - (
        hf.pooler.dense.weight.numel() + hf.pooler.dense.bias.numel() if name == "roberta" else 0)
    assert loaded.model.num_parameters() == estimate_parameters(loaded.config) == theirs

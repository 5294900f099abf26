"""BART import: tiny random BARTs (shared embeddings, learned positions with offset 2, layernorm_embedding,
post-norm, GELU, final_logits_bias) equal transformers' eager BartForConditionalGeneration: encoder, decoder
and cross attention and the logits, with source padding and heads switched off; greedy generation equals
transformers' generate."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from explorer.checkpoints import estimate_parameters

from tests.importers.harness import VOCAB
from tests.importers.seq2seq_harness import (check_greedy_generation, check_seq2seq, make_seq2seq_case,
                                             roberta_tokenizer, set_logits_bias)


def out_proj(hf, kind: str, layer: int):
    model = hf.model
    if kind == "encoder":
        return model.encoder.layers[layer].self_attn.out_proj
    return model.decoder.layers[layer].self_attn.out_proj if kind == "decoder" else \
        model.decoder.layers[layer].encoder_attn.out_proj


def bart_case(folder, **overrides):
    fields = dict(vocab_size=VOCAB, d_model=48, encoder_layers=2, decoder_layers=2, encoder_attention_heads=6,
                  decoder_attention_heads=6, encoder_ffn_dim=96, decoder_ffn_dim=96, max_position_embeddings=64,
                  pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)
    config = transformers.BartConfig(**{**fields, **overrides})
    case = make_seq2seq_case(transformers.BartForConditionalGeneration, config, folder,
                             lambda f: roberta_tokenizer().save(str(f / "tokenizer.json")), out_proj)
    with torch.no_grad():
        set_logits_bias(case)  # not zero, so the LM head's bias is checked
    return case


@pytest.fixture(scope="module")
def bart(tmp_path_factory):
    return bart_case(tmp_path_factory.mktemp("bart"))


def test_config_and_task(bart):
    c, model = bart.loaded.config, bart.loaded.model
    assert (c.arch, c.positional, c.position_offset, c.embedding_norm, c.norm_first, c.activation) == \
        ("encoder-decoder", "learned", 2, True, False, "gelu")
    assert c.share_embeddings and c.tie_embeddings and c.lm_head_bias and c.pad_id == 1
    assert model.tgt_embed.token.weight is model.src_embed.token.weight is model.generator.proj.weight
    assert model.src_embed.position.weight.shape == (64 + 2, 48)
    theirs = sum(p.numel() for p in bart.hf.parameters()) + bart.hf.final_logits_bias.numel()  # a buffer there
    assert model.num_parameters() == estimate_parameters(c) == theirs
    task = bart.loaded.task
    assert task["name"] == "seq2seq" and task["bos_id"] == 2 and task["eos_id"] == 2 and task["examples"]


def test_equals_transformers(bart):
    check_seq2seq(bart, start=2)


def test_greedy_generation_equals_transformers(bart):
    check_greedy_generation(bart)


@pytest.mark.parametrize("overrides", [dict(scale_embedding=True, activation_function="relu"),
                                       dict(tie_word_embeddings=False, encoder_layers=1)])
def test_variants_equal_transformers(tmp_path, overrides):
    case = bart_case(tmp_path, **overrides)
    assert case.loaded.config.scale_embeddings == overrides.get("scale_embedding", False)
    assert case.loaded.config.share_embeddings == overrides.get("tie_word_embeddings", True)
    check_seq2seq(case, start=2)
    theirs = sum(p.numel() for p in case.hf.parameters()) + case.hf.final_logits_bias.numel()
    if not case.loaded.config.share_embeddings:  # transformers keeps its `shared` embedding, used by neither stack
        theirs -= case.hf.model.shared.weight.numel()
        assert "model.shared.weight" in case.loaded.task["ignored_tensors"]
    assert case.loaded.model.num_parameters() == estimate_parameters(case.loaded.config) == theirs

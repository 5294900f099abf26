"""GPT-NeoX import: tiny random Pythia-shaped models (partial rotary, parallel or sequential residual,
with and without attention biases) equal transformers' eager GPTNeoXForCausalLM."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from tests.importers.harness import (VOCAB, byte_level_tokenizer, check_family, check_parameter_count, make_case)

TOKENIZER_CONFIG = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"}


def neox_case(folder, **overrides):
    fields = dict(vocab_size=VOCAB, hidden_size=64, num_attention_heads=4, num_hidden_layers=2, intermediate_size=96,
                  max_position_embeddings=64, rotary_pct=0.25, bos_token_id=0, eos_token_id=0)
    config = transformers.GPTNeoXConfig(**{**fields, **overrides})
    return make_case(transformers.GPTNeoXForCausalLM, config, byte_level_tokenizer(), folder,
                     lambda hf, layer: hf.gpt_neox.layers[layer].attention.dense, TOKENIZER_CONFIG)


@pytest.fixture(scope="module")
def pythia(tmp_path_factory):
    return neox_case(tmp_path_factory.mktemp("neox"))


def test_config(pythia):
    c = pythia.loaded.config
    assert (c.positional, c.rotary_dim, c.resolved_head_dim, c.parallel_residual, c.tie_embeddings) == \
        ("rotary", 4, 16, True, False)
    assert c.activation == "gelu" and c.qkv_bias and c.out_bias and c.mlp_bias and not c.lm_head_bias
    check_parameter_count(pythia)


def test_equals_transformers(pythia):
    check_family(pythia)


def test_query_key_value_is_regrouped_per_head(pythia):
    """Our in_proj rows [q of all heads; k; v] come from NeoX's [h0 q, k, v][h1 q, k, v]..."""
    theirs = pythia.hf.gpt_neox.layers[0].attention.query_key_value.weight
    ours = pythia.loaded.model.decoder.layers[0].self_attn.in_proj.weight
    H, Dh = 4, 16
    for h in range(H):
        for part in range(3):  # q, k, v
            assert torch.equal(ours[part * H * Dh + h * Dh:][:Dh], theirs[(3 * h + part) * Dh:][:Dh])


@pytest.mark.parametrize("overrides", [dict(use_parallel_residual=False), dict(attention_bias=False),
                                       dict(rotary_pct=1.0, tie_word_embeddings=True)])
def test_variants_equal_transformers(tmp_path, overrides):
    case = neox_case(tmp_path, **overrides)
    check_family(case, left_padding=False)
    check_parameter_count(case)

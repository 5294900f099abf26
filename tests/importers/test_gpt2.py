"""GPT-2 import: tiny random GPT-2s (tied and untied, with and without attention scaling, with the
float16-motivated reorder_and_upcast_attn) equal transformers' eager GPT2LMHeadModel."""

from __future__ import annotations

import json

import pytest
import torch

transformers = pytest.importorskip("transformers")

import explorer
from explorer.checkpoints import CheckpointError

from tests.importers.harness import VOCAB, byte_level_tokenizer, check_family, check_parameter_count, make_case

TOKENIZER_CONFIG = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "add_bos_token": False}


def gpt2_case(folder, **overrides):
    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=48, n_head=6, n_layer=2, n_positions=64, bos_token_id=0,
                                     eos_token_id=0, **overrides)
    return make_case(transformers.GPT2LMHeadModel, config, byte_level_tokenizer(), folder,
                     lambda hf, layer: hf.transformer.h[layer].attn.c_proj, TOKENIZER_CONFIG)


@pytest.fixture(scope="module")
def tied(tmp_path_factory):
    return gpt2_case(tmp_path_factory.mktemp("gpt2"))


def test_config_and_task(tied):
    c = tied.loaded.config
    assert (c.arch, c.d_model, c.n_heads, c.n_layers, c.d_ff, c.max_len, c.positional, c.activation) == \
        ("decoder", 48, 6, 2, 192, 64, "learned", "gelu_tanh")
    assert c.tie_embeddings and not c.lm_head_bias and c.pad_id is None and c.norm_first and c.resolved_final_norm
    assert tied.loaded.task["name"] == "causal-lm" and tied.loaded.task["eos_id"] == 0
    assert tied.loaded.model.generator.proj.weight is tied.loaded.model.tgt_embed.token.weight
    check_parameter_count(tied)


def test_tied_equals_transformers(tied):
    check_family(tied)


@pytest.mark.parametrize("overrides", [dict(tie_word_embeddings=False), dict(scale_attn_weights=False),
                                       dict(reorder_and_upcast_attn=True), dict(activation_function="gelu")])
def test_variants_equal_transformers(tmp_path, overrides):
    case = gpt2_case(tmp_path, **overrides)
    check_family(case, left_padding=False)
    check_parameter_count(case)


def test_checkpoint_without_prefix_and_with_causal_mask_buffers(tmp_path, tied):
    """The original gpt2 repository: no "transformer." prefix, h.i.attn.bias mask buffers stored."""
    from safetensors.torch import load_file, save_file

    folder = tied.folder
    state = {k.removeprefix("transformer."): v for k, v in load_file(str(folder / "model.safetensors")).items()}
    for i in range(2):
        state[f"h.{i}.attn.bias"] = torch.ones(1, 1, 64, 64).tril()
    copy = tmp_path / "plain"
    copy.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (copy / name).write_bytes((folder / name).read_bytes())
    save_file(state, str(copy / "model.safetensors"))
    loaded = explorer.load(copy, "cpu")
    ids = torch.tensor([loaded.tokenizer.encode("The cat sat").ids])
    with torch.no_grad():
        assert torch.equal(loaded.model(ids).logits, tied.loaded.model(ids).logits)
    assert "h.0.attn.bias" in loaded.task["ignored_tensors"]


def test_inverse_layer_scaling_is_refused(tmp_path, tied):
    cfg = json.loads((tied.folder / "config.json").read_text())
    folder = tmp_path / "scaled"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**cfg, "scale_attn_by_inverse_layer_idx": True}))
    with pytest.raises(CheckpointError, match="config.json.*scale_attn_by_inverse_layer_idx"):
        explorer.load(folder, "cpu")

"""Llama, Mistral and Qwen2 import: tiny random models with grouped-query attention (6 query heads on 2
key/value heads), tied and untied embeddings, q/k/v biases (Qwen2), a sliding window smaller than
the sequence (Mistral) and scaled rotary positions equal transformers' eager implementation."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

import explorer

from tests.importers.harness import (SHAPE_LLAMA as SHAPE, batch, byte_level_tokenizer, check_family,
                                     check_parameter_count, compare, head_mask_with, make_case,
                                     out_proj_llama as out_proj, sentencepiece_tokenizer)

SP_CONFIG = {"add_bos_token": True, "add_eos_token": False, "bos_token": "<s>", "eos_token": "</s>",
             "unk_token": "<unk>"}
QWEN_CONFIG = {"bos_token": None, "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"}


def llama_case(folder, **overrides):
    config = transformers.LlamaConfig(**SHAPE, bos_token_id=1, eos_token_id=2, **overrides)
    return make_case(transformers.LlamaForCausalLM, config, sentencepiece_tokenizer(), folder, out_proj, SP_CONFIG)


def mistral_case(folder, window=4):
    config = transformers.MistralConfig(**SHAPE, bos_token_id=1, eos_token_id=2, sliding_window=window)
    return make_case(transformers.MistralForCausalLM, config, sentencepiece_tokenizer(), folder, out_proj, SP_CONFIG,
                     window=window)


def qwen2_case(folder, **overrides):
    config = transformers.Qwen2Config(**SHAPE, tie_word_embeddings=True, bos_token_id=0, eos_token_id=0, **overrides)
    return make_case(transformers.Qwen2ForCausalLM, config, byte_level_tokenizer(), folder, out_proj, QWEN_CONFIG)


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return llama_case(tmp_path_factory.mktemp("llama"))


@pytest.fixture(scope="module")
def mistral(tmp_path_factory):
    return mistral_case(tmp_path_factory.mktemp("mistral"))


@pytest.fixture(scope="module")
def qwen2(tmp_path_factory):
    return qwen2_case(tmp_path_factory.mktemp("qwen2"))


def test_llama_config(llama):
    c = llama.loaded.config
    assert (c.norm, c.mlp, c.activation, c.positional, c.n_heads, c.resolved_kv_heads, c.rotary_dim) == \
        ("rmsnorm", "gated", "silu", "rotary", 6, 2, 8)
    assert not (c.qkv_bias or c.out_bias or c.mlp_bias or c.lm_head_bias or c.tie_embeddings)
    check_parameter_count(llama)


def test_llama_adds_bos_from_tokenizer_config(llama):
    enc = llama.loaded.tokenizer.encode("The cat")
    assert enc.ids[0] == 1 and enc.tokens[0] == "<s>" and enc.special[0] and enc.ids.count(1) == 1


@pytest.mark.parametrize("name", ["llama", "mistral", "qwen2"])
def test_equals_transformers(name, request):
    check_family(request.getfixturevalue(name))


def test_qwen2_biases_and_tied_embeddings(qwen2):
    c = qwen2.loaded.config
    assert c.qkv_bias and not c.out_bias and c.tie_embeddings and c.pad_id is None  # pad = eos: not a padding id
    assert qwen2.loaded.model.decoder.layers[0].self_attn.out_proj.bias is None
    check_parameter_count(qwen2)


def test_mistral_window_matches_transformers_convention(mistral):
    """A query sees the last `window` keys, itself included: the key exactly `window` back is masked."""
    w = mistral.window
    ids, mask = batch(mistral, ["The cat sat on the mat and the dog ran in the park."])
    assert ids.shape[1] > 2 * w
    with torch.no_grad():
        weights = mistral.loaded.model(ids).attentions.decoder[0][0]  # (H, T, T)
    t = ids.shape[1] - 1
    assert torch.all(weights[:, t, : t - w + 1] == 0) and torch.all(weights[:, t, t - w + 1:] > 0)
    compare(mistral, ids, mask)  # and transformers agrees row by row


def test_gqa_one_query_head_off_changes_only_its_own_output(llama):
    """Head 1 shares key/value head 0 with heads 0 and 2: switching it off zeroes its slice of W_o's
    input and leaves every other head's output (and attention) in that layer unchanged."""
    model, Dh = llama.loaded.model, llama.loaded.config.resolved_head_dim
    ids, mask = batch(llama)
    seen = []
    handle = model.decoder.layers[0].self_attn.out_proj.register_forward_pre_hook(lambda m, a: seen.append(a[0]))
    with torch.no_grad():
        base = model(ids, key_mask=mask)
        off = model(ids, key_mask=mask, head_mask={"decoder": head_mask_with(llama.loaded.config, 0, 1)})
    handle.remove()
    before, after = seen[0].view(*ids.shape, 6, Dh), seen[1].view(*ids.shape, 6, Dh)
    assert torch.all(after[:, :, 1] == 0) and before[:, :, 1].abs().sum() > 0
    others = [0, 2, 3, 4, 5]
    assert torch.equal(before[:, :, others], after[:, :, others])
    assert torch.equal(base.attentions.decoder[0], off.attentions.decoder[0])  # weights are still returned


@pytest.mark.parametrize("scaling", [
    {"rope_type": "linear", "factor": 2.0},
    {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
     "original_max_position_embeddings": 16},
])
def test_scaled_rotary_equals_transformers(tmp_path, scaling):
    case = llama_case(tmp_path, rope_parameters={"rope_theta": 500.0, **scaling}, tie_word_embeddings=True,
                      attention_bias=True, mlp_bias=True)
    assert case.loaded.config.rope_scaling["rope_type"] == scaling["rope_type"]
    assert case.loaded.config.pos_base == 500.0
    check_family(case, left_padding=False)
    check_parameter_count(case)


def test_legacy_rope_keys(tmp_path, llama):
    """Hub configs written before transformers v5: rope_theta and rope_scaling at the top level."""
    import json
    folder = tmp_path / "old"
    folder.mkdir()
    for name in ("model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        (folder / name).symlink_to(llama.folder / name)
    cfg = json.loads((llama.folder / "config.json").read_text())
    cfg.pop("rope_parameters")
    cfg.update(rope_theta=1234.0, rope_scaling={"type": "linear", "factor": 3.0})
    (folder / "config.json").write_text(json.dumps(cfg))
    c = explorer.load(folder, "cpu").config
    assert c.pos_base == 1234.0 and c.rope_scaling == {"rope_type": "linear", "factor": 3.0}

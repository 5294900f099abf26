"""Checkpoint folders: bit-exact round trips for the three architectures, and one actionable
CheckpointError per kind of broken file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from explorer.checkpoints import (
    FORMAT_VERSION,
    CheckpointError,
    LoadedModel,
    estimate_parameters,
    load_checkpoint,
    save_checkpoint,
)
from explorer.model import Transformer, TransformerConfig
from explorer.tokenizer import train_tokenizer

TEXTS = ["12 March 2021", "2021-03-12", "le 3 avril 1999", "1999-04-03", "abcdefghijklmnopqrstuvwxyz"]


def char_tokenizer(texts=TEXTS, extra: str = ""):
    return train_tokenizer([*texts, extra], kind="char", add_bos=True, add_eos=True)


def small_config(arch: str, vocab: int, **kw) -> TransformerConfig:
    return TransformerConfig(arch=arch, vocab_size=vocab, d_model=16, n_heads=2, n_layers=2, d_ff=32, max_len=40,
                             dropout=0.0, **kw)


def make_model(config: TransformerConfig) -> Transformer:
    model = Transformer(config)
    with torch.no_grad():  # non-default values everywhere (LayerNorm weights are all ones otherwise)
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    return model.eval()


def assert_same_tensors(a: Transformer, b: Transformer) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for k in sa:
        assert sa[k].dtype == sb[k].dtype, k
        assert torch.equal(sa[k].cpu(), sb[k].cpu()), k


def ids(tokenizer, texts):
    return torch.tensor(tokenizer.encode_batch(texts).ids)


# ------------------------------------------------------------------------------------------ round trips
def test_encoder_round_trip_is_bit_exact(tmp_path):
    tok = char_tokenizer()
    model = make_model(small_config("encoder", tok.vocab_size + 3, num_classes=3, positional="learned",
                                    type_vocab_size=2, embedding_norm=True))
    task = {"name": "classification", "description": "test", "labels": ["a", "b", "c"], "examples": ["x"]}
    save_checkpoint(tmp_path / "ck", model, tok, task=task)
    assert sorted(p.name for p in (tmp_path / "ck").iterdir()) == ["README.md", "config.json", "model.safetensors",
                                                                   "tokenizer.json"]
    loaded = load_checkpoint(tmp_path / "ck", "cpu")
    assert isinstance(loaded, LoadedModel)
    assert loaded.task == task and loaded.labels == ["a", "b", "c"] and loaded.arch == "encoder"
    assert loaded.config == model.config and not loaded.model.training
    assert loaded.tgt_tokenizer is None and loaded.target_tokenizer is loaded.tokenizer
    assert "classification" in loaded.card and "local folder" in loaded.source
    assert_same_tensors(model, loaded.model)
    x = ids(tok, ["12 March", "1999-04-03"])
    out_a, out_b = model(x), loaded.model(x)
    assert torch.equal(out_a.logits, out_b.logits)
    for wa, wb in zip(out_a.attentions.encoder, out_b.attentions.encoder):
        assert torch.equal(wa, wb)
    assert loaded.tokenizer.encode("12 March").ids == tok.encode("12 March").ids


def test_decoder_with_tied_embeddings_saves_once_and_reties(tmp_path):
    tok = char_tokenizer()
    model = make_model(small_config("decoder", tok.vocab_size, tie_embeddings=True, norm_first=True,
                                    positional="sinusoidal"))
    assert model.generator.proj.weight is model.tgt_embed.token.weight
    save_checkpoint(tmp_path, model, tok, task={"name": "date-gpt", "bos_id": tok.bos_id, "eos_id": tok.eos_id})
    stored = load_file(str(tmp_path / "model.safetensors"))
    assert "generator.proj.weight" not in stored and "tgt_embed.token.weight" in stored
    assert not any("position_table" in k for k in stored)  # non-persistent buffer rebuilt from the config
    meta = json.loads((tmp_path / "config.json").read_text())
    assert meta["format_version"] == FORMAT_VERSION and meta["special_tokens"]["bos"] == tok.bos_id
    loaded = load_checkpoint(tmp_path, "cpu")
    assert loaded.model.generator.proj.weight is loaded.model.tgt_embed.token.weight
    assert_same_tensors(model, loaded.model)
    assert torch.equal(loaded.model.tgt_embed.position_table, model.tgt_embed.position_table)
    x = ids(tok, ["2021-03", "1999-04-03"])
    assert torch.equal(model(x).logits, loaded.model(x).logits)
    assert loaded.model.num_parameters() == model.num_parameters() == estimate_parameters(model.config)


def test_encoder_decoder_with_separate_target_tokenizer(tmp_path):
    src_tok = char_tokenizer()
    tgt_tok = train_tokenizer(["0123456789-"], kind="char", add_bos=True, add_eos=True)
    model = make_model(small_config("encoder-decoder", src_tok.vocab_size, tgt_vocab_size=tgt_tok.vocab_size))
    save_checkpoint(tmp_path, model, src_tok, tgt_tokenizer=tgt_tok, card="# my card\n")
    assert (tmp_path / "tgt_tokenizer.json").is_file()
    loaded = load_checkpoint(tmp_path)  # default device: pick_device()
    assert loaded.card == "# my card\n"
    assert loaded.target_tokenizer.vocab_size == tgt_tok.vocab_size != loaded.tokenizer.vocab_size
    assert_same_tensors(model, loaded.model)
    src, tgt = ids(src_tok, ["12 March 2021", "le 3"]), ids(tgt_tok, ["2021-03-12", "0"])
    a, b = model(src, tgt), loaded.model.cpu()(src, tgt)
    assert torch.equal(a.logits, b.logits)
    for kind in ("encoder", "decoder", "cross"):
        for wa, wb in zip(getattr(a.attentions, kind), getattr(b.attentions, kind)):
            assert torch.equal(wa, wb)


def test_resaving_without_target_tokenizer_removes_stale_one(tmp_path):
    tok, tgt = char_tokenizer(), train_tokenizer(["0123456789-"], kind="char")
    model = make_model(small_config("encoder-decoder", tok.vocab_size))
    save_checkpoint(tmp_path, model, tok, tgt_tokenizer=tgt)
    save_checkpoint(tmp_path, model, tok)
    assert not (tmp_path / "tgt_tokenizer.json").exists()
    assert load_checkpoint(tmp_path, "cpu").tgt_tokenizer is None


@pytest.mark.parametrize("config", [
    TransformerConfig.preset("seed001-classifier"), TransformerConfig.preset("seed002-transformer"),
    TransformerConfig.preset("annotated"), TransformerConfig.preset("tiny-gpt"),
    TransformerConfig.preset("tiny-gpt", tie_embeddings=True, qkv_bias=False, out_bias=False, type_vocab_size=2, embedding_norm=True),
    TransformerConfig(arch="encoder-decoder", vocab_size=50, tgt_vocab_size=30, d_model=24, n_heads=3, head_dim=5,
                      n_encoder_layers=1, n_decoder_layers=3, d_ff=7, final_norm=True, tie_embeddings=True),
])
def test_parameter_estimate_is_exact(config):
    with torch.device("meta"):  # shapes only, no memory
        model = Transformer(config)
    assert estimate_parameters(config) == model.num_parameters()


# ------------------------------------------------------------------------------------------ broken folders
@pytest.fixture
def saved(tmp_path):
    tok = char_tokenizer()
    model = make_model(small_config("encoder", tok.vocab_size + 2, positional="learned"))
    return save_checkpoint(tmp_path / "ck", model, tok)


def error_of(folder, **kw) -> str:
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(folder, "cpu", **kw)
    return str(info.value)


@pytest.mark.parametrize("name", ["config.json", "model.safetensors", "tokenizer.json"])
def test_missing_file_names_file_and_folder(saved, name):
    (saved / name).unlink()
    msg = error_of(saved)
    assert f"missing file {name} in {saved.name}" in msg and str(saved.parent) not in msg  # no server path


def test_missing_target_tokenizer(tmp_path):
    tok, tgt = char_tokenizer(), train_tokenizer(["0123456789-"], kind="char")
    save_checkpoint(tmp_path, make_model(small_config("encoder-decoder", tok.vocab_size)), tok, tgt_tokenizer=tgt)
    (tmp_path / "tgt_tokenizer.json").unlink()
    assert "missing file tgt_tokenizer.json" in error_of(tmp_path)


def test_missing_folder(tmp_path):
    assert "does not exist" in error_of(tmp_path / "nope")


def test_config_not_json(saved):
    (saved / "config.json").write_text("{not json")
    assert "config.json" in (msg := error_of(saved)) and "not valid JSON" in msg


def test_config_without_format_version(saved):
    (saved / "config.json").write_text(json.dumps({"model_type": "bert"}))
    assert "format_version" in error_of(saved)


def test_config_from_the_future(saved):
    meta = json.loads((saved / "config.json").read_text())
    meta["format_version"] = FORMAT_VERSION + 1
    (saved / "config.json").write_text(json.dumps(meta))
    assert "newer" in error_of(saved)


@pytest.mark.parametrize("change, expected", [({"d_model": 15}, "d_model"), ({"activation": "swish"}, "activation"),
                                              ({"colour": "red"}, "unknown field")])
def test_invalid_config_wraps_value_error_with_path(saved, change, expected):
    meta = json.loads((saved / "config.json").read_text())
    meta["model"].update(change)
    (saved / "config.json").write_text(json.dumps(meta))
    msg = error_of(saved)
    assert "config.json" in msg and f"in {saved.name}" in msg and str(saved.parent) not in msg and expected in msg


def test_absurd_config_refused_before_allocation(saved):
    meta = json.loads((saved / "config.json").read_text())
    meta["model"].update(vocab_size=10**9, d_model=4096, n_heads=32, d_ff=16384)
    (saved / "config.json").write_text(json.dumps(meta))
    msg = error_of(saved)  # would need terabytes if it were built
    assert "config.json" in msg and "above the limit" in msg


def test_small_limit_refuses_small_model(saved):
    assert "above the limit of 1,000" in error_of(saved, max_parameters=1000)


def test_truncated_safetensors(saved):
    data = (saved / "model.safetensors").read_bytes()
    (saved / "model.safetensors").write_bytes(data[: len(data) // 2])
    msg = error_of(saved)
    assert "model.safetensors" in msg and "truncated or corrupted" in msg


def test_garbage_safetensors(saved):
    (saved / "model.safetensors").write_bytes(b"\x00" * 3)
    assert "truncated or corrupted" in error_of(saved)


def rewrite_weights(folder: Path, change) -> None:
    state = load_file(str(folder / "model.safetensors"))
    change(state)
    save_file(state, str(folder / "model.safetensors"))


def test_missing_tensor_is_named(saved):
    rewrite_weights(saved, lambda s: s.pop("encoder.layers.1.feed_forward.linear2.bias"))
    msg = error_of(saved)
    assert "model.safetensors" in msg and "missing 1 tensor" in msg
    assert "encoder.layers.1.feed_forward.linear2.bias" in msg


def test_unexpected_tensor_is_named(saved):
    rewrite_weights(saved, lambda s: s.update({"pooler.dense.weight": torch.zeros(2, 2)}))
    assert "pooler.dense.weight" in (msg := error_of(saved)) and "does not use" in msg


def test_shape_mismatch_names_tensor_and_both_shapes(saved):
    rewrite_weights(saved, lambda s: s.update({"encoder.layers.0.self_attn.in_proj.weight": torch.zeros(48, 8)}))
    msg = error_of(saved)
    assert "encoder.layers.0.self_attn.in_proj.weight" in msg and "(48, 8)" in msg and "(48, 16)" in msg


def test_tokenizer_larger_than_model_vocab(tmp_path):
    small = char_tokenizer()
    model = make_model(small_config("encoder", small.vocab_size))
    save_checkpoint(tmp_path, model, small)
    char_tokenizer(extra="XYZÄÖÜ").save(tmp_path / "tokenizer.json")
    msg = error_of(tmp_path)
    assert "tokenizer.json" in msg and "do not belong together" in msg


def test_corrupted_tokenizer(saved):
    (saved / "tokenizer.json").write_text("{}")
    assert "tokenizer.json" in (msg := error_of(saved)) and "not a valid tokenizer" in msg


def test_save_refuses_tokenizer_larger_than_model(tmp_path):
    tok = char_tokenizer()
    with pytest.raises(ValueError, match="more than the model"):
        save_checkpoint(tmp_path, make_model(small_config("encoder", tok.vocab_size - 1)), tok)

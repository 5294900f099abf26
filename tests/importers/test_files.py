"""What every importer shares: sharded safetensors, bf16 weights computed in float32, the registry's
refusal of unknown model types, unsupported rotary scaling, and a too-large config refused from
config.json before anything is allocated or read."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

transformers = pytest.importorskip("transformers")

import explorer
from explorer.checkpoints import CheckpointError
from explorer.importers import supported_model_types

from tests.importers.harness import (SHAPE_LLAMA, Case, batch, compare, make_case, out_proj_llama, perturb, save_folder,
                                     sentencepiece_tokenizer)

SP_CONFIG = {"add_bos_token": True, "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    config = transformers.LlamaConfig(**SHAPE_LLAMA, bos_token_id=1, eos_token_id=2)
    return make_case(transformers.LlamaForCausalLM, config, sentencepiece_tokenizer(), tmp_path_factory.mktemp("l"),
                     out_proj_llama, SP_CONFIG)


def copy_folder(src, dst, skip=()):
    dst.mkdir()
    for f in src.iterdir():
        if f.name not in skip:
            (dst / f.name).write_bytes(f.read_bytes())
    return dst


def edit_config(folder, **changes):
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(changes)
    (folder / "config.json").write_text(json.dumps(cfg))


def test_sharded_safetensors(tmp_path, llama):
    folder = copy_folder(llama.folder, tmp_path / "sharded", skip=("model.safetensors",))
    state = load_file(str(llama.folder / "model.safetensors"))
    names = sorted(state)
    shards = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
    for shard, keys in shards.items():
        save_file({k: state[k] for k in keys}, str(folder / shard))
    index = {"metadata": {}, "weight_map": {k: shard for shard, keys in shards.items() for k in keys}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    loaded = explorer.load(folder, "cpu")
    ids, mask = batch(llama)
    with torch.no_grad():
        assert torch.equal(loaded.model(ids, key_mask=mask).logits, llama.loaded.model(ids, key_mask=mask).logits)
    index["weight_map"][names[0]] = "model-00002-of-00002.safetensors"  # the index points to the wrong shard
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match=f"model-00002-of-00002.safetensors.*lacks.*{names[0]}"):
        explorer.load(folder, "cpu")


def test_bf16_weights_are_computed_in_float32(tmp_path):
    config = transformers.LlamaConfig(**SHAPE_LLAMA, bos_token_id=1, eos_token_id=2)
    hf = perturb(transformers.LlamaForCausalLM(config)).to(torch.bfloat16)
    save_folder(hf, sentencepiece_tokenizer(), tmp_path, SP_CONFIG)
    assert next(iter(load_file(str(tmp_path / "model.safetensors")).values())).dtype == torch.bfloat16
    loaded = explorer.load(tmp_path, "cpu")
    assert all(p.dtype == torch.float32 for p in loaded.model.parameters())
    reference = hf.float().eval()  # the same bf16 values, computed in float32
    reference.set_attn_implementation("eager")
    case = Case(reference, loaded, tmp_path, out_proj_llama)
    compare(case, *batch(case))


def test_unknown_model_type_lists_the_families(tmp_path, llama):
    folder = copy_folder(llama.folder, tmp_path / "xlnet")
    edit_config(folder, model_type="xlnet")
    with pytest.raises(CheckpointError) as info:
        explorer.load(folder, "cpu")
    message = str(info.value)
    assert "config.json" in message and "model_type 'xlnet' is not supported" in message
    assert all(t in message for t in supported_model_types())
    assert {"gpt2", "gpt_neox", "llama", "mistral", "qwen2", "bert", "roberta", "distilbert", "bart", "marian", "t5"} == \
        set(supported_model_types())


@pytest.mark.parametrize("scaling, named", [({"rope_type": "yarn", "factor": 4.0}, "'yarn'"),
                                            ({"type": "dynamic", "factor": 2.0}, "'dynamic'")])
def test_unsupported_rope_type_is_named(tmp_path, llama, scaling, named):
    folder = copy_folder(llama.folder, tmp_path / "rope")
    edit_config(folder, rope_parameters=None, rope_scaling=scaling)
    with pytest.raises(CheckpointError, match=f"config.json.*rope_type {named} is not supported"):
        explorer.load(folder, "cpu")


@pytest.mark.parametrize("changes", [dict(rms_norm_eps="small"), dict(num_key_value_heads=4),
                                     dict(hidden_size=None), dict(rope_parameters=[1, 2])])
def test_bad_config_values_are_checkpoint_errors(tmp_path, llama, changes):
    folder = copy_folder(llama.folder, tmp_path / "bad")
    edit_config(folder, **changes)
    with pytest.raises(CheckpointError, match="config.json"):
        explorer.load(folder, "cpu")


def test_too_large_config_refused_before_reading_anything(tmp_path, llama, monkeypatch):
    folder = copy_folder(llama.folder, tmp_path / "huge", skip=("model.safetensors",))  # no weights at all
    edit_config(folder, hidden_size=8192, intermediate_size=28672, num_hidden_layers=80, num_attention_heads=64,
                num_key_value_heads=8, head_dim=128, vocab_size=128256)  # Llama-3-70B shapes
    import explorer.importers as importers
    monkeypatch.setattr(importers, "build_empty", lambda config: pytest.fail("allocated before the check"))
    # No weights file and no model built (build_empty fails the test): the refusal reads config.json alone.
    with pytest.raises(CheckpointError, match=r"config.json.*70,553,706,496 parameters.*above the limit"):
        explorer.load(folder, "cpu")


def test_qwen25_05b_is_within_the_default_limit():
    """Qwen2.5-0.5B's config (494M parameters) passes the parameter limit; counted exactly."""
    from explorer.checkpoints import DEFAULT_MAX_PARAMETERS, estimate_parameters
    from explorer.importers.weight_plan import HFConfig
    from explorer.importers.llama import llama_config

    hf = dict(model_type="qwen2", vocab_size=151936, hidden_size=896, num_attention_heads=14, num_key_value_heads=2,
              num_hidden_layers=24, intermediate_size=4864, max_position_embeddings=32768, rope_theta=1000000.0,
              rms_norm_eps=1e-6, tie_word_embeddings=True, hidden_act="silu", use_sliding_window=False,
              sliding_window=32768, max_window_layers=21, bos_token_id=151643, eos_token_id=151643)
    config = llama_config(HFConfig(hf, None, "Qwen2"))
    assert estimate_parameters(config) == 494_032_768 < DEFAULT_MAX_PARAMETERS
    with torch.device("meta"):
        theirs = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**hf))
    assert estimate_parameters(config) == sum(p.numel() for p in theirs.parameters())


def header_only(path, header: dict, data: bytes = b"") -> None:
    body = json.dumps(header, separators=(",", ":")).encode()
    path.write_bytes(len(body).to_bytes(8, "little") + body + data)


def test_a_weights_header_of_300000_tensors_is_refused_before_the_library_parses_it(tmp_path, llama, monkeypatch):
    """The header is bounded (explorer.file_reads.MODEL_HEADER) before safetensors reads it: 8 bytes read, a short
    message naming the file, no server path."""
    from explorer.importers import files
    from tests.reads import count_reads

    folder = copy_folder(llama.folder, tmp_path / "many", skip=("model.safetensors",))
    header = {f"t{i}": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]} for i in range(300_000)}
    header_only(folder / "model.safetensors", header, bytes(4 * 300_000))
    monkeypatch.setattr(files, "safe_open", lambda *a, **k: pytest.fail("the library parsed the header"))
    reads = count_reads(monkeypatch)
    with pytest.raises(CheckpointError) as info:
        explorer.load(folder, "cpu")
    message = str(info.value)
    assert "model.safetensors in many has a header of" in message and "above the limit of 4,194,304" in message
    assert len(message) < 300 and str(tmp_path) not in message, message
    assert reads["model.safetensors"] == 8


def test_a_shard_index_nested_deep_is_refused_by_name(tmp_path, llama):
    folder = copy_folder(llama.folder, tmp_path / "deep", skip=("model.safetensors",))
    (folder / "model.safetensors.index.json").write_text('{"weight_map": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(CheckpointError, match="model.safetensors.index.json in deep nests .* more than 64 levels"):
        explorer.load(folder, "cpu")


def test_a_tokenizer_config_above_its_limit_is_refused_by_name(tmp_path, llama):
    folder = copy_folder(llama.folder, tmp_path / "tok")
    cfg = json.loads((folder / "tokenizer_config.json").read_text())
    cfg["chat_template"] = "x" * (33 * 1024 * 1024)
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match="tokenizer_config.json in tok is larger than 32 MiB"):
        explorer.load(folder, "cpu")

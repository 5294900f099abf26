"""explorer.file_reads: every JSON file is read at most its limit + 1 bytes and measured for depth before parsing; a
safetensors header is bounded before any library parses it; messages name the file by its folder's name, never the
server's path, and list a few names. Bounds are asserted in bytes read (tests/reads.py), never in time."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from explorer import file_reads
from explorer.file_reads import (JSON_LIMITS, MAX_JSON_DEPTH, MODEL_HEADER, SAE_HEADER, CheckpointError, describe,
                                 few, json_depth, read_card, read_json, read_text, safetensors_header)
from tests.reads import count_reads


def refusal(call, *args) -> str:
    with pytest.raises(CheckpointError) as err:
        call(*args)
    return str(err.value)


def no_server_path(message: str, tmp_path: Path) -> bool:
    return str(tmp_path) not in message and "/tmp" not in message


# ------------------------------------------------------------------------------------------ JSON
def test_a_config_above_its_limit_is_refused_after_limit_plus_one_bytes(tmp_path, monkeypatch):
    path = tmp_path / "model" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"model_type": "gpt2", "pad": "x" * (3 * JSON_LIMITS["config"])}))  # valid JSON, 3 MiB
    reads = count_reads(monkeypatch)
    msg = refusal(read_json, path)
    assert "config.json in model" in msg and "larger than 1 MiB" in msg and "config file" in msg, msg
    assert reads["config.json"] == JSON_LIMITS["config"] + 1  # never the whole file
    assert no_server_path(msg, tmp_path), msg


def test_each_kind_of_file_has_its_limit(tmp_path):
    path = tmp_path / "vocab.json"
    path.write_text(json.dumps({f"piece{i}": i for i in range(100_000)}))  # 1.9 MB: a tokenizer vocabulary
    assert len(read_json(path, "tokenizer")) == 100_000
    assert "larger than 1 MiB" in refusal(read_json, path, "config")


def test_a_config_nested_200000_deep_is_refused_by_name_before_parsing(tmp_path, monkeypatch):
    path = tmp_path / "sae" / "cfg.json"
    path.parent.mkdir()
    path.write_text('{"d_in": ' + "[" * 200_000 + "]" * 200_000 + "}")
    with pytest.raises(RecursionError):  # what json does with it: an error that names no file
        json.loads(path.read_text())
    parsed = []
    monkeypatch.setattr(file_reads.json, "loads", lambda *a, **k: parsed.append(1))
    msg = refusal(read_json, path)
    assert "cfg.json in sae" in msg and f"more than {MAX_JSON_DEPTH} levels deep" in msg, msg
    assert parsed == []  # measured, not parsed


@pytest.mark.parametrize("text, depth", [
    ("{}", 1), ("[[1], [2, [3]]]", 3), ('{"a": "[[[[[["}', 1), (r'{"a": "\"[[[", "b": [[]]}', 3),
    ('"', 0), ('[[["unterminated', 3), ("", 0), ('"\\\\"[[]]', 2),
])
def test_depth_counts_brackets_outside_strings(text, depth):
    assert json_depth(text) == depth


def test_depth_equals_the_structure_of_real_files():
    tokenizer_like = {"model": {"vocab": {"[": 0, "{": 1, '"': 2}, "merges": [["a", "b"]]}, "added_tokens": [{}]}
    assert json_depth(json.dumps(tokenizer_like)) == 4


def test_a_number_of_5000_digits_is_refused_by_name(tmp_path):
    path = tmp_path / "sae" / "cfg.json"
    path.parent.mkdir()
    path.write_text('{"d_sae": ' + "9" * 5000 + "}")
    msg = refusal(read_json, path)
    assert "cfg.json in sae" in msg and "4,300 digits" in msg and "set_int_max_str_digits" not in msg, msg


@pytest.mark.parametrize("content, words", [
    (b"{not json", "not valid JSON"), (b"\xff\xfe{}", "not UTF-8"), (b"[1, 2]", "must hold a JSON object"),
])
def test_broken_json_is_named(tmp_path, content, words):
    path = tmp_path / "m" / "tokenizer_config.json"
    path.parent.mkdir()
    path.write_bytes(content)
    msg = refusal(read_json, path, "tokenizer")
    assert "tokenizer_config.json in m" in msg and words in msg, msg


def test_a_tokenizer_file_is_read_within_bounds_for_its_library(tmp_path, monkeypatch):
    path = tmp_path / "m" / "tokenizer.json"
    path.parent.mkdir()
    path.write_bytes(b'{"a": "' + b"x" * (JSON_LIMITS["tokenizer"] + 10) + b'"}')
    reads = count_reads(monkeypatch)
    assert "larger than 32 MiB" in refusal(read_text, path)
    assert reads["tokenizer.json"] == JSON_LIMITS["tokenizer"] + 1
    path.write_text("[" * 1000 + "]" * 1000)
    assert "levels deep" in refusal(read_text, path)


def test_a_card_is_cut_not_refused(tmp_path, monkeypatch):
    path = tmp_path / "README.md"
    path.write_text("# card\n" + "x" * (2 * file_reads.CARD_BYTES))
    reads = count_reads(monkeypatch)
    card = read_card(path)
    assert card.startswith("# card") and "cut at 1 MiB" in card
    assert reads["README.md"] == file_reads.CARD_BYTES + 1
    assert read_card(tmp_path / "absent.md") is None


# ------------------------------------------------------------------------------------------ safetensors headers
def raw_safetensors(path: Path, header: dict, data: bytes = b"") -> Path:
    body = json.dumps(header, separators=(",", ":")).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(struct.pack("<Q", len(body)) + body + data)
    return path


def many_tensors(n: int) -> tuple[dict, bytes]:
    """A valid header of n one-value float32 tensors, and their bytes."""
    return {f"t{i}": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]} for i in range(n)}, bytes(4 * n)


def test_a_header_of_300000_tensors_is_refused_unparsed_in_a_short_message(tmp_path, monkeypatch):
    header, data = many_tensors(300_000)
    path = raw_safetensors(tmp_path / "m" / "model.safetensors", header, data)
    reads = count_reads(monkeypatch)
    msg = refusal(safetensors_header, path, MODEL_HEADER)
    assert "model.safetensors in m" in msg and "header of" in msg and "above the limit of 4,194,304" in msg, msg
    assert reads["model.safetensors"] == 8  # its length, nothing more
    assert len(msg) < 300 and no_server_path(msg, tmp_path), msg


def test_a_header_listing_too_many_tensors_names_a_few(tmp_path, monkeypatch):
    header, data = many_tensors(12_000)  # 0.7 MB: within the bytes, beyond the count
    path = raw_safetensors(tmp_path / "m" / "model.safetensors", header, data)
    msg = refusal(safetensors_header, path, MODEL_HEADER)
    assert "lists 12,000 tensors, above the limit of 10,000" in msg and "(and 11,995 more)" in msg, msg
    assert len(msg) < 400, msg
    header, data = many_tensors(9)
    assert "lists 9 tensors, above the limit of 8 for an SAE's file" in refusal(
        safetensors_header, raw_safetensors(tmp_path / "s" / "sae_weights.safetensors", header, data), SAE_HEADER)


def test_a_header_longer_than_its_file_is_truncated(tmp_path):
    path = tmp_path / "m" / "model.safetensors"
    path.parent.mkdir()
    path.write_bytes((2**60).to_bytes(8, "little") + b"{}")
    msg = refusal(safetensors_header, path)
    assert "truncated or corrupted" in msg and "1,152,921,504,606,846,976 bytes" in msg, msg


def test_a_header_nested_deep_is_refused_as_corrupted(tmp_path):
    body = b"[" * 100_000 + b"]" * 100_000
    path = tmp_path / "m" / "model.safetensors"
    path.parent.mkdir()
    path.write_bytes(len(body).to_bytes(8, "little") + body)
    msg = refusal(safetensors_header, path)
    assert "levels deep" in msg and "truncated or corrupted" in msg, msg


def test_a_real_file_reads_back(tmp_path):
    path = tmp_path / "ok.safetensors"
    save_file({"a": torch.zeros(2, 3), "b": torch.ones(4)}, str(path), metadata={"format": "pt"})
    header, start = safetensors_header(path, SAE_HEADER)
    assert header["a"]["shape"] == [2, 3] and header["__metadata__"] == {"format": "pt"}
    assert start == 8 + int.from_bytes(path.read_bytes()[:8], "little")


# ------------------------------------------------------------------------------------------ messages
@pytest.mark.parametrize("path, shown", [
    ("/srv/models/my-model/config.json", "config.json in my-model"),
    ("/root/.cache/huggingface/hub/models--owner--name/snapshots/0123abc/cfg.json", "cfg.json in owner/name"),
    ("/c/hub/models--jbloom--GPT2-SAEs/snapshots/0123abc/blocks.8.hook_resid_pre/cfg.json",
     "cfg.json in jbloom/GPT2-SAEs/blocks.8.hook_resid_pre"),
    ("config.json", "config.json"),
])
def test_describe_names_the_file_and_its_folder_only(path, shown):
    assert describe(Path(path)) == shown


def test_few_lists_a_few_names():
    assert few(["a", "b"]) == "a, b"
    assert few([str(i) for i in range(300_000)]) == "0, 1, 2, 3, 4 (and 299,995 more)"
    assert len(few(["x" * 10_000])) == 80

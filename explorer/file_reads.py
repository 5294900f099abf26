"""Reading the files of a model or SAE folder within bounds, with one error type and messages without server paths.

Any file a loader reads may come from a visitor (a Hub repo, a folder inside --allow-dir), so:

- a JSON file is read at most `limit + 1` bytes (never the whole file first), the limit set by the kind of file
  (JSON_LIMITS); its nesting is measured before it is parsed (json's C parser recurses once per level: a file nested
  200,000 deep ends in a RecursionError that names no file); a number of more than 4,300 digits is refused by name;
- a safetensors header is read by its 8-byte length first: above a byte limit it is refused unread, then the tensors
  it lists are counted before any library parses it (HeaderLimits: a model's, an SAE's);
- a model card is read at most CARD_BYTES, the rest cut off;
- every refusal is a CheckpointError whose message names the file by its name and its folder's name (`describe`),
  never the server's absolute path, and lists at most a few names (`few`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

MiB = 1024 * 1024
# Bytes of a JSON file, by kind. A real config is a few KB (GPT-2's config.json 665 bytes, the shipped checkpoints'
# 3-9 KB, an SAE's cfg.json 1-5 KB); tokenizer files hold a vocabulary (Marian's vocab.json 1-2 MB, Llama 3's
# tokenizer.json 9 MB, XLM-R's 17 MB); a shard index lists every tensor's file (a few hundred KB for 70B models).
JSON_LIMITS = {"config": 1 * MiB, "tokenizer": 32 * MiB, "index": 16 * MiB}
MAX_JSON_DEPTH = 64  # real files nest 3-7 levels (tokenizer.json's deepest); Python's own limit is ~1,000
CARD_BYTES = 1 * MiB  # README.md shown beside the model: model cards are 2-50 KB
MAX_SHOWN = 5  # names a message lists before "and N more"


class CheckpointError(Exception):
    """A checkpoint folder cannot be loaded; the message names the file and the problem."""


@dataclass(frozen=True)
class HeaderLimits:
    """What a safetensors header may hold: its bytes and the tensors it lists."""

    max_bytes: int
    max_tensors: int
    kind: str  # "a model's weights", for messages


# The largest model the Python API loads (2e9 parameters) has under 1,000 tensors (Qwen2-1.5B: 338), ~150 bytes of
# header each: 10,000 tensors and 4 MiB leave room for long names and metadata. An SAE file holds 1-6 tensors.
MODEL_HEADER = HeaderLimits(4 * MiB, 10_000, "a model's weights file")
SAE_HEADER = HeaderLimits(64 * 1024, 8, "an SAE's file")

_STRING = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'  # a complete JSON string; possessive: linear time, no backtracking
_COMPLETE = re.compile(rf'(?:[^"]++|{_STRING})*+')  # text up to the first string that never ends
_STRINGS = re.compile(_STRING)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]++")
_CHUNK = 1 << 20  # brackets measured at a time (bounded memory for a file of brackets)


# ------------------------------------------------------------------------------------------ messages
def describe(path: Path) -> str:
    """'config.json in my-model': the file and its folder by name, never the server's absolute path. A file of a
    Hugging Face cache is named by its repo ('cfg.json in owner/name/layer-8')."""
    path = Path(path)
    parts = path.parts
    if "snapshots" in parts[:-2]:
        at = len(parts) - 1 - parts[::-1].index("snapshots")  # the last "snapshots": models--o--n/snapshots/<rev>
        repo = parts[at - 1]
        if repo.startswith(("models--", "datasets--", "spaces--")) and at + 2 < len(parts):
            where = "/".join([repo.split("--", 1)[1].replace("--", "/"), *parts[at + 2:-1]])
            return f"{path.name} in {where}"
    return f"{path.name} in {path.parent.name}" if path.parent.name else path.name


def few(names: list[str], k: int = MAX_SHOWN) -> str:
    """'a, b, c, d, e (and 3 more)': a message names a few, whatever the file lists."""
    shown = ", ".join(str(n)[:80] for n in names[:k])
    return shown + (f" (and {len(names) - k:,} more)" if len(names) > k else "")


def reason(err: BaseException) -> str:
    """What went wrong, without the path an OSError carries in its text."""
    if isinstance(err, OSError):
        return err.strerror or type(err).__name__
    return str(err)[:300]


def file_kind(kind: str) -> str:
    """'a config file', 'an index file': a kind of JSON_LIMITS in the words a message says it."""
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind} file"


def require_file(path: Path) -> Path:
    if not Path(path).is_file():
        raise CheckpointError(f"missing file {describe(path)}")
    return path


# ------------------------------------------------------------------------------------------ reading
def read_bounded(path: Path, max_bytes: int, what: str) -> bytes:
    """The file's bytes, reading at most max_bytes + 1 of them; CheckpointError when there are more."""
    require_file(path)
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as err:
        raise CheckpointError(f"{describe(path)} cannot be read: {reason(err)}") from err
    if len(data) > max_bytes:
        raise CheckpointError(f"{describe(path)} is larger than {max_bytes / MiB:g} MiB, the limit for {what}")
    return data


def check_size(path: Path, kind: str) -> Path:
    """For a file a library reads itself (a BERT vocab.txt): CheckpointError when it is above JSON_LIMITS[kind]."""
    require_file(path)
    try:
        size = Path(path).stat().st_size
    except OSError as err:
        raise CheckpointError(f"{describe(path)} cannot be read: {reason(err)}") from err
    if size > JSON_LIMITS[kind]:
        raise CheckpointError(f"{describe(path)} is larger than {JSON_LIMITS[kind] / MiB:g} MiB, the limit for "
                              f"{file_kind(kind)}")
    return path


def json_depth(text: str, stop_above: int = MAX_JSON_DEPTH) -> int:
    """How deep the JSON text's arrays and objects nest (brackets inside strings do not count), found without parsing
    it; the count stops early above `stop_above`. Text after a string that never ends is not looked at: the parser
    stops there too."""
    end = _COMPLETE.match(text).end()
    brackets = _NOT_BRACKETS.sub("", _STRINGS.sub("", text[:end])).encode("ascii")
    depth = peak = 0
    for start in range(0, len(brackets), _CHUNK):
        chunk = np.frombuffer(brackets, dtype=np.uint8, count=min(_CHUNK, len(brackets) - start), offset=start)
        steps = np.where((chunk == ord("[")) | (chunk == ord("{")), 1, -1).astype(np.int32)
        running = np.cumsum(steps, dtype=np.int64) + depth
        peak, depth = max(peak, int(running.max())), int(running[-1])
        if peak > stop_above:
            break
    return peak


def parse_json(data: bytes, path: Path, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """JSON bytes -> Python value; CheckpointError naming the file when it is not UTF-8 JSON or nests too deep."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CheckpointError(f"{describe(path)} is not valid JSON: it is not UTF-8 text ({err.reason} at byte "
                              f"{err.start})") from err
    if json_depth(text, max_depth) > max_depth:
        raise CheckpointError(f"{describe(path)} nests arrays or objects more than {max_depth} levels deep, the limit "
                              "(a real file nests a few)")
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise CheckpointError(f"{describe(path)} is not valid JSON: {err}") from err
    except ValueError as err:  # int("9" * 5000): Python refuses numbers of more than 4,300 digits
        why = "it holds a number of more than 4,300 digits" if "digits" in str(err) else reason(err)
        raise CheckpointError(f"{describe(path)} is not valid JSON: {why}") from err
    except RecursionError as err:  # cannot happen below MAX_JSON_DEPTH; kept as a guard
        raise CheckpointError(f"{describe(path)} nests too deep to be read") from err


def read_json(path: Path, kind: str = "config") -> dict[str, Any]:
    """A JSON object file within JSON_LIMITS[kind] bytes and MAX_JSON_DEPTH levels, or CheckpointError naming the file
    (missing, too large, too deep, not JSON, not an object)."""
    data = parse_json(read_bounded(path, JSON_LIMITS[kind], file_kind(kind)), path)
    if not isinstance(data, dict):
        raise CheckpointError(f"{describe(path)} must hold a JSON object, found {type(data).__name__}")
    return data


def read_text(path: Path, kind: str = "tokenizer") -> str:
    """A JSON file's text within its limits (size, depth; not parsed), for a library that parses it itself."""
    data = read_bounded(path, JSON_LIMITS[kind], file_kind(kind))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CheckpointError(f"{describe(path)} is not UTF-8 text ({err.reason} at byte {err.start})") from err
    if json_depth(text) > MAX_JSON_DEPTH:
        raise CheckpointError(f"{describe(path)} nests arrays or objects more than {MAX_JSON_DEPTH} levels deep, the "
                              "limit (a real file nests a few)")
    return text


def read_card(path: Path) -> str | None:
    """README.md's text (its first CARD_BYTES), or None when there is none."""
    if not Path(path).is_file():
        return None
    try:
        with open(path, "rb") as f:
            data = f.read(CARD_BYTES + 1)
    except OSError:
        return None  # a card is only shown: an unreadable one is no reason to refuse the model
    cut = len(data) > CARD_BYTES
    text = data[:CARD_BYTES].decode("utf-8", errors="replace")
    return text + (f"\n\n… (the card is cut at {CARD_BYTES // MiB} MiB)" if cut else "")


class Header(NamedTuple):
    """A safetensors header: tensor name -> {dtype, shape, data_offsets} (and "__metadata__"), and where the tensors'
    bytes begin in the file (data_offsets count from there)."""

    tensors: dict[str, Any]
    data_start: int


def safetensors_header(path: Path, limits: HeaderLimits = MODEL_HEADER) -> Header:
    """The header of a .safetensors file, read within `limits`: its length first, then at most that many bytes;
    CheckpointError when it is too long, lists too many tensors, or is not a JSON object."""
    require_file(path)
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            size = int.from_bytes(head, "little")
            file_size = f.seek(0, 2)
            if len(head) < 8 or size > file_size - 8:
                raise CheckpointError(f"{describe(path)} is truncated or corrupted: its header says {size:,} bytes in "
                                      f"a file of {file_size:,}")
            if size > limits.max_bytes:
                raise CheckpointError(f"{describe(path)} has a header of {size:,} bytes, above the limit of "
                                      f"{limits.max_bytes:,} for {limits.kind} (a header lists the tensors' names and "
                                      "shapes)")
            f.seek(8)
            raw = f.read(size)
    except OSError as err:
        raise CheckpointError(f"{describe(path)} cannot be read: {reason(err)}") from err
    try:
        header = parse_json(raw, path)
    except CheckpointError as err:
        raise CheckpointError(f"{err} (in its header: the file is truncated or corrupted)") from err
    if not isinstance(header, dict):
        raise CheckpointError(f"{describe(path)} is truncated or corrupted: its header is not a JSON object")
    names = [k for k in header if k != "__metadata__"]
    if len(names) > limits.max_tensors:
        raise CheckpointError(f"{describe(path)} lists {len(names):,} tensors, above the limit of "
                              f"{limits.max_tensors:,} for {limits.kind}: {few(names)}")
    return Header(header, 8 + size)

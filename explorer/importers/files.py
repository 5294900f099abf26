"""The tensors of a Hugging Face model folder, read one at a time, in float32 on the CPU.

A folder holds `model.safetensors`, or a sharded `model.safetensors.index.json` with its shards, or
(only when there are no safetensors) `pytorch_model.bin`, read with `torch.load(weights_only=True)`:
plain tensors and containers, never arbitrary pickled objects.

Each safetensors file's header is read within bounds first (explorer.file_reads.MODEL_HEADER: its bytes, its tensors),
then checked once by the `safetensors` library; then each tensor is read with
plain file reads when asked for (its bytes, at the offsets of the file's header), not through a memory
map, so an importer holds at most the model being filled plus the few tensors it is combining, and
the file never sits in the process's memory as well (a 0.5B bf16 model needs its float32 size,
2 GB, not that plus the 1 GB file). bf16 / fp16 / fp64 tensors are converted to float32 as they are read.
"""

from __future__ import annotations

import math
import pickle
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

import torch
from safetensors import SafetensorError, safe_open
from torch import Tensor

from ..checkpoints import CheckpointError, describe, read_json, require_file
from ..file_reads import MODEL_HEADER, few, reason, safetensors_header

SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
PICKLE_FILE = "pytorch_model.bin"
DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
          "BOOL": torch.bool}


class Entry(NamedTuple):
    """Where one tensor's bytes are in a safetensors file."""

    path: Path
    dtype: torch.dtype
    shape: tuple[int, ...]
    start: int  # absolute byte offset in the file
    nbytes: int


def read_header(path: Path) -> dict[str, Entry]:
    """Tensor name -> Entry, the header read within MODEL_HEADER (its bytes, its tensors) and then validated against
    the file by the safetensors library."""
    header, data_start = safetensors_header(path, MODEL_HEADER)
    try:
        with safe_open(str(path), framework="pt", device="cpu") as f:  # validates the header against the file
            names = set(f.keys())
    except (SafetensorError, OSError, ValueError) as err:
        raise CheckpointError(f"{describe(path)} is truncated or corrupted (safetensors: {reason(err)})") from err
    entries = {}
    for name in names:
        info = header[name]
        if info["dtype"] not in DTYPES:
            raise CheckpointError(f"{describe(path)}: tensor {name} has dtype {info['dtype']}, which cannot be loaded")
        dtype, shape = DTYPES[info["dtype"]], tuple(info["shape"])
        begin, end = info["data_offsets"]
        if end - begin != math.prod(shape) * dtype.itemsize:
            raise CheckpointError(f"{describe(path)}: tensor {name} has {end - begin} bytes for shape {shape}")
        entries[name] = Entry(path, dtype, shape, data_start + begin, end - begin)
    return entries


def refused_global(err: Exception) -> str:
    """The one useful fact in torch's long weights_only refusal: which global it would have run."""
    found = re.search(r"Unsupported global: GLOBAL ([\w.]+)", str(err))
    return f": it asks for {found.group(1)}" if found else ""


def read_pickled_state(path: Path) -> dict[str, Tensor]:
    """pytorch_model.bin with weights_only=True: tensors and plain containers only, no code."""
    require_file(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        raise CheckpointError(f"refused to unpickle {describe(path)} (not plain tensors{refused_global(err)}); "
                              "convert it to model.safetensors") from err
    except (RuntimeError, EOFError, OSError, ValueError) as err:
        raise CheckpointError(f"{describe(path)} is truncated or corrupted: {reason(err)}") from err
    if isinstance(state, Mapping) and "state_dict" in state and isinstance(state["state_dict"], Mapping):
        state = state["state_dict"]
    if not isinstance(state, Mapping) or not all(isinstance(v, Tensor) for v in state.values()):
        raise CheckpointError(f"{describe(path)} does not hold a flat dictionary of tensors")
    return dict(state)


def as_float32(tensor: Tensor) -> Tensor:
    return tensor.float() if tensor.is_floating_point() else tensor


class WeightFiles:
    """Name -> tensor of a folder's weights. `path` is the file named in messages."""

    def __init__(self, folder: Path):
        single, index, pickled = folder / SAFETENSORS_FILE, folder / SAFETENSORS_INDEX, folder / PICKLE_FILE
        self.pickled: dict[str, Tensor] | None = None
        self.entries: dict[str, Entry] = {}
        if single.is_file():
            self.path = single
            self.entries = read_header(single)
            self.files = {name: single for name in self.entries}
        elif index.is_file():
            self.path = index
            self.files = self.shard_map(folder, index)
        elif pickled.is_file():
            self.path = pickled
            self.pickled = read_pickled_state(pickled)
            self.files = {name: pickled for name in self.pickled}
        else:
            raise CheckpointError(f"missing file {SAFETENSORS_FILE} (or {PICKLE_FILE}) in {folder.name}")

    def shard_map(self, folder: Path, index: Path) -> dict[str, Path]:
        weight_map = read_json(index, "index").get("weight_map")
        if not isinstance(weight_map, dict):
            raise CheckpointError(f"{describe(index)} has no \"weight_map\" object")
        files: dict[str, Path] = {}
        for shard in sorted(set(map(str, weight_map.values()))):
            if Path(shard).name != shard:  # a shard name must not walk out of the folder
                raise CheckpointError(f"{describe(index)} names a shard outside the folder: {shard!r}")
            listed = {name for name, s in weight_map.items() if str(s) == shard}
            present = read_header(folder / shard)
            if listed - set(present):
                raise CheckpointError(f"{describe(folder / shard)} lacks tensor(s) the index puts there: "
                                      f"{few(sorted(listed - set(present)))}")
            files.update({name: folder / shard for name in listed})
            self.entries.update({name: present[name] for name in listed})
        return files

    @property
    def names(self) -> list[str]:
        return sorted(self.files)

    def __contains__(self, name: object) -> bool:
        return name in self.files

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def get(self, name: str) -> Tensor:
        """One tensor, read now, in float32 (integer tensors as stored)."""
        if self.pickled is not None:
            return as_float32(self.pickled[name])
        entry = self.entries[name]
        data = torch.empty(entry.nbytes, dtype=torch.uint8)
        try:
            with open(entry.path, "rb") as f:
                f.seek(entry.start)
                got = f.readinto(memoryview(data.numpy()))
        except OSError as err:
            raise CheckpointError(f"{describe(entry.path)} cannot be read: {reason(err)}") from err
        if got != entry.nbytes:
            raise CheckpointError(f"{describe(entry.path)} is truncated: tensor {name} ends past the end of the file")
        return as_float32(data.view(entry.dtype).reshape(entry.shape))  # safetensors is little-endian, as torch here

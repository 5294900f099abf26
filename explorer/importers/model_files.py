"""The small files of a Hugging Face model (config.json, tokenizer.json, tokenizer_config.json, Marian's .spm and
vocab.json, sentence-transformers' 1_Pooling/config.json), wherever they come from: what every importer reads
besides the weights.

    FolderFiles(folder)          a folder on disk, each file read within the bounds of explorer.file_reads
    MemoryFiles(label, files)    the same files made in memory from live `transformers` objects
                                 (explorer.importers.live); nothing is written to disk

Both answer the same questions (`has`, `json`, `text`, `data`, and `path` for messages), so one importer reads a
saved folder and a model object alike. A message names a file as `describe(path)` does: "config.json in my-model",
or "config.json in GPT2LMHeadModel (in memory)", never the server's absolute path.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..checkpoints import CheckpointError, describe, read_json
from ..file_reads import JSON_LIMITS, file_kind, read_bounded, read_text


class FolderFiles:
    """A model folder's small files, read when asked for, within explorer.file_reads' bounds."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.name = self.folder.name  # the model's name when config.json has no _name_or_path

    def path(self, name: str) -> Path:
        return self.folder / name

    def has(self, name: str) -> bool:
        return (self.folder / name).is_file()

    def json(self, name: str, kind: str = "config") -> dict[str, Any]:
        return read_json(self.folder / name, kind)

    def text(self, name: str, kind: str = "tokenizer") -> str:
        return read_text(self.folder / name, kind)

    def data(self, name: str, kind: str = "tokenizer") -> bytes:
        return read_bounded(self.folder / name, JSON_LIMITS[kind], file_kind(kind))


class MemoryFiles:
    """Files made in memory: name -> a dict (a JSON file), str (text) or bytes. `label` stands for the folder in
    messages ("GPT2LMHeadModel (in memory)")."""

    def __init__(self, label: str, files: Mapping[str, dict | str | bytes]):
        self.name = label
        self.files = dict(files)

    def path(self, name: str) -> Path:
        return Path(self.name) / name

    def has(self, name: str) -> bool:
        return name in self.files

    def get(self, name: str) -> dict | str | bytes:
        if name not in self.files:
            raise CheckpointError(f"missing file {describe(self.path(name))}")
        return self.files[name]

    def json(self, name: str, kind: str = "config") -> dict[str, Any]:
        value = self.get(name)
        if isinstance(value, (str, bytes)):
            value = json.loads(value)
        return copy.deepcopy(value)  # a reader may change what it is given; the next reader sees the original

    def text(self, name: str, kind: str = "tokenizer") -> str:
        value = self.get(name)
        if isinstance(value, dict):
            return json.dumps(value)
        return value.decode("utf-8") if isinstance(value, bytes) else value

    def data(self, name: str, kind: str = "tokenizer") -> bytes:
        value = self.get(name)
        return value if isinstance(value, bytes) else self.text(name).encode("utf-8")


ModelFiles = FolderFiles | MemoryFiles

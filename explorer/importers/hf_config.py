"""A Hugging Face model's config.json, read with errors that name the file and the family: what every importer and
the tokenizer loader (explorer.importers.tokenizer_files) read of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..checkpoints import CheckpointError, describe
from ..model import TransformerConfig
from .files import WeightFiles

# what a plan reads tensors from: a folder's WeightFiles or a live model's tensors (live.StateWeights), both with
# `names`, `in`, `get(name)` (float32) and `path` (the file named in messages)
Weights = Any

# transformers' ACT2FN names -> ours (only those computing the same function)
HF_ACTIVATIONS = {"gelu": "gelu", "gelu_python": "gelu", "relu": "relu", "gelu_new": "gelu_tanh",
                  "gelu_pytorch_tanh": "gelu_tanh", "gelu_fast": "gelu_tanh", "silu": "silu", "swish": "silu"}


class HFConfig:
    """config.json of a Hugging Face model, with errors that name the file and the family."""

    def __init__(self, data: Mapping[str, Any], path: Path, family: str, folder: Path | None = None,
                 weights: Weights | None = None):
        self.data, self.path, self.family = dict(data), path, family
        self.folder = folder  # where the weights are, for families whose config depends on the heads present
        self._weights: Weights | None = weights  # given: a live model's tensors (explorer.importers.live)

    def weights(self) -> Weights:
        """The weights given, else the folder's weight files (headers read once, on first use)."""
        if self._weights is None:
            if self.folder is None:
                raise self.error("no folder given to read the weights from")
            self._weights = WeightFiles(self.folder)
        return self._weights

    def has_tensors(self, *names: str) -> bool:
        """True when the checkpoint holds every one of `names` (full names: heads sit outside the body prefix)."""
        if self.folder is None and self._weights is None:
            return False
        try:
            present = set(self.weights().names)
        except CheckpointError:  # missing or broken weights are reported later, after the parameter limit
            return False
        return all(name in present for name in names)

    def int_field(self, name: str, default: int | None = None) -> int | None:
        value = self.get(name, default)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise self.error(f"{name}={value!r} must be an integer")
        return value

    def error(self, message: str) -> CheckpointError:
        return CheckpointError(f"{describe(self.path)}: {message}")

    def get(self, name: str, default: Any = None) -> Any:
        value = self.data.get(name)
        return default if value is None else value

    def require(self, *names: str) -> Any:
        """The first of `names` present (transformers renamed some fields over the years)."""
        for name in names:
            if self.data.get(name) is not None:
                return self.data[name]
        raise CheckpointError(f"{describe(self.path)} has no \"{names[0]}\"; it is not a complete {self.family} "
                              f"configuration")

    def activation(self, name: str, default: str) -> str:
        """The activation under `name` (transformers' default for the family when absent), in our spelling."""
        act = self.get(name, default)
        if act not in HF_ACTIVATIONS:
            raise self.error(f"{name}={act!r} is not supported; the explorer computes "
                             f"{', '.join(sorted(HF_ACTIVATIONS))}")
        return HF_ACTIVATIONS[act]

    def token_id(self, name: str) -> int | None:
        value = self.data.get(name)
        if isinstance(value, list):  # eos_token_id may list several ids; the first is the usual one
            value = value[0] if value else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def pad_id(self) -> int | None:
        """pad_token_id, unless it is the BOS or EOS token (masking those as padding would hide real tokens)."""
        pad = self.token_id("pad_token_id")
        return None if pad in (self.token_id("bos_token_id"), self.token_id("eos_token_id")) else pad

    def build(self, **fields: Any) -> TransformerConfig:
        """TransformerConfig(**fields); its ValueError (naming the field) becomes a CheckpointError."""
        try:
            return TransformerConfig(**fields)
        except (ValueError, TypeError) as err:
            raise self.error(f"invalid {self.family} configuration: {err}") from err

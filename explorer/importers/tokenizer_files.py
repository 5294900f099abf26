"""The tokenizer of a Hugging Face model (a folder's files, or their stand-ins made in memory from a live
`transformers` tokenizer: explorer.importers.model_files): tokenizer.json through `tokenizers`, with the
special tokens and the BOS rule of its tokenizer_config.json.

- Roles (bos, eos, pad, unk) come from tokenizer_config.json ("bos_token": "<s>" or
  {"content": "<s>"}), then from config.json's *_token_id, then from the usual spellings.
- BOS: when tokenizer_config.json says "add_bos_token": true and the tokenizer.json post-processor
  does not add it already (transformers v5 rebuilds the post-processor from that flag), it is added.
- A model without a padding token (GPT-2, Llama) pads batches with its EOS token; which positions
  are padding is then said by the batch's mask, never by the id (see `Tokenizer.encode_batch`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tokenizers

from ..checkpoints import CheckpointError, describe
from ..tokenizer import Tokenizer
from .hf_config import HFConfig
from .model_files import ModelFiles


TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
ROLE_KEYS = {"bos": "bos_token", "eos": "eos_token", "pad": "pad_token", "unk": "unk_token"}


def token_string(value: Any) -> str | None:
    """"<s>" or {"content": "<s>", ...} (an AddedToken saved by transformers) -> "<s>"."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) and value else None


def special_roles(backend: tokenizers.Tokenizer, tok_cfg: dict[str, Any], cfg: HFConfig) -> dict[str, str]:
    roles: dict[str, str] = {}
    for role, key in ROLE_KEYS.items():
        token = token_string(tok_cfg.get(key))
        if token is None and cfg.token_id(f"{key}_id") is not None:
            token = backend.id_to_token(cfg.token_id(f"{key}_id"))
        if token is not None and backend.token_to_id(token) is not None:
            roles[role] = token
    return roles


def tokenizer_config(files: ModelFiles) -> dict[str, Any]:
    """tokenizer_config.json, or {} when there is none."""
    return files.json(TOKENIZER_CONFIG, "tokenizer") if files.has(TOKENIZER_CONFIG) else {}


def read_backend(files: ModelFiles, name: str = TOKENIZER_FILE) -> tokenizers.Tokenizer:
    """tokenizer.json (or `name`) -> a new `tokenizers.Tokenizer` (CheckpointError naming the file)."""
    text = files.text(name, "tokenizer")  # a folder's within the tokenizer files' size and depth
    try:
        return tokenizers.Tokenizer.from_str(text)
    except Exception as err:  # tokenizers raises plain Exception subclasses for bad files
        raise CheckpointError(f"{describe(files.path(name))} is not a valid tokenizer file: {err}") from err


def load_hf_tokenizer(files: ModelFiles, cfg: HFConfig) -> tuple[Tokenizer, Path]:
    """tokenizer.json + tokenizer_config.json -> our Tokenizer (CheckpointError naming the file)."""
    path, tok_cfg_path = files.path(TOKENIZER_FILE), files.path(TOKENIZER_CONFIG)
    backend = read_backend(files)
    tok_cfg = tokenizer_config(files)
    tokenizer = Tokenizer(backend, specials=special_roles(backend, tok_cfg, cfg))
    if "pad" not in tokenizer.specials and "eos" in tokenizer.specials:
        tokenizer.specials["pad"] = tokenizer.specials["eos"]  # a filler only: the batch mask says what is padding
    if tok_cfg.get("add_bos_token") is True:
        try:
            tokenizer = tokenizer.with_bos()
        except ValueError as err:
            raise CheckpointError(f"{describe(tok_cfg_path)} asks for add_bos_token, but {err}") from err
    return tokenizer, path

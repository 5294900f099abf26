"""The explorer's checkpoint format: save a model with its tokenizer(s) and load it back bit-exactly.

A checkpoint is a folder:

    config.json          {"format_version": 1, "model": TransformerConfig.to_dict(), "task": {...},
                          "special_tokens": {"pad": 0, ...}, "tgt_tokenizer": "tgt_tokenizer.json" | null}
    model.safetensors    every persistent tensor once (no pickle); a tied output projection
                         (generator.proj.weight = tgt_embed.token.weight, mlm.proj.weight =
                         src_embed.token.weight) and a shared decoder embedding (tgt_embed = src_embed)
                         are stored only as the embedding and re-tied on load; non-persistent buffers
                         (the sinusoidal table) are rebuilt from the config
    tokenizer.json       the (source) tokenizer
    tgt_tokenizer.json   only when the target vocabulary differs from the source one
    README.md            a model card

Every problem with a folder (a missing file, a corrupted tensor file, a wrong tensor name or
shape, a bad config, a tokenizer larger than the model's vocabulary, an absurd size) raises one
exception type, `CheckpointError`, whose message names the file and says what is wrong.
The helpers below (`read_safetensors`, `check_*`, and `read_json` from explorer.file_reads, which bounds every file
read) are shared with the importers.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

import tokenizers
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file
from torch import Tensor

from .device import pick_device
from .file_reads import (  # noqa: F401 (CheckpointError, describe, require_file, read_json: read from here too)
    MODEL_HEADER,
    CheckpointError,
    HeaderLimits,
    describe,
    few,
    read_card,
    read_json,
    read_text,
    reason,
    require_file,
    safetensors_header,
)
from .model import Transformer, TransformerConfig
from .tokenizer import Tokenizer

FORMAT_VERSION = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"
TGT_TOKENIZER_FILE = "tgt_tokenizer.json"
CARD_FILE = "README.md"
DEFAULT_MAX_PARAMETERS = 2_000_000_000  # the Python API's limit; the UI passes a smaller one
TIED_KEY = "generator.proj.weight"  # stored as tgt_embed.token.weight when tie_embeddings


@dataclass
class LoadedModel:
    model: Transformer  # eval mode, on the chosen device
    tokenizer: Tokenizer  # None only from explorer.from_transformers(model) without a tokenizer: token ids only
    tgt_tokenizer: Tokenizer | None  # None = the target side uses `tokenizer`
    task: dict[str, Any]
    source: str  # human-readable origin: "shipped checkpoint x", "local folder /x", "Hugging Face Hub repo@rev"
    card: str | None = None  # README.md text, if any
    notes: list[str] = field(default_factory=list)  # e.g. tensors ignored by the BERT import

    @property
    def config(self) -> TransformerConfig:
        return self.model.config

    @property
    def arch(self) -> str:
        return self.model.config.arch

    @property
    def target_tokenizer(self) -> Tokenizer:
        return self.tgt_tokenizer if self.tgt_tokenizer is not None else self.tokenizer

    @property
    def labels(self) -> list[str] | None:
        return self.task.get("labels")


# ------------------------------------------------------------------------------------------ shared helpers
def safetensors_shapes(path: Path, limits: HeaderLimits = MODEL_HEADER) -> dict[str, tuple[int, ...]]:
    """Tensor names and shapes from the header only (nothing is read into memory), the header within `limits`."""
    safetensors_header(path, limits)  # bounded first: the library would parse a header of any length
    try:
        with safe_open(str(path), framework="pt") as f:
            return {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}
    except (SafetensorError, OSError, ValueError) as err:
        raise CheckpointError(f"{describe(path)} is truncated or corrupted (safetensors: {reason(err)})") from err


def read_safetensors(path: Path, limits: HeaderLimits = MODEL_HEADER, names: Collection[str] | None = None
                     ) -> dict[str, Tensor]:
    """The tensors of a .safetensors file (all, or `names`) on the CPU, or CheckpointError if it is
    truncated/corrupted or its header is beyond `limits`."""
    safetensors_header(path, limits)
    try:
        with safe_open(str(path), framework="pt", device="cpu") as f:
            return {k: f.get_tensor(k) for k in f.keys() if names is None or k in names}
    except (SafetensorError, OSError, ValueError, RuntimeError) as err:
        raise CheckpointError(f"{describe(path)} is truncated or corrupted (safetensors: {reason(err)})") from err


def make_config(data: Any, path: Path) -> TransformerConfig:
    """TransformerConfig from a dict, wrapping its ValueError with the config file's path."""
    if not isinstance(data, Mapping):
        raise CheckpointError(f"{describe(path)}: \"model\" must be an object with the model's configuration")
    try:
        return TransformerConfig.from_dict(dict(data))
    except (ValueError, TypeError) as err:
        raise CheckpointError(f"{describe(path)}: invalid model configuration: {err}") from err


def tied_keys(config: TransformerConfig) -> set[str]:
    """State-dict names that are another tensor under a second name (stored once, re-tied on load)."""
    keys = set()
    if config.share_embeddings:
        keys.add("tgt_embed.token.weight")
    if config.tie_embeddings:
        keys.add("mlm.proj.weight" if config.arch == "encoder" else TIED_KEY)
    return keys


def estimate_parameters(config: TransformerConfig) -> int:
    """Parameter count of Transformer(config), computed from the config without allocating anything."""
    c = config
    D, F, Dh = c.d_model, c.d_ff, c.resolved_head_dim
    q_width, kv_width = c.n_heads * Dh, c.resolved_kv_heads * Dh
    norm = 2 * D if c.norm == "layernorm" else D  # RMSNorm has a gain and no bias
    attention = D * (q_width + 2 * kv_width) + q_width * D
    attention += (q_width + 2 * kv_width) * c.qkv_bias + D * c.out_bias
    ups = 2 if c.mlp == "gated" else 1  # gate and up, or up alone
    feed_forward = ups * (D * F + F * c.mlp_bias) + F * D + D * c.mlp_bias

    def embeddings(vocab: int, shared: bool = False) -> int:
        return ((0 if shared else vocab * D) + (c.position_rows * D if c.positional == "learned" else 0)
                + c.type_vocab_size * D + (norm if c.embedding_norm else 0))

    final = norm if c.resolved_final_norm else 0
    relative = c.relative_buckets * c.n_heads if c.positional == "relative" else 0  # one table per stack
    total = 0
    if c.arch != "decoder":
        total += embeddings(c.vocab_size) + c.encoder_layers * (attention + feed_forward + 2 * norm) + final + relative
    if c.arch != "encoder":
        tgt_vocab = c.resolved_tgt_vocab_size if c.arch == "encoder-decoder" else c.vocab_size
        cross = attention + norm if c.arch == "encoder-decoder" else 0
        total += embeddings(tgt_vocab, c.share_embeddings) + relative + final
        total += c.decoder_layers * (attention + feed_forward + 2 * norm + cross)
        total += tgt_vocab * c.lm_head_bias + (0 if c.tie_embeddings else tgt_vocab * D)  # generator
    if c.num_classes:
        total += D * c.classifier_hidden + c.classifier_hidden + c.classifier_hidden * c.num_classes + c.num_classes
    if c.mlm_head:  # dense, norm, bias over the vocabulary, and its own projection unless tied
        total += D * D + D + norm + c.vocab_size + (0 if c.tie_embeddings else c.vocab_size * D)
    return total


def estimate_position_table(config: TransformerConfig) -> int:
    """Values in the sinusoidal tables (a buffer, not a parameter, but memory all the same)."""
    if config.positional != "sinusoidal":
        return 0
    tables = (config.arch != "decoder") + (config.arch != "encoder")
    return tables * config.max_len * config.d_model


def check_parameter_limit(config: TransformerConfig, max_parameters: float | None, path: Path) -> int:
    """Refuse an absurd configuration before a single tensor is allocated.

    The sinusoidal position tables count against the same limit: a tiny model with max_len=10**9
    would otherwise allocate gigabytes before any weight is read.
    """
    count = estimate_parameters(config)
    table = estimate_position_table(config)
    if max_parameters is not None and count + table > max_parameters:
        what = f"{count:,} parameters" + (f" plus {table:,} position-table values (max_len={config.max_len})"
                                           if table else "")
        raise CheckpointError(f"{describe(path)} describes a model of {what}, above the limit of "
                              f"{int(max_parameters):,}; refusing to build it")
    return count


def check_tokenizer_vocab(tokenizer: Tokenizer, model_vocab: int, path: Path, what: str = "vocab_size") -> None:
    """A tokenizer may use fewer ids than the model's embedding (padding rows), never more."""
    if tokenizer.vocab_size > model_vocab:
        raise CheckpointError(f"{describe(path)} has a vocabulary of {tokenizer.vocab_size} tokens but the model's "
                              f"{what} is {model_vocab}: tokenizer and weights do not belong together")


def load_tokenizer_file(path: Path) -> Tokenizer:
    text = read_text(path, "tokenizer")  # within the tokenizer files' size and depth
    try:
        return Tokenizer(tokenizers.Tokenizer.from_str(text))
    except Exception as err:  # tokenizers raises plain Exception subclasses for bad files
        raise CheckpointError(f"{describe(path)} is not a valid tokenizer file: {err}") from err


def expected_state_keys(model: Transformer) -> dict[str, tuple[int, ...]]:
    """Names and shapes the weights file must hold: the state dict minus the tied names."""
    tied = tied_keys(model.config)
    return {k: tuple(v.shape) for k, v in model.state_dict().items() if k not in tied}


def check_state_names_and_shapes(found: Mapping[str, tuple[int, ...]], expected: Mapping[str, tuple[int, ...]],
                                 path: Path) -> None:
    missing = sorted(set(expected) - set(found))
    if missing:
        raise CheckpointError(f"{describe(path)} is missing {len(missing)} tensor(s) the model needs: {few(missing)}")
    unexpected = sorted(set(found) - set(expected))
    if unexpected:
        raise CheckpointError(f"{describe(path)} has {len(unexpected)} tensor(s) this model does not use: "
                              f"{few(unexpected)}")
    for name, shape in expected.items():
        if tuple(found[name]) != tuple(shape):
            raise CheckpointError(f"{describe(path)}: tensor {name} has shape {tuple(found[name])}, the config "
                                  f"expects {tuple(shape)}")


def build_empty(config: TransformerConfig) -> Transformer:
    """Transformer(config) with its parameters on the meta device: shapes only, no memory and no
    random initialisation (seconds for a 0.5B model); `load_state` then assigns the real tensors."""
    with torch.device("meta"):
        return Transformer(config)


def load_state(model: Transformer, state: Mapping[str, Tensor], path: Path) -> None:
    """Put a checked state dict into `model` (built by `build_empty` or not): the tensors are assigned,
    not copied, in float32; the tied projection is re-tied; nothing may be left on the meta device."""
    check_state_names_and_shapes({k: tuple(v.shape) for k, v in state.items()}, expected_state_keys(model), path)
    state = {k: v.float() if v.is_floating_point() else v for k, v in state.items()}
    missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    model.tie_weights()
    leftover = [k for k in missing if k not in tied_keys(model.config)]
    leftover += [name for name, t in [*model.named_parameters(), *model.named_buffers()] if t.is_meta]
    if leftover or unexpected:  # cannot happen after the check above; kept as a guard
        raise CheckpointError(f"{describe(path)}: could not load {few(sorted(set(leftover)) + list(unexpected))}")


# ------------------------------------------------------------------------------------------ save
def special_token_ids(tokenizer: Tokenizer) -> dict[str, int]:
    ids = {role: tokenizer.token_to_id(tok) for role, tok in tokenizer.specials.items()}
    return {role: i for role, i in ids.items() if i is not None}


def default_card(model: Transformer, task: Mapping[str, Any]) -> str:
    c = model.config
    name = task.get("name", "model")
    lines = [f"# {name}", "", str(task.get("description", "A Transformer checkpoint saved by Transformer Explorer.")),
             "", "| field | value |", "| --- | --- |", f"| architecture | {c.arch} |",
             f"| parameters | {model.num_parameters():,} |", f"| layers | {c.encoder_layers} encoder, "
             f"{c.decoder_layers} decoder |", f"| d_model / heads / d_ff | {c.d_model} / {c.n_heads} / {c.d_ff} |",
             f"| positional | {c.positional} |", f"| norm | {'pre' if c.norm_first else 'post'}-norm |", "",
             "Files: config.json (configuration and task), model.safetensors (weights), tokenizer.json.", ""]
    return "\n".join(lines)


def save_checkpoint(folder: str | PathLike, model: Transformer, tokenizer: Tokenizer, *,
                    tgt_tokenizer: Tokenizer | None = None, task: dict[str, Any] | None = None,
                    card: str | None = None) -> Path:
    """Write `model` and its tokenizer(s) into `folder` (created if needed); returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config = model.config
    task = dict(task or {})
    tgt_vocab = config.resolved_tgt_vocab_size if config.arch == "encoder-decoder" else config.vocab_size
    if tokenizer.vocab_size > config.vocab_size:
        raise ValueError(f"tokenizer has {tokenizer.vocab_size} tokens, more than the model's vocab_size "
                         f"{config.vocab_size}")
    if tgt_tokenizer is not None and tgt_tokenizer.vocab_size > tgt_vocab:
        raise ValueError(f"target tokenizer has {tgt_tokenizer.vocab_size} tokens, more than the model's target "
                         f"vocabulary {tgt_vocab}")

    state = model.state_dict()
    for key in tied_keys(config):
        state.pop(key, None)  # same storage as a token embedding: saved once, re-tied on load
    # contiguous CPU copies: safetensors stores raw bytes and refuses shared or strided storage
    tensors = {k: v.detach().to("cpu").contiguous().clone() for k, v in state.items()}
    save_file(tensors, str(folder / WEIGHTS_FILE), metadata={"format": "pt", "format_version": str(FORMAT_VERSION)})

    tokenizer.save(folder / TOKENIZER_FILE)
    if tgt_tokenizer is not None:
        tgt_tokenizer.save(folder / TGT_TOKENIZER_FILE)
    elif (folder / TGT_TOKENIZER_FILE).exists():
        (folder / TGT_TOKENIZER_FILE).unlink()  # a stale one from an earlier save would be misread
    meta = {
        "format_version": FORMAT_VERSION,
        "model": config.to_dict(),
        "task": task,
        "special_tokens": special_token_ids(tokenizer),
        "tgt_special_tokens": special_token_ids(tgt_tokenizer) if tgt_tokenizer is not None else None,
        "tgt_tokenizer": TGT_TOKENIZER_FILE if tgt_tokenizer is not None else None,
        "parameters": model.num_parameters(),
    }
    (folder / CONFIG_FILE).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (folder / CARD_FILE).write_text(card if card is not None else default_card(model, task), encoding="utf-8")
    return folder


# ------------------------------------------------------------------------------------------ load
def load_checkpoint(folder: str | PathLike, device: str | torch.device | None = None, *,
                    max_parameters: float | None = DEFAULT_MAX_PARAMETERS, source: str | None = None) -> LoadedModel:
    """Load a folder written by `save_checkpoint` onto `device` (default: `pick_device()`), in eval mode."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CheckpointError(f"checkpoint folder {folder.name} does not exist")
    config_path = folder / CONFIG_FILE
    meta = read_json(config_path)
    version = meta.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise CheckpointError(f"{describe(config_path)} has no integer \"format_version\"; it is not an explorer "
                              f"checkpoint")
    if version > FORMAT_VERSION:
        raise CheckpointError(f"{describe(config_path)} has format_version {version}, newer than this explorer "
                              f"reads ({FORMAT_VERSION}); upgrade the explorer")
    config = make_config(meta.get("model"), config_path)
    check_parameter_limit(config, max_parameters, config_path)
    task = meta.get("task") or {}
    if not isinstance(task, dict):
        raise CheckpointError(f"{describe(config_path)}: \"task\" must be an object")

    tokenizer_path = folder / TOKENIZER_FILE
    tokenizer = load_tokenizer_file(tokenizer_path)
    check_tokenizer_vocab(tokenizer, config.vocab_size, tokenizer_path)
    tgt_tokenizer = None
    if meta.get("tgt_tokenizer"):
        tgt_path = folder / TGT_TOKENIZER_FILE
        tgt_tokenizer = load_tokenizer_file(tgt_path)
        check_tokenizer_vocab(tgt_tokenizer, config.resolved_tgt_vocab_size, tgt_path, "tgt_vocab_size")
    elif config.arch == "encoder-decoder":
        check_tokenizer_vocab(tokenizer, config.resolved_tgt_vocab_size, tokenizer_path, "tgt_vocab_size")

    weights_path = folder / WEIGHTS_FILE
    model = build_empty(config)
    # names and shapes from the header first: a wrong file fails before its tensors are read
    check_state_names_and_shapes(safetensors_shapes(weights_path), expected_state_keys(model), weights_path)
    load_state(model, read_safetensors(weights_path), weights_path)
    model = model.to(pick_device(device)).eval()
    card_path = folder / CARD_FILE
    card = read_card(card_path)
    return LoadedModel(model, tokenizer, tgt_tokenizer, task, source or f"local folder {folder.resolve()}", card)

"""Import a BERT-family checkpoint in the Hugging Face layout into the explorer's encoder, and
turn its outputs into sentence embeddings.

A folder holds config.json (model_type "bert"), model.safetensors (or a sharded
model.safetensors.index.json, or pytorch_model.bin, read only with
`torch.load(weights_only=True)`: plain tensors, never arbitrary pickled objects) and
tokenizer.json or vocab.txt. BERT is a post-norm encoder with learned positions, token-type
embeddings and a LayerNorm on the summed embeddings, so it maps one to one onto
`TransformerConfig(arch="encoder", norm_first=False, positional="learned", embedding_norm=True)`;
the only reshaping is packing the separate query/key/value projections into `in_proj` ([Wq; Wk; Wv]).
Pooler and pre-training heads (MLM, NSP) are not part of the encoder and are ignored (listed in
`LoadedModel.notes` and `task["ignored_tensors"]`).

Shapes: B batch, T tokens, D hidden size.
    mean_pool(last_hidden_state (B, T, D), key_mask (B, T) bool) -> (B, D)
    cosine_similarity(a (N, D), b (M, D)) -> (N, M);  (D,), (D,) -> scalar
"""

from __future__ import annotations

import json
import pickle
import re
from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from .checkpoints import (
    CONFIG_FILE,
    DEFAULT_MAX_PARAMETERS,
    CheckpointError,
    LoadedModel,
    check_parameter_limit,
    check_tokenizer_vocab,
    describe,
    load_state,
    load_tokenizer_file,
    read_json,
    read_safetensors,
    require_file,
)
from .device import pick_device
from .model import Transformer, TransformerConfig
from .tokenizer import Tokenizer

SAFETENSORS_FILE = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
PICKLE_FILE = "pytorch_model.bin"
SUPPORTED_MODEL_TYPES = ("bert",)
ACTIVATIONS = {"gelu": "gelu", "relu": "relu"}  # exact (erf) GELU only; tanh approximations differ
# Tensors of the body we do not model (the pooler feeds only the NSP / classification heads).
IGNORED_BODY = re.compile(r"^(pooler\.|embeddings\.position_ids$)")

EXAMPLE_PAIRS = [
    ("A man is playing a guitar.", "Someone plays an instrument."),
    ("The cat sits on the mat.", "A dog runs in the park."),
    ("How do I reset my password?", "I forgot my login password."),
    ("The weather is lovely today.", "Stock prices fell sharply this morning."),
]


# ------------------------------------------------------------------------------------------ config
def bert_config(hf: Mapping[str, Any], path: Path) -> TransformerConfig:
    """Hugging Face BertConfig dict -> TransformerConfig (CheckpointError names config.json on a problem)."""
    def get(name: str, default: Any = None) -> Any:
        if name not in hf and default is None:
            raise CheckpointError(f"{describe(path)} has no \"{name}\"; it is not a complete BERT configuration")
        return hf.get(name, default)

    act = get("hidden_act", "gelu")
    if act not in ACTIVATIONS:
        raise CheckpointError(f"{describe(path)}: hidden_act={act!r} is not supported; the explorer's encoder has "
                              f"exact GELU and ReLU ({', '.join(ACTIVATIONS)})")
    pos_type = hf.get("position_embedding_type", "absolute")
    if pos_type != "absolute":
        raise CheckpointError(f"{describe(path)}: position_embedding_type={pos_type!r} is not supported (only "
                              f"absolute learned positions)")
    if hf.get("is_decoder") or hf.get("add_cross_attention"):
        raise CheckpointError(f"{describe(path)}: a BERT used as a decoder (is_decoder / add_cross_attention) "
                              f"is not supported")
    pad = hf.get("pad_token_id")
    try:
        return TransformerConfig(
            arch="encoder", vocab_size=get("vocab_size"), d_model=get("hidden_size"),
            n_heads=get("num_attention_heads"), n_layers=get("num_hidden_layers"), d_ff=get("intermediate_size"),
            max_len=get("max_position_embeddings"), norm_first=False, final_norm=False, positional="learned",
            activation=ACTIVATIONS[act], layer_norm_eps=float(hf.get("layer_norm_eps", 1e-12)),
            type_vocab_size=hf.get("type_vocab_size", 2), embedding_norm=True, pad_id=0 if pad is None else pad,
            dropout=float(hf.get("hidden_dropout_prob", 0.1)),
            attention_dropout=float(hf.get("attention_probs_dropout_prob", 0.1)),
            ffn_dropout=0.0, bias=True)  # BERT's intermediate (feed-forward) block has no dropout inside
    except (ValueError, TypeError) as err:
        raise CheckpointError(f"{describe(path)}: invalid BERT configuration: {err}") from err


# ------------------------------------------------------------------------------------------ weights
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
        raise CheckpointError(f"{describe(path)} is truncated or corrupted: {err}") from err
    if isinstance(state, Mapping) and "state_dict" in state and isinstance(state["state_dict"], Mapping):
        state = state["state_dict"]
    if not isinstance(state, Mapping) or not all(isinstance(v, Tensor) for v in state.values()):
        raise CheckpointError(f"{describe(path)} does not hold a flat dictionary of tensors")
    return dict(state)


def read_bert_weights(folder: Path) -> tuple[dict[str, Tensor], Path]:
    """Tensors from model.safetensors, its sharded index, or (only without those) pytorch_model.bin."""
    single, index, pickled = folder / SAFETENSORS_FILE, folder / SAFETENSORS_INDEX, folder / PICKLE_FILE
    if single.is_file():
        return read_safetensors(single), single
    if index.is_file():
        weight_map = read_json(index).get("weight_map")
        if not isinstance(weight_map, dict):
            raise CheckpointError(f"{describe(index)} has no \"weight_map\" object")
        state: dict[str, Tensor] = {}
        for shard in sorted(set(weight_map.values())):
            shard_path = folder / str(shard)
            if Path(str(shard)).name != str(shard):  # a shard name must not walk out of the folder
                raise CheckpointError(f"{describe(index)} names a shard outside the folder: {shard!r}")
            state.update(read_safetensors(shard_path))
        return state, index
    if pickled.is_file():
        return read_pickled_state(pickled), pickled
    raise CheckpointError(f"missing file {SAFETENSORS_FILE} (or {PICKLE_FILE}) in {folder}")


LAYER_MAP = {  # Hugging Face name inside encoder.layer.i -> explorer name inside encoder.layers.i
    "attention.output.dense": "self_attn.out_proj",
    "attention.output.LayerNorm": "attn_sublayer.norm",
    "intermediate.dense": "feed_forward.linear1",
    "output.dense": "feed_forward.linear2",
    "output.LayerNorm": "ff_sublayer.norm",
}
EMBEDDING_MAP = {
    "embeddings.word_embeddings": "src_embed.token",
    "embeddings.position_embeddings": "src_embed.position",
    "embeddings.token_type_embeddings": "src_embed.token_type",
    "embeddings.LayerNorm": "src_embed.norm",
}
LAYER_KEY = re.compile(r"^encoder\.layer\.(\d+)\.(.+)\.(weight|bias)$")


def normalise_names(state: Mapping[str, Tensor]) -> tuple[dict[str, Tensor], list[str]]:
    """Strip the "bert." prefix (heads outside it are ignored), rename gamma/beta -> weight/bias."""
    body: dict[str, Tensor] = {}
    ignored: list[str] = []
    prefixed = any(k.startswith("bert.") for k in state)
    for key, value in state.items():
        if prefixed:
            if not key.startswith("bert."):
                ignored.append(key)  # cls.predictions.*, cls.seq_relationship.*, classifier.*, ...
                continue
            key = key[len("bert."):]
        key = re.sub(r"\.gamma$", ".weight", re.sub(r"\.beta$", ".bias", key))  # TF-era LayerNorm names
        if IGNORED_BODY.match(key):
            ignored.append(("bert." if prefixed else "") + key)
            continue
        body[key] = value
    return body, sorted(ignored)


def map_bert_state(state: Mapping[str, Tensor], config: TransformerConfig,
                   path: Path) -> tuple[dict[str, Tensor], list[str]]:
    """Hugging Face BertModel tensors -> explorer Transformer state dict, and the ignored names."""
    body, ignored = normalise_names(state)
    out: dict[str, Tensor] = {}
    qkv: dict[tuple[int, str], dict[str, Tensor]] = {}
    unexpected: list[str] = []
    for key, value in body.items():
        stem, _, leaf = key.rpartition(".")
        if stem in EMBEDDING_MAP:
            out[f"{EMBEDDING_MAP[stem]}.{leaf}"] = value
            continue
        m = LAYER_KEY.match(key)
        if m:
            i, inner, leaf = int(m.group(1)), m.group(2), m.group(3)
            if inner in LAYER_MAP:
                out[f"encoder.layers.{i}.{LAYER_MAP[inner]}.{leaf}"] = value
                continue
            part = inner.removeprefix("attention.self.")
            if inner.startswith("attention.self.") and part in ("query", "key", "value"):
                qkv.setdefault((i, leaf), {})[part] = value
                continue
        unexpected.append(key)
    if unexpected:
        raise CheckpointError(f"{describe(path)} has {len(unexpected)} tensor(s) that are not part of a BERT encoder: "
                              f"{', '.join(sorted(unexpected)[:5])}")
    for (i, leaf), parts in sorted(qkv.items()):
        missing = [p for p in ("query", "key", "value") if p not in parts]
        if missing:
            raise CheckpointError(f"{describe(path)} is missing tensor(s) "
                                  f"{', '.join(f'encoder.layer.{i}.attention.self.{p}.{leaf}' for p in missing)}")
        shapes = {tuple(parts[p].shape) for p in parts}
        if len(shapes) != 1:
            raise CheckpointError(f"{describe(path)}: query/key/value {leaf} of layer {i} have different shapes "
                                  f"{sorted(shapes)}")
        # in_proj packs [Wq; Wk; Wv] along the output dimension (rows), as torch.nn.MultiheadAttention
        out[f"encoder.layers.{i}.self_attn.in_proj.{leaf}"] = torch.cat(
            [parts["query"], parts["key"], parts["value"]], dim=0)
    return out, ignored


# ------------------------------------------------------------------------------------------ tokenizer
def load_bert_tokenizer(folder: Path) -> tuple[Tokenizer, Path]:
    """tokenizer.json if present, else vocab.txt (lowercasing from tokenizer_config.json, default on)."""
    tok_json, vocab = folder / "tokenizer.json", folder / "vocab.txt"
    if tok_json.is_file():
        return load_tokenizer_file(tok_json), tok_json
    if vocab.is_file():
        lowercase = True
        cfg = folder / "tokenizer_config.json"
        if cfg.is_file():
            lowercase = bool(read_json(cfg).get("do_lower_case", True))
        try:
            return Tokenizer.from_vocab_txt(vocab, lowercase=lowercase), vocab
        except Exception as err:  # tokenizers raises plain Exception subclasses
            raise CheckpointError(f"{describe(vocab)} is not a valid WordPiece vocabulary: {err}") from err
    raise CheckpointError(f"missing file tokenizer.json (or vocab.txt) in {folder}")


def pooling_mode(folder: Path) -> str:
    """sentence-transformers' 1_Pooling/config.json says mean or CLS pooling; mean by default."""
    path = folder / "1_Pooling" / "config.json"
    if path.is_file():
        try:
            cfg = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return "mean"
        if isinstance(cfg, dict) and cfg.get("pooling_mode_cls_token") and not cfg.get("pooling_mode_mean_tokens"):
            return "cls"
    return "mean"


# ------------------------------------------------------------------------------------------ load
def load_bert(folder: str | PathLike, device: str | torch.device | None = None, *,
              max_parameters: float | None = DEFAULT_MAX_PARAMETERS, source: str | None = None) -> LoadedModel:
    """Load a Hugging Face BERT folder into an explorer encoder (eval mode, on `device` or pick_device())."""
    folder = Path(folder)
    config_path = folder / CONFIG_FILE
    hf = read_json(config_path)
    model_type = hf.get("model_type")
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise CheckpointError(f"{describe(config_path)}: model_type {model_type!r} is not supported; the explorer "
                              f"imports {', '.join(SUPPORTED_MODEL_TYPES)} models")
    config = bert_config(hf, config_path)
    check_parameter_limit(config, max_parameters, config_path)
    tokenizer, tok_path = load_bert_tokenizer(folder)
    check_tokenizer_vocab(tokenizer, config.vocab_size, tok_path)
    if tokenizer.pad_id is not None and tokenizer.pad_id != config.pad_id:
        raise CheckpointError(f"{describe(tok_path)} pads with id {tokenizer.pad_id} but {describe(config_path)} "
                              f"says pad_token_id={config.pad_id}")

    state, weights_path = read_bert_weights(folder)
    mapped, ignored = map_bert_state(state, config, weights_path)
    model = Transformer(config)
    load_state(model, mapped, weights_path)  # names (missing ones listed) and shapes checked here
    model = model.to(pick_device(device)).eval()

    pooling = pooling_mode(folder)
    name = hf.get("_name_or_path") or folder.name
    task = {
        "name": "sentence-embedding",
        "pooling": pooling,
        "description": f"BERT-family encoder ({name}): type sentences to see each layer's and head's attention; "
                       f"sentence embeddings are the {pooling} of the last layer's token vectors, compared by "
                       f"cosine similarity.",
        "examples": [s for pair in EXAMPLE_PAIRS for s in pair],
        "pairs": [list(pair) for pair in EXAMPLE_PAIRS],
        "pad_id": config.pad_id,
        "cls_id": tokenizer.cls_id,
        "sep_id": tokenizer.sep_id,
        "model_type": model_type,
        "ignored_tensors": ignored,
    }
    notes = [f"ignored {len(ignored)} tensor(s) not used by the encoder: {', '.join(ignored[:6])}"
             + (" ..." if len(ignored) > 6 else "")] if ignored else []
    card_path = folder / "README.md"
    card = card_path.read_text(encoding="utf-8", errors="replace") if card_path.is_file() else None
    return LoadedModel(model, tokenizer, None, task, source or f"local folder {folder.resolve()}", card, notes)


# ------------------------------------------------------------------------------------------ embeddings
def mean_pool(last_hidden_state: Tensor, key_mask: Tensor | None) -> Tensor:
    """(B, T, D) token vectors, (B, T) True = real token -> (B, D) mean over real tokens."""
    if key_mask is None:
        return last_hidden_state.mean(dim=1)
    m = key_mask.to(last_hidden_state.dtype).unsqueeze(-1)  # (B, T, 1)
    return (last_hidden_state * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)


def cls_pool(last_hidden_state: Tensor, key_mask: Tensor | None = None) -> Tensor:
    """(B, T, D) -> (B, D) the first ([CLS]) token's vector."""
    return last_hidden_state[:, 0]


def cosine_similarity(a: Tensor, b: Tensor) -> Tensor:
    """(N, D) x (M, D) -> (N, M) cosine similarities; two (D,) vectors -> a scalar tensor."""
    if a.dim() == 1 and b.dim() == 1:
        return F.cosine_similarity(a, b, dim=0)
    a2, b2 = F.normalize(a.reshape(-1, a.shape[-1]), dim=-1), F.normalize(b.reshape(-1, b.shape[-1]), dim=-1)
    return a2 @ b2.T


@torch.inference_mode()
def embed(loaded: LoadedModel, texts: Sequence[str], max_length: int | None = None) -> Tensor:
    """Sentence embeddings (B, D) of `texts` with the task's pooling (mean by default)."""
    batch = loaded.tokenizer.encode_batch(list(texts), max_length=max_length or loaded.config.max_len)
    ids = torch.tensor(batch.ids, device=loaded.model.device)  # (B, T)
    mask = torch.tensor(batch.mask, device=loaded.model.device)  # (B, T) True = real token
    out = loaded.model(ids, need_weights=False)
    pool = cls_pool if loaded.task.get("pooling") == "cls" else mean_pool
    return pool(out.last_hidden_state, mask)

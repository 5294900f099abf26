"""A `transformers` model already in memory -> the explorer's model: `from_transformers(model, tokenizer=None)`
gives the `LoadedModel` that `explorer.load` gives for the folder `model.save_pretrained` (and the tokenizer's
`save_pretrained`) would write, without writing anything: the same importer (`explorer.importers.import_hf`, the
family's plan) reads the model's config and tensors from the object instead of from files.

What is read from the object:
- config.json: `model.config.to_json_string(use_diff=True)`, the text save_pretrained writes;
- the weights: `model.state_dict()` under the names save_pretrained writes (a tied tensor once; transformers v5's
  renamings reverted, by transformers' own functions), each tensor used as it is where the family's plan takes it unchanged (token
  and position embeddings, norms, output projections, feed-forward weights, most biases): those tensors are
  *shared* with the transformers model (same storage; nothing copied). A tensor the plan builds is a copy: q, k and
  v stacked into our one in_proj (every family), GPT-2's Conv1D weights (transposed), GPT-NeoX's interleaved
  query_key_value (regrouped). A model in float16 / bfloat16 is copied whole to float32 (the explorer computes in
  float32), as loading its folder would; a model split over devices is gathered on one (copies);
- the tokenizer: a fast tokenizer's `backend_tokenizer` (a `tokenizers.Tokenizer`; a copy is taken, so the
  caller's tokenizer is never changed) with its special tokens as tokenizer_config.json would hold them; a
  `tokenizers.Tokenizer` itself; Marian's `MarianTokenizer` (its two SentencePiece models and vocabulary). Without a
  tokenizer the model takes token ids only (task "ids-only": no text, no token labels).

The returned model is in eval mode whatever mode the transformers model is in (which is left as it is); it lives on
the transformers model's device unless `device` says otherwise (then its tensors are copies there). Changing the
shared weights in place (training the transformers model further) changes the explorer's model too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from ..checkpoints import DEFAULT_MAX_PARAMETERS, CheckpointError, LoadedModel, describe
from ..device import pick_device
from . import import_hf
from .model_files import MemoryFiles

ROLES = ("bos_token", "eos_token", "unk_token", "pad_token", "mask_token")


class StateWeights:
    """A live model's tensors, read as a folder's WeightFiles are: name -> tensor in float32 (integers as they
    are) on `device`; a tensor already in float32 on `device` is returned itself, not copied."""

    def __init__(self, state: Mapping[str, Tensor], path: Path, device: torch.device):
        self.state, self.path, self.device = dict(state), path, device

    @property
    def names(self) -> list[str]:
        return sorted(self.state)

    def __contains__(self, name: object) -> bool:
        return name in self.state

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def get(self, name: str) -> Tensor:
        tensor = self.state[name]
        if tensor.is_meta:
            raise CheckpointError(f"{describe(self.path)}: tensor {name} is on the meta device (never loaded, or "
                                  "offloaded to disk): load the model's weights into memory first")
        dtype = torch.float32 if tensor.is_floating_point() else tensor.dtype
        return tensor.to(device=self.device, dtype=dtype)  # the tensor itself when nothing changes


def once(state: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """The state dict with each tied tensor under its first name only (lm_head.weight is GPT-2's wte.weight), as
    save_pretrained stores it once."""
    seen: set[tuple] = set()
    kept = {}
    for name, tensor in state.items():
        key = (tensor.device, tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tuple(tensor.shape),
               tensor.stride()) if not tensor.is_meta else (name,)
        if key not in seen:
            seen.add(key)
            kept[name] = tensor
    return kept


def saved_state(model: torch.nn.Module) -> dict[str, Tensor]:
    """`model.state_dict()` under the names save_pretrained writes: tied tensors once, and transformers v5's
    renamings reverted (GPT-NeoX's `lm_head` is saved as `embed_out`), by transformers' own functions for both
    where it has them (v5); before v5 the names in memory are the saved ones."""
    state = model.state_dict()
    for key in getattr(model, "_keys_to_ignore_on_save", None) or ():
        state.pop(key, None)
    try:
        from transformers.core_model_loading import revert_weight_conversion
        from transformers.modeling_utils import remove_tied_weights_from_state_dict
    except ImportError:
        return once(state)
    return dict(revert_weight_conversion(model, remove_tied_weights_from_state_dict(state, model)))


def check_model(model: Any) -> None:
    """TypeError unless `model` looks like a transformers model (a torch module with a config that saves)."""
    config = getattr(model, "config", None)
    if not isinstance(model, torch.nn.Module) or not hasattr(config, "to_json_string"):
        raise TypeError(f"from_transformers takes a transformers model (a PreTrainedModel such as "
                        f"GPT2LMHeadModel); got {type(model).__name__}")


def config_json(model: Any) -> dict[str, Any]:
    """What save_pretrained writes to config.json, and the name the model was loaded under."""
    data = json.loads(model.config.to_json_string(use_diff=True))
    name = getattr(model.config, "name_or_path", "") or ""
    if name:
        data["_name_or_path"] = name
    return data


def own_device(model: torch.nn.Module) -> torch.device:
    """The device of the model's first tensor (CPU for a model without any)."""
    first = next(iter(model.state_dict().values()), None)
    return torch.device("cpu") if first is None or first.is_meta else first.device


def tokenizer_files(tokenizer: Any) -> dict[str, dict | str | bytes]:
    """The files save_pretrained would write for `tokenizer` that the importers read, made in memory."""
    import tokenizers

    if isinstance(tokenizer, tokenizers.Tokenizer):
        return {"tokenizer.json": tokenizer.to_str()}
    roles = {key: str(getattr(tokenizer, key)) for key in ROLES if getattr(tokenizer, key, None) is not None}
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        return {"tokenizer.json": backend.to_str(), "tokenizer_config.json": roles}
    spm = [getattr(tokenizer, name, None) for name in ("spm_source", "spm_target")]
    if all(hasattr(s, "serialized_model_proto") for s in spm) and isinstance(getattr(tokenizer, "encoder", None), dict):
        return {"source.spm": spm[0].serialized_model_proto(), "target.spm": spm[1].serialized_model_proto(),
                "vocab.json": dict(tokenizer.encoder),
                "tokenizer_config.json": {**roles, "separate_vocabs": bool(getattr(tokenizer, "separate_vocabs", 0))}}
    raise TypeError(f"tokenizer {type(tokenizer).__name__} is neither a fast transformers tokenizer (with a "
                    "backend_tokenizer), a tokenizers.Tokenizer nor a MarianTokenizer: load it with use_fast=True, or "
                    "pass tokenizer=None for a model that takes token ids only")


def shared_count(model: torch.nn.Module, loaded: LoadedModel) -> tuple[int, int]:
    """(tensors of ours whose memory is the transformers model's, tensors of ours): tied ones counted once."""
    theirs = {t.untyped_storage().data_ptr() for t in model.state_dict().values() if not t.is_meta}
    ours = {p.untyped_storage().data_ptr() for p in loaded.model.parameters()}
    return len(ours & theirs), len(ours)


def from_transformers(model: Any, tokenizer: Any = None, *, device: str | torch.device | None = None,
                      max_parameters: float | None = DEFAULT_MAX_PARAMETERS) -> LoadedModel:
    """The explorer's model for a live `transformers` model of a family the explorer imports (see the module
    docstring: which tensors are shared, which copied; what happens to float16, to another device, to training
    mode). A model of another family is a CheckpointError naming its model_type and the families imported."""
    check_model(model)
    label = f"{type(model).__name__} (in memory)"
    files = MemoryFiles(label, {"config.json": config_json(model),
                                **(tokenizer_files(tokenizer) if tokenizer is not None else {})})
    target = pick_device(own_device(model) if device is None else device)
    weights = StateWeights(saved_state(model), files.path("model.safetensors"), target)
    name = getattr(model.config, "name_or_path", "") or ""
    source = f"transformers object {type(model).__name__}" + (f" ({name})" if name else "")
    loaded = import_hf(files, target, weights=weights, max_parameters=max_parameters, source=source,
                       with_tokenizer=tokenizer is not None)
    shared, total = shared_count(model, loaded)
    loaded.notes.append(f"{shared} of {total} weight tensors share memory with the transformers model; the others "
                        f"are copies (stacked, transposed or converted to float32)")
    if tokenizer is None:
        loaded.notes.append("no tokenizer given: the model takes token ids only")
    return loaded


__all__ = ["StateWeights", "from_transformers"]

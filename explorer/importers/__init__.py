"""Hugging Face models in the explorer's one from-scratch core: one small module per family maps
config.json onto a `TransformerConfig` and the checkpoint's tensors onto ours (see weight_plan.py).

    gpt2.py        GPT-2, DistilGPT-2                          model_type gpt2
    gpt_neox.py    GPT-NeoX, Pythia                            model_type gpt_neox
    llama.py       Llama, Mistral, Qwen2 (TinyLlama, SmolLM)   model_type llama, mistral, qwen2
    bert.py        BERT-family encoders (MiniLM, ...), MLM head  model_type bert
    roberta.py     RoBERTa, MLM head                           model_type roberta
    distilbert.py  DistilBERT, MLM head                        model_type distilbert
    bart.py        BART, Marian (opus-mt)                      model_type bart, marian
    t5.py          T5, flan-t5                                 model_type t5

`load_hf(folder)` reads config.json (through `import_hf`, which `explorer.from_transformers` calls too, with a
live model's config and tensors: explorer.importers.live), refuses a model above the parameter limit before allocating
anything, builds the model on the meta device (no memory, no random initialisation), reads the
weights one tensor at a time in float32 and assigns them, loads the tokenizer, and returns a
`LoadedModel`. An unknown model_type is a CheckpointError listing the supported families.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path

import torch

from ..checkpoints import (CONFIG_FILE, DEFAULT_MAX_PARAMETERS, CheckpointError, LoadedModel, build_empty,
                           check_parameter_limit, check_tokenizer_vocab, describe, load_state)
from ..file_reads import read_card
from ..device import pick_device
from ..model import TransformerConfig
from ..tokenizer import Tokenizer
from .bart import BART, MARIAN
from .bert import BERT
from .hf_config import Weights
from .model_files import FolderFiles, ModelFiles
from .weight_plan import Family, HFConfig, assemble
from .distilbert import DISTILBERT
from .gpt2 import GPT2
from .gpt_neox import GPT_NEOX
from .llama import LLAMA
from .roberta import ROBERTA
from .t5 import T5

FAMILIES = (GPT2, GPT_NEOX, LLAMA, BERT, ROBERTA, DISTILBERT, BART, MARIAN, T5)
REGISTRY: dict[str, Family] = {model_type: family for family in FAMILIES for model_type in family.model_types}


def supported_model_types() -> list[str]:
    return sorted(REGISTRY)


def family_for(hf: dict, path: Path) -> Family:
    model_type = hf.get("model_type")
    if model_type not in REGISTRY:
        families = "; ".join(f"{f.name} ({', '.join(f.model_types)})" for f in FAMILIES)
        raise CheckpointError(f"{describe(path)}: model_type {model_type!r} is not supported; the explorer imports "
                              f"{families}")
    return REGISTRY[model_type]


def load_hf(folder: str | PathLike, device: str | torch.device | None = None, *,
            max_parameters: float | None = DEFAULT_MAX_PARAMETERS, source: str | None = None) -> LoadedModel:
    """Load a folder in the Hugging Face layout into the explorer's model (eval mode, on `device`)."""
    folder = Path(folder)
    return import_hf(FolderFiles(folder), device, folder=folder, max_parameters=max_parameters,
                     source=source or f"local folder {folder.resolve()}", card=read_card(folder / "README.md"))


def import_hf(files: ModelFiles, device: str | torch.device | None, *, folder: Path | None = None, weights: Weights | None = None,
              max_parameters: float | None = DEFAULT_MAX_PARAMETERS, source: str, card: str | None = None,
              with_tokenizer: bool = True) -> LoadedModel:
    """A Hugging Face model from its small files (config.json, tokenizer files) and its weights: a folder's weight
    files (`folder`, read after the parameter limit is checked) or a live model's tensors (`weights`,
    explorer.importers.live). Without a tokenizer (`with_tokenizer=False`) the model takes token ids only."""
    config_path = files.path(CONFIG_FILE)
    hf = files.json(CONFIG_FILE)
    family = family_for(hf, config_path)
    cfg = HFConfig(hf, config_path, family.name, folder, weights)
    try:
        config = family.make_config(cfg)
    except (ValueError, TypeError, KeyError) as err:  # e.g. "layer_norm_eps": "small" (float() of a string)
        raise cfg.error(f"invalid {family.name} configuration: {err!r}") from err
    check_parameter_limit(config, max_parameters, config_path)
    tokenizer = tgt_tokenizer = None
    if with_tokenizer:
        tokenizer, tgt_tokenizer = read_tokenizers(family, files, cfg, config, config_path)

    weights = cfg.weights()
    model = build_empty(config)
    state, ignored = assemble(family, config, weights)
    load_state(model, state, weights.path)  # names and shapes checked here
    del state
    model = model.to(pick_device(device)).eval()

    name = hf.get("_name_or_path") or files.name
    if tokenizer is None:
        task = ids_only_task(name, cfg, config, family.name)
    else:
        task = family.task(name, files, tgt_tokenizer or tokenizer, config, family.name)
    task.update(model_type=hf["model_type"], ignored_tensors=ignored)
    notes = [f"ignored {len(ignored)} tensor(s) not used by the model: {', '.join(ignored[:6])}"
             + (" ..." if len(ignored) > 6 else "")] if ignored else []
    return LoadedModel(model, tokenizer, tgt_tokenizer, task, source, card, notes)


def read_tokenizers(family: Family, files: ModelFiles, cfg: HFConfig, config: TransformerConfig,
                    config_path: Path) -> tuple[Tokenizer, Tokenizer | None]:
    """The model's tokenizer and, for a family with its own target side (Marian), the target tokenizer; each
    checked against the model's vocabulary and padding id."""
    tokenizer, tok_path = family.load_tokenizer(files, cfg)
    check_tokenizer_vocab(tokenizer, config.vocab_size, tok_path)
    tgt_tokenizer = None
    if family.load_target_tokenizer is not None:
        tgt_tokenizer, tgt_path = family.load_target_tokenizer(files, cfg)
        check_tokenizer_vocab(tgt_tokenizer, config.resolved_tgt_vocab_size, tgt_path, "target vocabulary")
    if config.pad_id is not None and tokenizer.pad_id is not None and tokenizer.pad_id != config.pad_id:
        raise CheckpointError(f"{describe(tok_path)} pads with id {tokenizer.pad_id} but {describe(config_path)} "
                              f"says pad_token_id={config.pad_id}")
    return tokenizer, tgt_tokenizer


def ids_only_task(name: str, cfg: HFConfig, config: TransformerConfig, family: str) -> dict:
    """The task of a model given without a tokenizer: it takes token ids only (no text, no labels)."""
    return {"name": "ids-only", "pad_id": config.pad_id, "bos_id": cfg.token_id("bos_token_id"),
            "eos_id": cfg.token_id("eos_token_id"),
            "description": f"{family} model ({name}) without a tokenizer: call it on token ids"}


__all__ = ["FAMILIES", "REGISTRY", "family_for", "import_hf", "load_hf", "supported_model_types"]

"""Fresh models built in the page: the settings a person chooses, checked and turned into a model.

A built model has random weights (seeded) and the date tasks' character tokenizer, so the shipped
examples work on it at once; its size is capped by `limits.MAX_BUILD_PARAMETERS`.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from typing import Any

import torch

from ...checkpoints import LoadedModel, estimate_parameters
from ...model import PRESETS, Transformer, TransformerConfig
from .errors import AppError
from .limits import MAX_BUILD_LEN, MAX_BUILD_PARAMETERS, build_size_message

_BUILD_LOCK = threading.Lock()  # model init draws from torch's global RNG: one build at a time
NORMS = ("pre-norm", "post-norm")


@dataclass(frozen=True)
class BuildSpec:
    """What the "Build a fresh model" form asks for."""

    preset: str = "custom"  # a name in explorer.model.PRESETS or "custom"
    arch: str = "encoder-decoder"
    n_layers: int = 2
    n_heads: int = 4
    d_model: int = 64
    d_ff: int = 256
    norm: str = "pre-norm"  # "pre-norm" or "post-norm"
    positional: str = "sinusoidal"
    seed: int = 0

    @classmethod
    def from_form(cls, **values: Any) -> "BuildSpec":
        """From the page's (possibly empty or float) field values; AppError naming a missing one."""
        missing = [k for k in ("n_layers", "n_heads", "d_model", "d_ff") if values.get(k) is None]
        if missing:
            raise AppError(f"Fill in {', '.join(missing)}.")
        try:
            ints = {k: int(values[k]) for k in ("n_layers", "n_heads", "d_model", "d_ff")}
            seed = int(values.get("seed") or 0)
        except (TypeError, ValueError) as err:
            raise AppError(f"invalid build setting: {err}") from err
        return cls(preset=str(values.get("preset") or "custom"), arch=str(values.get("arch") or "encoder-decoder"),
                   norm=str(values.get("norm") or "pre-norm"), positional=str(values.get("positional") or
                                                                           "sinusoidal"), seed=seed, **ints)

    @classmethod
    def from_preset(cls, name: str) -> "BuildSpec":
        """The form's values for a preset (arch, layers, heads, widths, norm, positions)."""
        if name not in PRESETS:
            raise AppError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}")
        c = TransformerConfig(**PRESETS[name]["config"])
        return cls(preset=name, arch=c.arch, n_layers=c.n_layers, n_heads=c.n_heads, d_model=c.d_model, d_ff=c.d_ff,
                   norm=NORMS[0] if c.norm_first else NORMS[1], positional=c.positional)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def build_config(spec: BuildSpec, vocab_size: int) -> TransformerConfig:
    """The TransformerConfig of a build request; AppError naming the field if it is invalid or too large."""
    base = dict(PRESETS[spec.preset]["config"]) if spec.preset in PRESETS else {}
    if base.get("arch") != spec.arch:
        base.pop("num_classes", None)  # a classifier head needs the preset's own (encoder) architecture
    if base.get("head_dim") is not None and spec.d_model != base.get("d_model"):
        base.pop("head_dim")  # the preset's head width belongs to its own d_model
    if spec.norm not in NORMS:
        raise AppError(f"norm must be one of {', '.join(NORMS)}")
    fields = dict(arch=spec.arch, vocab_size=vocab_size, tgt_vocab_size=None, n_layers=spec.n_layers,
                  n_heads=spec.n_heads, d_model=spec.d_model, d_ff=spec.d_ff, norm_first=spec.norm == "pre-norm",
                  positional=spec.positional, dropout=0.0, n_encoder_layers=None, n_decoder_layers=None,
                  final_norm=None, max_len=min(int(base.get("max_len", MAX_BUILD_LEN)), MAX_BUILD_LEN))
    try:
        config = TransformerConfig(**{**base, **fields})
    except (ValueError, TypeError) as err:
        raise AppError(f"Invalid configuration: {err}") from err
    count = estimate_parameters(config)
    if count > MAX_BUILD_PARAMETERS:
        raise AppError(build_size_message(count))
    return config


def build_task(config: TransformerConfig, tokenizer: Any, seed: int) -> dict[str, Any]:
    """The task metadata of a built model: a date task for sequence models, embeddings or classes otherwise."""
    from ...training.tasks import make_task

    if config.arch == "encoder-decoder":
        task = make_task("date-translation", tokenizer).to_dict()
    elif config.arch == "decoder":
        task = make_task("date-gpt", tokenizer).to_dict()
    else:
        examples = make_task("date-translation", tokenizer).examples
        task = ({"name": "classification", "labels": [f"class {i}" for i in range(config.num_classes)],
                 "examples": examples, "description": "an untrained classifier (random weights)"}
                if config.num_classes else
                {"name": "sentence-embedding", "pooling": "mean", "examples": examples,
                 "description": "an untrained encoder (random weights)"})
    task["description"] = (f"Freshly built with random weights (seed {seed}): attention patterns and outputs are "
                           f"those of an untrained model. " + task.get("description", ""))
    return task


def build_model(spec: BuildSpec, device: torch.device) -> LoadedModel:
    """A fresh model with random weights from `spec`, on `device`, in eval mode."""
    from ...training.tasks import build_tokenizer

    tokenizer = build_tokenizer()  # the date tasks' character tokenizer: the examples work out of the box
    config = build_config(spec, tokenizer.vocab_size)
    with _BUILD_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec.seed)
        model = Transformer(config).to(device).eval()
    task = build_task(config, tokenizer, spec.seed)
    return LoadedModel(model, tokenizer, None, task, f"built in the app (preset {spec.preset}, seed {spec.seed})")

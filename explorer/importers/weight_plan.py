"""What every importer shares: the rotary settings in transformers' spellings (config.json itself is read by
`hf_config.HFConfig`), and turning a checkpoint into our state dict from a plan.

A family describes its weights as a plan: for each of our tensors, the checkpoint tensors it is
made of and how they combine (a copy, a transpose, a concatenation, a de-interleave). `assemble`
reads each source once, checks that nothing is missing and that every tensor left over is one the
family knows to ignore (buffers such as GPT-2's causal mask, heads outside the body), and names
the checkpoint file and the tensor whenever something is wrong.

Shapes: D model width, H heads, Dh head width; Linear weights are (out, in) as in torch.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import Tensor

from ..checkpoints import CheckpointError, describe
from ..outputs.hub_tasks import causal_lm_task
from ..model import TransformerConfig
from ..model.config import ROPE_SCALINGS
from ..tokenizer import Tokenizer
from .files import WeightFiles
from .model_files import ModelFiles
from .hf_config import HF_ACTIVATIONS, HFConfig  # noqa: F401 (re-exported for the families)
from .tokenizer_files import load_hf_tokenizer

def rope_settings(cfg: HFConfig, default_fraction: float = 1.0) -> dict[str, Any]:
    """pos_base, rotary_fraction and rope_scaling from either spelling transformers has saved:
    `rope_parameters` (v5: rope_theta, partial_rotary_factor, rope_type and its fields inside) or the
    older top-level `rope_theta` / `rope_scaling` / `partial_rotary_factor` (GPT-NeoX: `rotary_emb_base`,
    `rotary_pct`)."""
    params = cfg.get("rope_parameters", {})
    if not isinstance(params, dict) or any(isinstance(v, dict) for v in params.values()):
        raise cfg.error("rope_parameters must be one object (per-layer rotary settings are not supported)")
    theta = params.get("rope_theta", cfg.get("rope_theta", cfg.get("rotary_emb_base", 10000.0)))
    fraction = params.get("partial_rotary_factor",
                          cfg.get("partial_rotary_factor", cfg.get("rotary_pct", default_fraction)))
    scaling = cfg.get("rope_scaling") or params
    if not isinstance(scaling, dict):
        raise cfg.error("rope_scaling must be an object")
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "default":
        return dict(pos_base=theta, rotary_fraction=fraction, rope_scaling=None)
    fields = {name: scaling[name] for name in ROPE_SCALINGS.get(kind, ()) if name in scaling}
    if kind == "llama3":  # transformers' default for the pre-training context
        fields.setdefault("original_max_position_embeddings", cfg.get("max_position_embeddings"))
    return dict(pos_base=theta, rotary_fraction=fraction, rope_scaling={"rope_type": kind, **fields})


# ------------------------------------------------------------------------------------------ plans
def as_is(t: Tensor) -> Tensor:
    return t


def transpose(t: Tensor) -> Tensor:
    """GPT-2's Conv1D stores (in, out); a torch Linear wants (out, in)."""
    return t.t()


def stack_rows(*parts: Tensor) -> Tensor:
    """Separate q, k, v projections -> our packed in_proj [W_q; W_k; W_v] (rows = outputs)."""
    return torch.cat(parts, dim=0)


class Target(NamedTuple):
    name: str  # our state-dict name
    sources: tuple[str, ...]  # checkpoint tensor names (prefix included)
    combine: Callable[..., Tensor] = as_is  # sources in float32 -> our tensor


def lm_task(name: str, files: ModelFiles, tokenizer: Tokenizer, config: TransformerConfig, family: str) -> dict[str, Any]:
    return causal_lm_task(name, tokenizer, config, family)


@dataclass(frozen=True)
class Family:
    """One model family: how its config and tensors become ours. Per-type differences are data."""

    name: str  # "GPT-2", in messages
    model_types: tuple[str, ...]  # config.json "model_type" values it reads
    make_config: Callable[[HFConfig], TransformerConfig]
    plan: Callable[[TransformerConfig, str, WeightFiles], list[Target]]  # (config, prefix, weights)
    prefix: str  # the body's tensor prefix in task-model checkpoints ("transformer.", "model.", ...)
    ignore: re.Pattern = field(default=re.compile(r"(?!)"))  # body tensors that are not weights (buffers)
    # (the model's small files: a folder or made in memory, config.json) -> (tokenizer, its file for messages)
    load_tokenizer: Callable[[ModelFiles, HFConfig], tuple[Tokenizer, Path]] = load_hf_tokenizer
    # a separate target-side tokenizer (Marian's target.spm), or None: the target side uses `load_tokenizer`'s
    load_target_tokenizer: Callable[[ModelFiles, HFConfig], tuple[Tokenizer, Path]] | None = None
    # (name, files, tokenizer, config, family name) -> the task dict: what the app offers for the model
    task: Callable[[str, ModelFiles, Tokenizer, TransformerConfig, str], dict[str, Any]] = lm_task


def assemble(family: Family, config: TransformerConfig, weights: WeightFiles) -> tuple[dict[str, Tensor], list[str]]:
    """Our state dict (float32) from the checkpoint's tensors, and the checkpoint names left unused."""
    prefixed = any(name.startswith(family.prefix) for name in weights.names)
    prefix = family.prefix if prefixed else ""
    state: dict[str, Tensor] = {}
    used: set[str] = set()
    for target in family.plan(config, prefix, weights):
        missing = [s for s in target.sources if s not in weights]
        if missing:
            raise CheckpointError(f"{describe(weights.path)} is missing tensor(s) {', '.join(missing)} that a "
                                  f"{family.name} model with this config.json has")
        parts = [weights.get(s) for s in target.sources]
        try:
            state[target.name] = target.combine(*parts).contiguous()
        except RuntimeError as err:  # e.g. q, k, v of shapes that do not stack
            shapes = ", ".join(f"{s} {tuple(p.shape)}" for s, p in zip(target.sources, parts))
            raise CheckpointError(f"{describe(weights.path)}: cannot build {target.name} from {shapes}") from err
        used.update(target.sources)
    unused = [n for n in weights.names if n not in used]
    # Outside a prefixed body: heads we do not model (MLM, NSP, classifiers). Inside: only known buffers.
    unexpected = [n for n in unused if (n.startswith(prefix) or not prefix)
                  and not family.ignore.search(n[len(prefix):])]
    if unexpected:
        raise CheckpointError(f"{describe(weights.path)} has {len(unexpected)} tensor(s) that are not part of a "
                              f"{family.name} model: {', '.join(unexpected[:5])}")
    return state, unused

"""SAEs in SAELens's folder format: load one (a shipped SAE, a local folder or a folder of a Hub repo) and save one.

A folder holds
    cfg.json                  architecture, d_in, d_sae, apply_b_dec_to_input, normalize_activations, (topk) k and
                              rescale_acts_by_decoder_norm, metadata {model_name, hook_name, ...}; configs of SAELens
                              before 6.0 (hook_point, activation_fn "topk" with activation_fn_kwargs.k, top-level
                              model_name) are read as SAELens's handle_pre_6_0_config reads them
    sae_weights.safetensors   W_enc (d_in, d_sae), b_enc (d_sae,), W_dec (d_sae, d_in), b_dec (d_in,), and threshold
                              (d_sae,) for jumprelu; nothing else (SAELens loads them strictly), except an all-ones
                              "scaling_factor" that old SAELens wrote and drops
    sparsity.safetensors      optional: "sparsity" (d_sae,), log10 of each latent's firing density
    README.md                 optional: a card

Every problem (a missing file or tensor, a shape that does not fit d_in / d_sae, a NaN, an unknown architecture or
normalisation, a hook that is not a residual-stream point, a width that does not match the model, a dictionary larger
than the byte budget) raises SAEFileError (a CheckpointError and a ValueError) naming the file and the key. A model
name that differs from the model's is a warning (SAEWarning, also kept in `sae.notes`): SAELens's names ("gpt2-small")
and Hub ids ("openai-community/gpt2") name the same model differently, so it cannot be a refusal.

Sources (explorer.interpret.sae.sources): a pathlib.Path is trusted; text goes through the allow-list of
resolve_sae_source (a shipped SAE, a folder inside `allowed_dirs`, "owner/name[@revision]/path/in/repo" on the Hub).
Hub files are fetched cfg.json first: the byte budget is checked on it before the weights are downloaded, and the
files' sizes, when the Hub gives them, before anything is (`hub_size_refusal`). Every file is read within
explorer.file_reads' bounds: cfg.json 1 MiB and 64 levels deep, a safetensors header 64 KiB and 8 tensors
(SAE_HEADER); messages name files by their folder's name, never the server's path.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import replace
from os import PathLike
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from torch import Tensor

from ...checkpoints import CheckpointError, describe, read_json, read_safetensors, require_file, safetensors_shapes
from ...file_reads import JSON_LIMITS, SAE_HEADER, few
from ...loading import fetch_hub, hub_file_sizes
from ...model import Transformer
from .core import ARCHITECTURES, IDENTITY_NORMALIZATIONS, NORMALIZATIONS, SAE
from .hooks import hook_site, parse_hook_name
from .sources import CFG_FILE, SAEFileError, resolve_sae_source

WEIGHTS_FILE = "sae_weights.safetensors"
SPARSITY_FILE = "sparsity.safetensors"
CARD_FILE = "README.md"
DEFAULT_MAX_SAE_BYTES = 2_000_000_000  # the Python API's limit (float32 bytes in memory); the app passes its own
SAE_LENS_VERSION = "6.54.12"  # the SAELens whose format and code this package follows (written by save_sae)
MODEL_ALIASES = {"gpt2-small": "gpt2", "gpt2": "gpt2"}  # TransformerLens's names -> the Hub's
MAX_WIDTH = 2**31  # d_in, d_sae at most (the byte budget refuses far less; this keeps the numbers printable)


class SAEWarning(UserWarning):
    """An SAE that loads but may not fit the model (e.g. trained on a model of another name)."""


# ------------------------------------------------------------------------------------------ the Hub
def hub_size_refusal(sizes: Mapping[str, int], prefix: str, cfg: Mapping[str, Any] | None = None) -> str | None:
    """What is wrong with the sizes the Hub gives a SAE's files (path in the repo -> bytes), before they are downloaded:
    cfg.json above its JSON limit; with `cfg` read, a weights or sparsity file larger than the tensors it announces
    could take (float64, the widest dtype, plus a header within SAE_HEADER). None when nothing is."""
    cfg_size, where = sizes.get(prefix + CFG_FILE), prefix.rstrip("/") or "the repo"
    if cfg is None:
        limit = JSON_LIMITS["config"]
        if cfg_size is not None and cfg_size > limit:
            return (f"{CFG_FILE} in {where} is {cfg_size:,} bytes on the Hub, above the limit of "
                    f"{limit:,} for a config file (a real one is a few KB); not downloaded")
        return None
    largest = {WEIGHTS_FILE: 2 * _expected_bytes(cfg, Path(prefix + CFG_FILE)),
               SPARSITY_FILE: 8 * cfg["d_sae"]}
    for name, data in largest.items():
        size, limit = sizes.get(prefix + name), 8 + SAE_HEADER.max_bytes + data
        if size is not None and size > limit:
            return (f"{name} in {where} is {size:,} bytes on the Hub, more than the tensors "
                    f"{CFG_FILE} announces can take ({limit:,} bytes at most); not downloaded")
    return None


def _fetch_hub_sae(where: str, revision: str | None, cache_dir, max_bytes: float | None) -> tuple[Path, str]:
    """A Hub SAE: its files' sizes asked first (when the Hub answers), cfg.json downloaded only within its limit and
    read within it, the budget checked on it, then the weights (and sparsity, if any) within what cfg.json announces.
    The card is not fetched: nothing reads it."""
    owner, name, *folder = where.split("/")
    repo, sub = f"{owner}/{name}", "/".join(folder)
    prefix = f"{sub}/" if sub else ""
    files = [prefix + f for f in (CFG_FILE, WEIGHTS_FILE, SPARSITY_FILE)]
    sizes = hub_file_sizes(repo, revision, files)
    if (refusal := hub_size_refusal(sizes, prefix)) is not None:
        raise SAEFileError(f"Hugging Face Hub {repo}: {refusal}")
    root, origin = fetch_hub(repo, revision, cache_dir, patterns=[prefix + CFG_FILE])
    cfg = _read_cfg(root / prefix / CFG_FILE)
    _check_budget(cfg, max_bytes, root / prefix / CFG_FILE)
    if (refusal := hub_size_refusal(sizes, prefix, cfg)) is not None:
        raise SAEFileError(f"Hugging Face Hub {repo}: {refusal}")
    root, origin = fetch_hub(repo, revision, cache_dir, patterns=files)
    return root / prefix, f"{origin}/{sub}" if sub else origin


# ------------------------------------------------------------------------------------------ cfg.json
def _version_at_least_6(cfg: Mapping[str, Any]) -> bool:
    version = cfg.get("sae_lens_version") or (cfg.get("metadata") or {}).get("sae_lens_version")
    if not isinstance(version, str):
        return False
    found = re.match(r"^(\d+)", version)
    return found is not None and int(found.group(1)) >= 6


def _read_cfg(path: Path) -> dict[str, Any]:
    """cfg.json as SAELens 6 reads it (handle_config_defaulting: configs before 6.0 renamed and defaulted)."""
    raw = read_json(path)
    if not isinstance(raw.get("metadata", {}), Mapping):
        raise SAEFileError(f"{describe(path)}: \"metadata\" must be an object")
    if _version_at_least_6(raw):
        cfg = dict(raw)
        cfg["metadata"] = dict(raw.get("metadata") or {})
        return cfg
    renames = {"hook_point": "hook_name", "hook_point_head_index": "hook_head_index",
               "activation_fn_str": "activation_fn"}
    cfg = {renames.get(k, k): v for k, v in raw.items()}
    cfg.setdefault("apply_b_dec_to_input", True)
    cfg.setdefault("architecture", "standard")
    kwargs = cfg.get("activation_fn_kwargs") or {}
    if cfg.get("activation_fn") == "topk" and isinstance(kwargs, Mapping) and kwargs.get("k") is not None:
        cfg["architecture"], cfg["k"] = "topk", kwargs["k"]
    if isinstance(cfg.get("normalize_activations"), bool):
        cfg["normalize_activations"] = "expected_average_only_in" if cfg["normalize_activations"] else "none"
    metadata = dict(cfg.get("metadata") or {})
    for key in ("model_name", "hook_name", "hook_head_index", "prepend_bos", "context_size", "dataset_path",
                "neuronpedia_id", "sae_lens_training_version"):
        if key in cfg and key not in metadata:
            metadata[key] = cfg[key]
    cfg["metadata"] = metadata
    return cfg


def _shown(value: Any) -> str:
    """A value of cfg.json as a message shows it: its start, however long it is."""
    big = isinstance(value, int) and abs(value) >= 10**30
    text = f"a number of {len(str(value)):,} digits" if big else repr(value)
    return text if len(text) <= 80 else text[:80] + "…"


def _positive_int(cfg: Mapping[str, Any], key: str, path: Path) -> int:
    value = cfg.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WIDTH:
        raise SAEFileError(f"{describe(path)}: \"{key}\" must be a positive integer of at most {MAX_WIDTH:,}, got "
                           f"{_shown(value)}")
    return value


def _expected_bytes(cfg: Mapping[str, Any], path: Path) -> int:
    """float32 bytes of the tensors cfg.json announces (what the SAE holds in memory)."""
    d_in, d_sae = _positive_int(cfg, "d_in", path), _positive_int(cfg, "d_sae", path)
    extra = d_sae if cfg.get("architecture") == "jumprelu" else 0
    return 4 * (2 * d_in * d_sae + d_sae + d_in + extra)


def _check_budget(cfg: Mapping[str, Any], max_bytes: float | None, path: Path) -> None:
    size = _expected_bytes(cfg, path)
    if max_bytes is not None and size > max_bytes:
        raise SAEFileError(f"{describe(path)}: a dictionary of d_sae={cfg['d_sae']:,} latents on d_in={cfg['d_in']:,} "
                           f"needs {size / 1e6:,.0f} MB, above the limit of {max_bytes / 1e6:,.0f} MB")


def _settings(cfg: dict[str, Any], path: Path) -> dict[str, Any]:
    """The SAE's settings from cfg.json, every value checked."""
    architecture = cfg.get("architecture", "standard")
    if architecture not in ARCHITECTURES:
        raise SAEFileError(f"{describe(path)}: \"architecture\" {_shown(architecture)} is not supported; supported: "
                           f"{', '.join(ARCHITECTURES)}")
    norm = cfg.get("normalize_activations") or "none"
    if norm not in NORMALIZATIONS:
        raise SAEFileError(f"{describe(path)}: \"normalize_activations\" {_shown(norm)} is not supported; supported: "
                           f"{', '.join(NORMALIZATIONS)}")
    if cfg.get("reshape_activations", "none") not in ("none", None):
        raise SAEFileError(f"{describe(path)}: \"reshape_activations\" {_shown(cfg['reshape_activations'])} (an SAE on "
                           "attention heads' outputs) is not supported: only residual-stream SAEs")
    metadata = cfg["metadata"]
    hook_name = metadata.get("hook_name")
    if not isinstance(hook_name, str):
        raise SAEFileError(f"{describe(path)}: \"metadata.hook_name\" is missing: it says where the SAE reads the model")
    try:
        parse_hook_name(hook_name)
    except ValueError as err:
        raise SAEFileError(f"{describe(path)}: \"metadata.hook_name\": {err}") from None
    if metadata.get("hook_head_index") is not None:
        raise SAEFileError(f"{describe(path)}: \"metadata.hook_head_index\" {_shown(metadata['hook_head_index'])}: an "
                           "SAE on one head is not supported")
    settings = dict(architecture=architecture, hook_name=hook_name, normalize_activations=norm,
                    apply_b_dec_to_input=bool(cfg.get("apply_b_dec_to_input", True)),
                    model_name=metadata.get("model_name"))
    for key in ("apply_b_dec_to_input", "rescale_acts_by_decoder_norm"):
        if not isinstance(cfg.get(key, False), bool):
            raise SAEFileError(f"{describe(path)}: \"{key}\" must be true or false, got {_shown(cfg[key])}")
    if architecture == "topk":
        k = cfg.get("k", 100)  # TopKSAEConfig's default
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= cfg["d_sae"]:
            raise SAEFileError(f"{describe(path)}: \"k\" must be an integer in 1..d_sae={cfg['d_sae']}, got "
                               f"{_shown(k)}")
        settings.update(k=k, rescale_acts_by_decoder_norm=cfg.get("rescale_acts_by_decoder_norm", False))
    return settings


# ------------------------------------------------------------------------------------------ tensors
def _read_weights(path: Path, d_in: int, d_sae: int, architecture: str, cfg_path: Path) -> dict[str, Tensor]:
    wanted = {"W_enc": (d_in, d_sae), "b_enc": (d_sae,), "W_dec": (d_sae, d_in), "b_dec": (d_in,)}
    if architecture == "jumprelu":
        wanted["threshold"] = (d_sae,)
    shapes = safetensors_shapes(require_file(path), SAE_HEADER)
    for key, shape in wanted.items():
        if key not in shapes:
            raise SAEFileError(f"{describe(path)}: tensor \"{key}\" is missing (a {architecture} SAE has "
                               f"{', '.join(wanted)})")
        if shapes[key] != shape:
            raise SAEFileError(f"{describe(path)}: tensor \"{key}\" is {shapes[key]}, but {describe(cfg_path)} says "
                               f"d_in={d_in}, d_sae={d_sae}, so it must be {shape}")
    extra = sorted(set(shapes) - set(wanted) - {"scaling_factor"})
    if extra:
        raise SAEFileError(f"{describe(path)}: unexpected tensors {few(extra)} (a {architecture} SAE has "
                           f"{', '.join(wanted)})")
    if "scaling_factor" in shapes and math.prod(shapes["scaling_factor"]) > d_sae:
        raise SAEFileError(f"{describe(path)}: tensor \"scaling_factor\" is {shapes['scaling_factor']}, more values "
                           f"than the d_sae={d_sae} latents it scales")
    tensors = read_safetensors(path, SAE_HEADER)
    scaling = tensors.pop("scaling_factor", None)
    if scaling is not None and not torch.all(scaling == 1):
        raise SAEFileError(f"{describe(path)}: tensor \"scaling_factor\" is not all ones (an old SAELens fine-tuning "
                           "scale, which SAELens 6 no longer applies)")
    out = {}
    for key, tensor in tensors.items():
        if not tensor.is_floating_point():
            raise SAEFileError(f"{describe(path)}: tensor \"{key}\" has dtype {tensor.dtype}, not a float")
        tensor = tensor.float()
        if not bool(torch.isfinite(tensor).all()):
            bad = int((~torch.isfinite(tensor)).sum())
            raise SAEFileError(f"{describe(path)}: tensor \"{key}\" holds {bad} NaN or infinite values")
        out[key] = tensor
    return out


def _read_sparsity(path: Path, d_sae: int) -> Tensor | None:
    """(d_sae,) log10 firing densities; only that tensor is read. NaN or +inf is refused (a log10 of a density is at
    most 0); -inf is a latent that never fired."""
    if not path.is_file():
        return None
    shapes = safetensors_shapes(path, SAE_HEADER)
    if shapes.get("sparsity") != (d_sae,):
        raise SAEFileError(f"{describe(path)}: tensor \"sparsity\" must be ({d_sae},), found "
                           f"{shapes.get('sparsity', 'none')}")
    sparsity = read_safetensors(path, SAE_HEADER, names=("sparsity",))["sparsity"]
    if not sparsity.is_floating_point():
        raise SAEFileError(f"{describe(path)}: tensor \"sparsity\" has dtype {sparsity.dtype}, not a float")
    sparsity = sparsity.float()
    bad = int((sparsity.isnan() | (sparsity == math.inf)).sum())
    if bad:
        raise SAEFileError(f"{describe(path)}: tensor \"sparsity\" holds {bad} NaN or +infinite values (it must hold "
                           "log10 firing densities, at most 0)")
    return sparsity


# ------------------------------------------------------------------------------------------ the model
def _model_key(name: str) -> str:
    last = name.strip().split("@")[0].rstrip("/").split("/")[-1].lower()
    return MODEL_ALIASES.get(last, last)


def _check_model(sae: SAE, model: Transformer, model_name: str | None, cfg_path: Path) -> list[str]:
    """Refuse an SAE the model cannot run; -> warnings (a model name that differs)."""
    if sae.d_in != model.config.d_model:
        raise SAEFileError(f"{describe(cfg_path)}: \"d_in\" is {sae.d_in}, but the model's residual stream is "
                           f"{model.config.d_model} wide")
    try:
        hook_site(model.config, sae.hook_name)
    except ValueError as err:
        raise SAEFileError(f"{describe(cfg_path)}: \"metadata.hook_name\": {err}") from None
    if model_name and sae.model_name and _model_key(model_name) != _model_key(sae.model_name):
        return [f"{describe(cfg_path)}: the SAE was trained on {sae.model_name!r}, the model is {model_name!r}; "
                "its latents may mean nothing here"]
    return []


# ------------------------------------------------------------------------------------------ load / save
def load_sae(source: str | PathLike, *, model: Transformer | None = None, model_name: str | None = None,
             device: str | torch.device | None = None, max_bytes: float | None = DEFAULT_MAX_SAE_BYTES,
             allowed_dirs: Iterable[str | PathLike] | None = (), cache_dir: str | PathLike | None = None) -> SAE:
    """An SAE in SAELens's format (see the module docstring). With `model`, it must fit it (width, hook point); with
    `model_name` too (a Hub id, a shipped name), a different metadata.model_name is a warning. The SAE's tensors go to
    `device` (default: the model's, else the CPU) in float32."""
    try:
        if isinstance(source, PathLike):  # chosen by code: trusted, like explorer.loading.load
            folder, origin = Path(source).expanduser().resolve(), f"local folder {Path(source)}"
        else:
            kind, where, revision = resolve_sae_source(source, allowed_dirs)
            if kind == "hub":
                folder, origin = _fetch_hub_sae(where, revision, cache_dir, max_bytes)
            else:  # named as typed, not by the server's path
                folder = Path(where)
                origin = f"shipped SAE {folder.name}" if kind == "shipped" else f"local folder {str(source).strip()}"
        sae = _read_folder(folder, max_bytes, origin)
    except SAEFileError:
        raise
    except CheckpointError as err:  # a missing or corrupted file, an unreachable Hub: from the shared readers
        raise SAEFileError(str(err)) from err
    cfg_path = folder / CFG_FILE
    notes = list(sae.notes)
    if model is not None:
        notes += _check_model(sae, model, model_name, cfg_path)
    for note in notes:
        warnings.warn(note, SAEWarning, stacklevel=2)
    if device is None:
        device = model.device if model is not None else "cpu"
    return replace(sae, notes=tuple(notes)).to(device)


def _read_folder(folder: Path, max_bytes: float | None, origin: str) -> SAE:
    if not folder.is_dir():
        raise SAEFileError(f"SAE folder {folder.name} does not exist")
    cfg_path = folder / CFG_FILE
    cfg = _read_cfg(cfg_path)
    d_in, d_sae = _positive_int(cfg, "d_in", cfg_path), _positive_int(cfg, "d_sae", cfg_path)
    settings = _settings(cfg, cfg_path)
    _check_budget(cfg, max_bytes, cfg_path)
    tensors = _read_weights(folder / WEIGHTS_FILE, d_in, d_sae, settings["architecture"], cfg_path)
    notes = []
    if settings["normalize_activations"] in IDENTITY_NORMALIZATIONS[1:]:
        notes.append(f"{describe(cfg_path)}: normalize_activations is {settings['normalize_activations']!r}; like "
                     "SAELens loading a folder, nothing is applied at run time (SAELens folds it into the weights "
                     "when training ends)")
    return SAE(**tensors, **settings, sparsity=_read_sparsity(folder / SPARSITY_FILE, d_sae),
               metadata=cfg["metadata"], source=origin, notes=tuple(notes))


def save_sae(sae: SAE, folder: str | PathLike, *, model_name: str | None = None, hook_name: str | None = None,
             card: str | None = None, metadata: Mapping[str, Any] | None = None) -> Path:
    """Write `sae` as SAELens writes an inference SAE (cfg.json, sae_weights.safetensors, sparsity.safetensors if the
    SAE has one, README.md if `card`); `model_name` / `hook_name` / `metadata` override the SAE's metadata. SAELens
    6's SAE.load_from_disk and load_sae both read it back (tests/interpret/test_sae_reference.py)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    meta = dict(sae.metadata)
    meta.update(metadata or {})
    meta.update(hook_name=hook_name or sae.hook_name, sae_lens_version=SAE_LENS_VERSION)
    parse_hook_name(meta["hook_name"])
    name = model_name or sae.model_name
    if name is not None:
        meta["model_name"] = name
    meta.setdefault("hook_head_index", None)
    cfg: dict[str, Any] = dict(d_in=sae.d_in, d_sae=sae.d_sae, dtype="float32", device="cpu",
                               apply_b_dec_to_input=sae.apply_b_dec_to_input,
                               normalize_activations=sae.normalize_activations, reshape_activations="none",
                               metadata=meta, architecture=sae.architecture)
    if sae.architecture == "topk":
        cfg.update(k=sae.k, rescale_acts_by_decoder_norm=sae.rescale_acts_by_decoder_norm)
    tensors = {"W_enc": sae.W_enc, "b_enc": sae.b_enc, "W_dec": sae.W_dec, "b_dec": sae.b_dec}
    if sae.threshold is not None:
        tensors["threshold"] = sae.threshold
    save_file({k: v.detach().float().contiguous().cpu() for k, v in tensors.items()}, str(folder / WEIGHTS_FILE))
    if sae.sparsity is not None:
        save_file({"sparsity": sae.sparsity.detach().float().contiguous().cpu()}, str(folder / SPARSITY_FILE))
    (folder / CFG_FILE).write_text(json.dumps(cfg, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    if card is not None:
        (folder / CARD_FILE).write_text(card, encoding="utf-8")
    return folder


def log_density(fired: Tensor, tokens: int, eps: float = 1e-10) -> Tensor:
    """(F,) counts of tokens each latent fired on -> log10(density + eps), SAELens's sparsity.safetensors values."""
    if tokens < 1 or not math.isfinite(tokens):
        raise ValueError(f"tokens must be a positive count, got {tokens!r}")
    return torch.log10(fired.double() / tokens + eps).float()

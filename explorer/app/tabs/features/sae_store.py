"""Where the app's SAEs come from and where they are kept.

- The SAEs shipped for a model (`saes_for`): the folders under checkpoints/saes/ (explorer.interpret.sae.sources)
  whose cfg.json names the model in `metadata.model_name` (a shipped model's name, or a Hub id: SAELens's
  "gpt2-small" is the Hub's "gpt2"). A new folder there appears in the Features tab without a code change.
- A name typed on the page or carried by a link goes through the allow-list (`SAESource.of`: a shipped SAE, a folder
  inside --allow-dir, a Hub repo's folder "owner/name[@revision]/path"), in the server, like a model name.
- Each SAE is loaded once per process (`shared_sae`) into a registry of its own, within SAE_MEMORY for all SAEs
  together (least recently used let go first), read-only and shared by every session; one SAE is at most
  MAX_SAE_BYTES (refused from its cfg.json before its weights are read).

A resolved `SAESource` is picklable: on ZeroGPU the computation gets it in a forked worker and loads the folder the
server resolved (trusted then, like explorer.loading's resolved folders).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from ....checkpoints import CheckpointError, LoadedModel, read_json
from ....interpret.sae import SAE, SAEFileError, hook_site, load_sae, resolve_sae_source, shipped_saes
from ....interpret.sae import sources
from ....interpret.sae.saelens_files import MODEL_ALIASES
from ...serving.errors import AppError
from ...serving.limits import MAX_NAME_CHARS
from ...serving.registry import ModelRegistry

MAX_SAE_BYTES = 1_000_000_000  # one SAE in memory (float32): GPT-2 small's 24,576-latent residual SAEs take 151 MB
SAE_MEMORY = 2 * 1024**3  # every SAE loaded in this process, together


@dataclass(frozen=True)
class SAESource:
    """An SAE name that passed the allow-list: as typed, and where it resolved to."""

    text: str  # as typed (the dropdown's and the link's value)
    kind: str  # "shipped" | "local" | "hub"
    where: str  # the folder (shipped, local), or "repo_id/folder" on the Hub
    revision: str | None = None

    @classmethod
    def of(cls, text: Any, allowed_dirs: tuple[str, ...]) -> "SAESource":
        """AppError naming the text when it is not a shipped SAE, an allowed folder nor a Hub repo's folder."""
        name = str(text or "").strip()
        if not name:
            raise AppError("Choose an SAE (a shipped one, an allowed folder, or a Hub repo and folder).")
        if len(name) > MAX_NAME_CHARS:
            raise AppError(f"The SAE name is {len(name):,} characters long; at most {MAX_NAME_CHARS} are allowed.")
        try:
            kind, where, revision = resolve_sae_source(name, allowed_dirs)
        except SAEFileError as err:
            raise AppError(f"Unknown SAE: {err}") from None
        return cls(name, kind, where, revision)

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.where}@{self.revision or ''}"


def _load(source: SAESource, device: torch.device) -> SAE:
    try:
        if source.kind == "hub":  # resolves to the same Hub folder with no local folder allowed
            return load_sae(source.text, device=device, max_bytes=MAX_SAE_BYTES, allowed_dirs=())
        sae = load_sae(Path(source.where), device=device, max_bytes=MAX_SAE_BYTES)
    except SAEFileError as err:
        raise AppError(f"Could not load the SAE {source.text!r}: {err}") from None
    kind = "shipped SAE" if source.kind == "shipped" else "local folder"
    return replace(sae, source=f"{kind} {source.text}")  # as typed: the page never shows the server's paths


SAES = ModelRegistry(SAE_MEMORY, size_of=lambda sae: sae.nbytes())  # shared, read-only: (source, device) -> SAE


def shared_sae(source: SAESource, device: torch.device | str) -> SAE:
    """The SAE of `source` on `device`, loaded on first use and kept in SAES."""
    device = torch.device(device)
    return SAES.get(f"{source.key}#{device}", lambda: _load(source, device))


def model_key(name: str) -> str:
    """A model name as SAELens's and the Hub's compare: its last path part, lower case, aliases resolved."""
    last = str(name).strip().split("@")[0].rstrip("/").split("/")[-1].lower()
    return MODEL_ALIASES.get(last, last)


def fitted(sae: SAE, loaded: LoadedModel, model_name: str) -> list[str]:
    """AppError when `sae` cannot run on the model (its width, its hook point); notes of what may not fit (an SAE
    trained on a model of another name, the notes of its loading)."""
    config = loaded.config
    if sae.d_in != config.d_model:
        raise AppError(f"The SAE {sae.source or ''} reads a residual stream {sae.d_in} wide, but this model's is "
                       f"{config.d_model} wide: choose an SAE trained on this model.")
    try:
        hook_site(config, sae.hook_name)
    except ValueError as err:
        raise AppError(f"The SAE's hook point {sae.hook_name!r} does not fit this model: {err}") from None
    notes = list(sae.notes)
    if model_name and sae.model_name and model_key(model_name) != model_key(sae.model_name):
        notes.append(f"This SAE was trained on {sae.model_name!r}, the model is {model_name!r}: its latents may mean "
                     "nothing here.")
    return notes


def _model_of(folder: Path) -> str | None:
    """metadata.model_name of a shipped SAE's cfg.json (a top-level model_name before SAELens 6), or None."""
    try:
        cfg = read_json(folder / sources.CFG_FILE)  # within bounds: a folder's cfg.json is read to list it
    except CheckpointError:
        return None
    meta = cfg.get("metadata") if isinstance(cfg.get("metadata"), dict) else {}
    name = meta.get("model_name", cfg.get("model_name"))
    return name if isinstance(name, str) else None


def saes_for(model_name: str | None) -> list[str]:
    """The shipped SAEs trained on the model named `model_name` (the page's name for it), sorted; [] for none (or a
    built model, which has no name)."""
    if not model_name:
        return []
    want = model_key(model_name)
    return [name for name in shipped_saes()
            if (trained := _model_of(sources.SAES_DIR / name)) and model_key(trained) == want]


def sae_choice(model_name: str | None, current: Any) -> tuple[list[str], str | None]:
    """A new model's SAE menu: its shipped SAEs, and its value: a typed SAE (not a shipped one) stays, else the
    first."""
    choices, value = saes_for(model_name), str(current or "")
    keep = value and (value in choices or value not in shipped_saes())
    return choices, value if keep else (choices[0] if choices else None)

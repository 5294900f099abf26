"""Per-session state and the shared models behind it.

A `Session` (kept per browser tab or API client in a gr.State) says which model and which device; the
model itself lives once in the app's `ModelRegistry`, loaded or built on first use and then only read.
`AppContext` is what every request needs and nobody changes but through their own locks: the registry, the
folders the page may load from, the caps chosen at launch, the store of the Runs' results kept for their tabs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from ...checkpoints import CheckpointError, LoadedModel
from ...device import available_devices, pick_device
from ..run.request import Session  # noqa: F401 (where the app reads it from)
from ..run.request_memory import MemoryGate
from .build import BuildSpec, build_config, build_model
from .cores import CoreShare
from .errors import AppError
from .kept import KeptResults
from .limits import DEFAULT_DOWNLOAD_DISK, MAX_LOAD_PARAMETERS, MAX_TOKENS, check_model_name
from .registry import ModelRegistry

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
BYTES_PER_PARAMETER = 4  # float32 on the CPU
Progress = Callable[..., Any]


def no_progress(fraction: float, desc: str = "") -> None:
    return None


@dataclass(frozen=True)
class AppContext:
    """What every request reads and none changes."""

    registry: ModelRegistry = field(default_factory=ModelRegistry)
    allowed_dirs: tuple[str, ...] = ()  # folders whose model sub-folders the page may load
    max_tokens: int = MAX_TOKENS  # tokens of one input, at most (the model's own limit may be lower)
    gate: MemoryGate = field(default_factory=MemoryGate)  # /analyze requests at once, within --request-memory
    cores: CoreShare = field(default_factory=CoreShare)  # torch threads of each request (--threads)
    kept: KeptResults = field(default_factory=KeptResults)  # the Runs' results kept for the sessions' tabs, within
    # --kept-memory (kept.KeptResults)
    download_disk: int = DEFAULT_DOWNLOAD_DISK  # bytes the Download's files take on disk (export.download_files)


def default_source() -> str:
    """date-translator if shipped, else another shipped checkpoint, else MiniLM (offline copy)."""
    from ...loading import shipped_names

    names = shipped_names()
    for preferred in ("date-translator", "date-gpt"):
        if preferred in names:
            return preferred
    return names[0] if names else MINILM


SECOND = {"date-translator": "date-gpt", "date-gpt": "date-translator"}  # the date models compare with each other


def default_second(source: str) -> str:
    """The second model the Compare models tab starts with: the other date model if shipped, else the same model
    (two copies of one model with different heads switched off is a comparison too)."""
    from ...loading import shipped_names

    other = SECOND.get(source, source)
    return other if other == source or other in shipped_names() else source


def second_session(name: Any, first: Session) -> Session:
    """The Compare models tab's second model, named by a string (shipped name, Hub id or allowed folder), on the first
    model's device: the same checks as `load_session` (the name now; loading when it is used, `models_held`)."""
    text = str(name or "").strip()
    if not text:
        raise AppError("Choose a second model to compare with (a shipped name, a Hub id or an allowed folder).")
    return Session(check_model_name(text), first.device)


def device_choices() -> list[str]:
    return ["auto", *available_devices()]


def resolve_device(name: str | None) -> torch.device:
    try:
        return pick_device(name or "auto")
    except ValueError as err:
        raise AppError(str(err)) from err


def _load(source: str, device: torch.device, ctx: AppContext, progress: Progress) -> LoadedModel:
    from ...loading import load

    progress(0.2, desc=f"loading {source} …")
    budget_parameters = ctx.registry.budget_bytes // BYTES_PER_PARAMETER
    try:
        loaded = load(source, device, allowed_dirs=list(ctx.allowed_dirs),
                      max_parameters=min(MAX_LOAD_PARAMETERS, budget_parameters))
    except CheckpointError as err:
        why = str(err)
        if "above the limit" in why:
            why += (f" (this app loads models of at most {MAX_LOAD_PARAMETERS:,} parameters, within its model "
                    f"memory budget of {ctx.registry.budget_text()})")
        raise AppError(f"Could not load {source!r}: {why}") from err
    progress(0.9, desc="ready")
    return loaded


def model_factory(session: Session, ctx: AppContext, progress: Progress = no_progress
                  ) -> Callable[[], LoadedModel]:
    """How the registry makes the session's model when it does not hold it (the device is checked now)."""
    device = resolve_device(session.device)
    if session.build is not None:
        spec = session.build
        return lambda: build_model(spec, device)
    return lambda: _load(session.source, device, ctx, progress)


def get_model(session: Session, ctx: AppContext, progress: Progress = no_progress) -> LoadedModel:
    """The session's model from the shared registry, loading or building it on first use."""
    return ctx.registry.get(session.key, model_factory(session, ctx, progress))


@contextmanager
def models_held(sessions: Sequence[Session], ctx: AppContext, progress: Progress = no_progress
                ) -> Iterator[list[LoadedModel]]:
    """The sessions' models, all kept in the registry until the block ends (ModelRegistry.held): a comparison's two
    models count together against --model-memory, and one that does not fit beside the other is refused."""
    with ctx.registry.held([(s.key, model_factory(s, ctx, progress)) for s in sessions]) as models:
        yield models


def load_session(name: str, device: str | None, ctx: AppContext, progress: Progress = no_progress
                 ) -> tuple[Session, LoadedModel]:
    """A shipped checkpoint, an allowed local folder or a Hub id -> the new session and its model."""
    session = Session(check_model_name(name), device or "auto")
    progress(0.05, desc="resolving …")
    return session, get_model(session, ctx, progress)


def build_session(spec: BuildSpec, device: str | None, ctx: AppContext, progress: Progress = no_progress
                  ) -> tuple[Session, LoadedModel]:
    """A fresh model (random weights, date character tokenizer) -> the new session and its model."""
    from ...training.tasks import build_tokenizer

    build_config(spec, build_tokenizer().vocab_size)  # refuse a bad spec before touching the registry
    session = Session("", device or "auto", spec)
    progress(0.3, desc=f"building a {spec.arch} model …")
    return session, get_model(session, ctx, progress)


def checked_source(name: str, allowed_dirs: tuple[str, ...]) -> str:
    """A model name as the page would take it, checked without loading anything: the stripped name, or AppError
    (too long, empty, not a shipped checkpoint, an allowed folder nor a Hub id: explorer.loading.resolve_source)."""
    from ...loading import resolve_source

    name = check_model_name(name)
    try:
        resolve_source(name, list(allowed_dirs))
    except CheckpointError as err:
        raise AppError(str(err)) from err
    return name

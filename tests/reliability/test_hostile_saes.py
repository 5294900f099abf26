"""Hostile SAE folders (issue 39, item 6), loaded through the loader and through the app's SAE store (what the
Features tab calls): a cfg.json nested 200,000 deep or of 2 MiB, a d_sae of 5,000 or 4,000 digits, a weights header
listing 300,000 tensors or a few too many, a NaN sparsity.safetensors, a lone surrogate in the name, a Hub SAE whose
cfg.json is too large. Each is refused with a message naming the file and the limit, shorter than 600 characters,
without the server's absolute paths; each refused file was read at most its limit + 1 bytes (tests/reads.py), and the
safetensors library never parsed a refused header."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from explorer import checkpoints
from explorer.app.serving.errors import AppError
from explorer.app.tabs.features.sae_store import SAESource, shared_sae
from explorer.file_reads import JSON_LIMITS, SAE_HEADER
from explorer.interpret.sae import SAEFileError, load_sae, save_sae
from explorer.interpret.sae import saelens_files
from tests.interpret.sae_cases import make_sae
from tests.reads import count_reads


def saved(folder: Path) -> Path:
    return save_sae(make_sae("standard"), folder, model_name="tiny")


def edit_cfg(folder: Path, text: str) -> None:
    (folder / "cfg.json").write_text(text)


def cfg_of(folder: Path) -> dict:
    return json.loads((folder / "cfg.json").read_text())


def deep_cfg(folder: Path) -> None:
    edit_cfg(folder, '{"d_in": 24, "metadata": ' + "[" * 200_000 + "]" * 200_000 + "}")


def big_cfg(folder: Path) -> None:  # valid JSON, 2 MiB: a 50 MB one loaded before
    cfg = cfg_of(folder)
    cfg["metadata"]["notes"] = "x" * (2 * JSON_LIMITS["config"])
    edit_cfg(folder, json.dumps(cfg))


def digits_cfg(n: int):
    def build(folder: Path) -> None:
        edit_cfg(folder, (folder / "cfg.json").read_text().replace('"d_sae": 96', '"d_sae": ' + "9" * n))
    return build


def many_tensors(count: int):
    """sae_weights.safetensors whose header lists `count` one-value tensors (valid: the header and data agree)."""
    def build(folder: Path) -> None:
        header = {f"t{i}": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]} for i in range(count)}
        body = json.dumps(header, separators=(",", ":")).encode()
        (folder / "sae_weights.safetensors").write_bytes(struct.pack("<Q", len(body)) + body + bytes(4 * count))
    return build


def nan_sparsity(folder: Path) -> None:
    sparsity = torch.full((96,), -2.0)
    sparsity[5] = float("nan")
    save_file({"sparsity": sparsity}, str(folder / "sparsity.safetensors"))


HOSTILE = {  # folder -> (how it is made, words the refusal holds, the file refused and the bytes it may be read)
    "deep-cfg": (deep_cfg, ["cfg.json in deep-cfg", "more than 64 levels deep"], "cfg.json", JSON_LIMITS["config"] + 1),
    "big-cfg": (big_cfg, ["cfg.json in big-cfg", "larger than 1 MiB"], "cfg.json", JSON_LIMITS["config"] + 1),
    "digits-5000": (digits_cfg(5000), ["cfg.json in digits-5000", "more than 4,300 digits"], "cfg.json",
                    JSON_LIMITS["config"] + 1),
    "digits-4000": (digits_cfg(4000), ["cfg.json in digits-4000", '"d_sae" must be a positive integer of at most',
                                       "a number of 4,000 digits"], "cfg.json", JSON_LIMITS["config"] + 1),
    "tensors-300000": (many_tensors(300_000), ["sae_weights.safetensors in tensors-300000", "header of",
                                               "above the limit of 65,536"], "sae_weights.safetensors", 8),
    "tensors-12": (many_tensors(12), ["sae_weights.safetensors in tensors-12", "lists 12 tensors, above the limit of 8",
                                      "(and 7 more)"], "sae_weights.safetensors", 8 + SAE_HEADER.max_bytes),
    "nan-sparsity": (nan_sparsity, ["sparsity.safetensors in nan-sparsity", "1 NaN"], "sparsity.safetensors",
                     8 + SAE_HEADER.max_bytes),
}


@pytest.fixture(scope="module")
def allowed(tmp_path_factory) -> Path:
    """allowed/ (the --allow-dir folder) with a good SAE and each hostile one, built once for the module: the tests
    only read it (the 300,000-tensor header alone takes a second to write)."""
    root = tmp_path_factory.mktemp("hostile") / "allowed"
    saved(root / "good")
    for name, (build, _, _, _) in HOSTILE.items():
        build(saved(root / name))
    return root


def check_message(msg: str, words: list[str], tmp_path: Path) -> None:
    """`tmp_path`: the folder the test's files sit in, whose absolute path no message may show."""
    assert all(w in msg for w in words), msg
    assert str(tmp_path) not in msg and "/tmp" not in msg, msg  # no server path
    assert len(msg) < 600 and "Traceback" not in msg, msg


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_sae_refused_by_the_loader_within_bounds(allowed, name, monkeypatch):
    _, words, file, most = HOSTILE[name]
    parsed_by_library = []
    real_safe_open = checkpoints.safe_open
    monkeypatch.setattr(checkpoints, "safe_open", lambda path, *a, **k: (parsed_by_library.append(Path(path).name),
                                                                        real_safe_open(path, *a, **k))[1])
    reads = count_reads(monkeypatch)
    with pytest.raises(SAEFileError) as err:
        load_sae(name, allowed_dirs=[allowed])
    check_message(str(err.value), words, allowed.parent)
    assert 0 < reads[file] <= most, reads  # the refused file: never more than its bound
    if "header" in " ".join(words) or "lists" in " ".join(words):
        assert file not in parsed_by_library  # refused before the safetensors library parsed its header


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_sae_is_a_message_in_the_features_tab(allowed, name):
    """The app's store (what the Features tab calls) turns each refusal into an AppError, whose words the page shows;
    the good SAE still loads afterwards."""
    source = SAESource.of(name, (str(allowed),))
    with pytest.raises(AppError) as err:
        shared_sae(source, "cpu")
    check_message(str(err.value), [f"Could not load the SAE '{name}'", *HOSTILE[name][1]], allowed.parent)
    good = shared_sae(SAESource.of("good", (str(allowed),)), "cpu")
    assert good.d_sae == 96 and str(allowed.parent) not in good.source


def test_a_lone_surrogate_in_an_sae_name_is_a_message(allowed):
    for text in ("good\ud800", "\udcff", "owner/name/\ud83d"):
        with pytest.raises(AppError) as err:
            SAESource.of(text, (str(allowed),))
        check_message(str(err.value), ["SAE name", "lone UTF-16 surrogate"], allowed.parent)
        with pytest.raises(SAEFileError, match="surrogate"):
            load_sae(text, allowed_dirs=[allowed])


def test_a_missing_sae_folder_is_named_as_typed(tmp_path):
    with pytest.raises(SAEFileError) as err:
        load_sae(tmp_path / "absent")
    check_message(str(err.value), ["SAE folder absent does not exist"], tmp_path)


# ------------------------------------------------------------------------------------------ the Hub
def hub_cache(cache: Path, repo_id: str, files: dict[str, bytes]) -> Path:
    """huggingface_hub's cache layout, as it writes it: snapshots/<commit>/<path> -> ../../blobs/<name> symlinks."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "blobs").mkdir()
    for i, (name, data) in enumerate(files.items()):
        (repo / "blobs" / f"blob{i}").write_bytes(data)
        link = repo / "snapshots" / commit / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(Path(*[".."] * (len(Path(name).parts) + 1), "blobs", f"blob{i}"))  # up to <repo>
    return repo / "snapshots" / commit


def test_a_large_hub_cfg_in_the_cache_is_read_within_its_limit(tmp_path, monkeypatch):
    folder = saved(tmp_path / "files")
    big_cfg(folder)
    hub_cache(tmp_path / "hub", "someone/saes", {f"layer-1/{n}": (folder / n).read_bytes()
                                                 for n in ("cfg.json", "sae_weights.safetensors")})
    reads = count_reads(monkeypatch)
    with pytest.raises(SAEFileError) as err:
        load_sae("someone/saes/layer-1", cache_dir=tmp_path / "hub")
    check_message(str(err.value), ["cfg.json in someone/saes/layer-1", "larger than 1 MiB"], tmp_path)
    assert reads["cfg.json"] == JSON_LIMITS["config"] + 1 and reads["sae_weights.safetensors"] == 0


def test_hub_sizes_refuse_before_anything_is_downloaded(tmp_path, monkeypatch):
    """When the Hub gives the files' sizes, a cfg.json above its limit is refused before a byte is downloaded (the
    sizes are stubbed: tests are offline)."""
    from explorer import loading

    downloads = []
    monkeypatch.setattr(loading, "snapshot_download", lambda *a, **k: downloads.append(k["allow_patterns"]))
    monkeypatch.setattr(saelens_files, "hub_file_sizes", lambda repo, rev, paths: {"layer-1/cfg.json": 50_000_000})
    with pytest.raises(SAEFileError) as err:
        load_sae("someone/saes/layer-1", cache_dir=tmp_path / "hub")
    check_message(str(err.value), ["someone/saes", "cfg.json in layer-1 is 50,000,000 bytes on the Hub",
                                   "above the limit of 1,048,576", "not downloaded"], tmp_path)
    assert downloads == []


def test_hub_size_refusal_decides_from_the_sizes_and_the_cfg():
    refusal = saelens_files.hub_size_refusal
    cfg = {"d_in": 24, "d_sae": 96, "architecture": "standard"}
    float32 = 4 * (2 * 24 * 96 + 96 + 24)
    assert refusal({}, "a/") is None and refusal({}, "a/", cfg) is None  # sizes unknown: bounded reads still apply
    assert refusal({"a/cfg.json": 5_000}, "a/") is None
    assert "cfg.json in a is 2,000,000 bytes" in refusal({"a/cfg.json": 2_000_000}, "a/")
    weights = {"a/sae_weights.safetensors": 8 + SAE_HEADER.max_bytes + 2 * float32}  # float64 tensors fit
    assert refusal(weights, "a/", cfg) is None
    weights = {"a/sae_weights.safetensors": 50_000_000_000}
    assert "sae_weights.safetensors in a is 50,000,000,000 bytes on the Hub, more than" in refusal(weights, "a/", cfg)
    assert "sparsity.safetensors" in refusal({"sparsity.safetensors": 10**9}, "", cfg)

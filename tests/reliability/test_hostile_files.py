"""Hostile and broken files (issue 8, point 4), loaded THROUGH THE APP: a pickle that would run code,
truncated safetensors, absurd sizes, mismatched shapes, and names that try to leave the allowed folders.

Each is refused with a clear message, nothing is executed (the marker file stays absent), and the app
keeps serving (a normal request afterwards works). Paths typed into the UI resolve only to shipped
checkpoints, a Hub id, or folders allowed at launch (`--allow-dir`).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from explorer.app.run.toggles import Toggles
from explorer.app.serving.errors import AppError
from explorer.app.serving.registry import ModelRegistry
from explorer.app.serving.session import AppContext, load_session
from explorer.app.tabs import analyze
from tests.hang import SUBPROCESS_S, gradio_client

REPO = Path(__file__).resolve().parents[2]


class Payload:
    """Unpickling this creates `path` (harmless stand-in for arbitrary code: open(path, "w"))."""

    def __init__(self, path: Path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def tiny_explorer_checkpoint(folder: Path, tiny_encoder_factory, **over) -> Path:
    from explorer.checkpoints import save_checkpoint
    from explorer.tokenizer import train_tokenizer

    tok = train_tokenizer(["hello world, a small corpus"], kind="wordlevel", vocab_size=50,
                          special_tokens=("[PAD]", "[UNK]"))
    save_checkpoint(folder, tiny_encoder_factory(tok.vocab_size, **over), tok,
                    task={"name": "sentence-embedding", "pooling": "mean", "examples": ["hello world"]})
    return folder


def bert_folder_with_pickle(folder: Path, marker: Path) -> Path:
    """A complete, tiny Hugging Face BERT folder whose pytorch_model.bin runs code when unpickled."""
    folder.mkdir(parents=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world"]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    (folder / "config.json").write_text(json.dumps(dict(
        model_type="bert", vocab_size=len(vocab), hidden_size=8, num_attention_heads=2, num_hidden_layers=1,
        intermediate_size=16, max_position_embeddings=16, type_vocab_size=2, hidden_act="gelu", pad_token_id=0)))
    torch.save({"embeddings.word_embeddings.weight": torch.zeros(len(vocab), 8), "evil": Payload(marker)},
               folder / "pytorch_model.bin")
    return folder


@pytest.fixture
def allowed(tmp_path, tiny_encoder_factory):
    """allowed/ (the --allow-dir folder) with a good checkpoint and hostile ones; outside/ next to it."""
    root = tmp_path / "allowed"
    root.mkdir()
    marker = tmp_path / "PWNED"
    tiny_explorer_checkpoint(root / "good", tiny_encoder_factory)
    bert_folder_with_pickle(root / "pickle-bert", marker)

    trunc = tiny_explorer_checkpoint(root / "truncated", tiny_encoder_factory)
    data = (trunc / "model.safetensors").read_bytes()
    (trunc / "model.safetensors").write_bytes(data[: len(data) // 2])
    header = tiny_explorer_checkpoint(root / "bad-header", tiny_encoder_factory)
    (header / "model.safetensors").write_bytes((2**60).to_bytes(8, "little") + b"{}")  # header "size" 1 EiB
    pickled_st = tiny_explorer_checkpoint(root / "pickle-as-safetensors", tiny_encoder_factory)
    (pickled_st / "model.safetensors").write_bytes(pickle.dumps(Payload(marker)))

    absurd = tiny_explorer_checkpoint(root / "absurd", tiny_encoder_factory)
    meta = json.loads((absurd / "config.json").read_text())
    meta["model"].update(d_model=1_000_000, n_heads=1000, n_layers=10_000, d_ff=4_000_000, vocab_size=10**9)
    (absurd / "config.json").write_text(json.dumps(meta))
    absurd_bert = root / "absurd-bert"
    absurd_bert.mkdir()
    (absurd_bert / "vocab.txt").write_text("[PAD]\n[UNK]\n")
    (absurd_bert / "config.json").write_text(json.dumps(dict(
        model_type="bert", vocab_size=10**8, hidden_size=65536, num_attention_heads=64, num_hidden_layers=512,
        intermediate_size=262144, max_position_embeddings=512, type_vocab_size=2)))

    shapes = tiny_explorer_checkpoint(root / "shapes", tiny_encoder_factory)
    meta = json.loads((shapes / "config.json").read_text())
    meta["model"].update(d_model=32, d_ff=64)  # the weights were saved for d_model 16, d_ff 32
    (shapes / "config.json").write_text(json.dumps(meta))
    vocab = tiny_explorer_checkpoint(root / "vocab", tiny_encoder_factory)
    meta = json.loads((vocab / "config.json").read_text())
    meta["model"]["vocab_size"] = 5  # smaller than the tokenizer and the embedding table
    (vocab / "config.json").write_text(json.dumps(meta))
    (root / "not-json").mkdir()
    (root / "not-json" / "config.json").write_text("{\"format_version\": 1, \"model\": ")

    outside = tmp_path / "outside"
    tiny_explorer_checkpoint(outside / "secret-model", tiny_encoder_factory)
    (root / "link-out").symlink_to(outside / "secret-model", target_is_directory=True)
    (root / "link-up").symlink_to(tmp_path, target_is_directory=True)
    return root, outside, marker


HOSTILE = {  # folder -> words the refusal must contain
    "pickle-bert": ["refused to unpickle", "pytorch_model.bin"],
    "pickle-as-safetensors": ["model.safetensors", "corrupted"],
    "truncated": ["model.safetensors", "truncated or corrupted"],
    "bad-header": ["model.safetensors", "truncated or corrupted"],
    "absurd": ["config.json", "parameters", "limit"],
    "absurd-bert": ["config.json", "parameters", "limit"],
    "shapes": ["model.safetensors", "shape"],
    "vocab": ["tokenizer.json", "vocabulary"],
    "not-json": ["config.json", "not valid JSON"],
}


def test_the_payload_would_run_code(tmp_path):
    """Sanity check of the test itself: a plain unpickler DOES execute the payload."""
    marker = tmp_path / "ran"
    bert_folder_with_pickle(tmp_path / "m", marker)
    torch.load(tmp_path / "m" / "pytorch_model.bin", weights_only=False)
    assert marker.exists()


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_folder_refused_by_load_handler(allowed, name, monkeypatch):
    root, _, marker = allowed
    ctx = AppContext(ModelRegistry(), allowed_dirs=(str(root),))
    from explorer import checkpoints

    built = []  # (parameters, device) of each model built while loading: build_empty builds on the meta device
    real = checkpoints.Transformer

    def recorded(config):
        built.append((checkpoints.estimate_parameters(config), str(torch.get_default_device())))
        return real(config)

    monkeypatch.setattr(checkpoints, "Transformer", recorded)
    with pytest.raises(AppError) as err:
        load_session(str(root / name), "cpu", ctx)
    msg = str(err.value)
    assert all(word in msg for word in HOSTILE[name]), msg
    assert "Traceback" not in msg
    assert not marker.exists(), "the pickle ran code"
    # Refusal does not need the model: an absurd size is refused from config.json before any model is built; a bad
    # weights file at most after an empty one (shapes only, no memory).
    assert all(device == "meta" for _, device in built), built
    if "parameters" in HOSTILE[name]:
        assert built == [], "an absurd model was built before its refusal"
    assert ctx.registry.keys() == []  # nothing half-loaded is kept
    _, loaded = load_session("good", "cpu", ctx)  # the same registry still works
    a = analyze(loaded, "hello world", None, Toggles())
    assert a.tokens[1]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_refusal_message_is_short_and_plain(allowed, name):
    """A refusal reads well in the page: short, no terminal escapes, no advice to disable the safety check."""
    root, _, _ = allowed
    with pytest.raises(AppError) as err:
        load_session(str(root / name), "cpu", AppContext(ModelRegistry(), allowed_dirs=(str(root),)))
    msg = str(err.value)
    assert len(msg) < 600 and "\x1b" not in msg and "weights_only` set to `False" not in msg, msg


def deep_config(folder: Path) -> None:
    (folder / "config.json").write_text('{"format_version": 1, "model": ' + "[" * 200_000 + "]" * 200_000 + "}")


def big_config(folder: Path) -> None:  # valid JSON of 2 MiB
    meta = json.loads((folder / "config.json").read_text())
    meta["task"]["description"] = "x" * (2 << 20)
    (folder / "config.json").write_text(json.dumps(meta))


def digits_config(folder: Path) -> None:
    text = (folder / "config.json").read_text()
    (folder / "config.json").write_text(text.replace('"format_version": 1', '"format_version": ' + "9" * 5000))


def many_tensors(folder: Path) -> None:
    header = {f"t{i}": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]} for i in range(300_000)}
    body = json.dumps(header, separators=(",", ":")).encode()
    (folder / "model.safetensors").write_bytes(len(body).to_bytes(8, "little") + body + bytes(4 * 300_000))


def deep_tokenizer(folder: Path) -> None:
    (folder / "tokenizer.json").write_text("[" * 200_000 + "]" * 200_000)


BOUNDED = {  # folder -> (how it is made, words of the refusal, the refused file, the bytes it may be read)
    "deep-config": (deep_config, ["config.json in deep-config", "more than 64 levels deep"], "config.json", 1 << 20),
    "big-config": (big_config, ["config.json in big-config", "larger than 1 MiB"], "config.json", 1 << 20),
    "digits-config": (digits_config, ["config.json in digits-config", "more than 4,300 digits"], "config.json",
                      1 << 20),
    "many-tensors": (many_tensors, ["model.safetensors in many-tensors", "header of", "above the limit of 4,194,304"],
                     "model.safetensors", 8),
    "deep-tokenizer": (deep_tokenizer, ["tokenizer.json in deep-tokenizer", "more than 64 levels deep"],
                       "tokenizer.json", 32 << 20),
}


@pytest.mark.parametrize("name", sorted(BOUNDED))
def test_hostile_model_file_refused_within_bounds(tmp_path, tiny_encoder_factory, name, monkeypatch):
    """Files beyond explorer.file_reads' bounds (issue 39, item 6): a message naming the file and the limit, without
    the server's paths; the refused file read at most its limit + 1 bytes; the app keeps nothing."""
    from tests.reads import count_reads

    root = tmp_path / "allowed"
    build, words, file, most = BOUNDED[name]
    build(tiny_explorer_checkpoint(root / name, tiny_encoder_factory))
    ctx = AppContext(ModelRegistry(), allowed_dirs=(str(root),))
    reads = count_reads(monkeypatch)
    with pytest.raises(AppError) as err:
        load_session(name, "cpu", ctx)
    msg = str(err.value)
    assert all(w in msg for w in words), msg
    assert str(tmp_path) not in msg and len(msg) < 600 and "Traceback" not in msg, msg
    assert 0 < reads[file] <= most + 1, reads
    assert ctx.registry.keys() == []


ESCAPES = [
    "../outside/secret-model", "{root}/../outside/secret-model", "{outside}/secret-model", "link-out", "link-up",
    "link-up/outside/secret-model", "good/../../outside/secret-model", "/etc", "/", "~", "~/", "..", ".",
    "../../../../../../etc/passwd", "..\\..\\outside\\secret-model", "C:\\Windows\\System32", "//server/share",
    "file:///etc/passwd", "%2e%2e/outside/secret-model", "good\x00/../../outside", "a" * 5000,
    "date-translator/../../outside", "checkpoints/../outside", "/proc/self/root/etc",
    "good\ud800", "\ud83d/secret-model",  # lone surrogates: no file name can hold them (UnicodeEncodeError before)
]


@pytest.mark.parametrize("text", ESCAPES)
def test_typed_path_cannot_escape(allowed, text, monkeypatch):
    """Only checkpoints/, a Hub id, or allowed folders: nothing outside is loaded, whatever is typed."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    root, outside, _ = allowed
    typed = text.format(root=root, outside=outside)
    ctx = AppContext(ModelRegistry(), allowed_dirs=(str(root),))
    with pytest.raises(AppError) as err:
        load_session(typed, "cpu", ctx)
    assert str(err.value) and "Traceback" not in str(err.value)
    assert ctx.registry.keys() == []


def test_resolution_targets(allowed):
    """What each kind of text resolves to: shipped names under checkpoints/, allowed folders, Hub ids."""
    from explorer.loading import CHECKPOINTS_DIR, resolve_source, shipped_names

    root, outside, _ = allowed
    good = resolve_source("good", [root])
    assert good.kind == "local" and Path(good.path_or_repo) == (root / "good").resolve()
    assert resolve_source(str(root / "good"), [root]).kind == "local"
    assert resolve_source("owner/name", [root]).kind == "hub"
    for name in shipped_names():
        r = resolve_source(name, [root])
        assert r.kind == "shipped" and Path(r.path_or_repo).parent == CHECKPOINTS_DIR.resolve()
    for text in ESCAPES:
        try:
            r = resolve_source(text.format(root=root, outside=outside), [root])
        except Exception as err:  # noqa: BLE001 - a refusal is what we want
            assert type(err).__name__ == "CheckpointError"
            continue
        if r.kind == "local":
            real = Path(r.path_or_repo)
            assert real == root.resolve() or root.resolve() in real.parents, (text, r)  # "." is the root itself
        elif r.kind == "shipped":
            assert Path(r.path_or_repo).parent == CHECKPOINTS_DIR.resolve(), (text, r)
        else:  # a Hub id: owner/name, never a path
            assert r.path_or_repo.count("/") == 1 and ".." not in r.path_or_repo, (text, r)
    # No allowed folders at all (the default launch): not even the good folder loads by path.
    with pytest.raises(AppError):
        load_session(str(root / "good"), "cpu", AppContext(ModelRegistry()))


@pytest.mark.slow
def test_hostile_files_through_the_load_endpoint(allowed, launch):
    """The running app (allowed dir given at launch): refusals are messages, the app keeps serving."""
    pytest.importorskip("gradio_client")
    root, outside, marker = allowed
    _demo, url = launch(allowed_dirs=[str(root)], checkpoint=str(root / "good"))
    client = gradio_client(url)
    ok_args = dict(sentence1="hello world", api_name="/analyze")

    def analyze_works():
        out = client.predict(**ok_args)
        assert "⚠️" not in out[0] and out[1]["data"], out[0]

    analyze_works()
    for name, words in HOSTILE.items():
        out = client.predict("", str(root / name), "cpu", api_name="/load_model")
        assert out[0].startswith("⚠️") and "Traceback" not in out[0], (name, out[0])
        plain = out[0].replace("\\", "")  # the status is escaped Markdown
        assert all(w in plain for w in words), (name, plain)
        analyze_works()
    for text in ESCAPES[:8]:
        out = client.predict("", text.format(root=root, outside=outside), "cpu", api_name="/load_model")
        assert out[0].startswith("⚠️"), (text, out[0])
    assert not marker.exists()
    out = client.predict("", "good", "cpu", api_name="/load_model")
    assert "Loaded" in out[0]
    analyze_works()


ABSURD_POSITIONS = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))  # an unguarded allocation fails instead of eating RAM
sys.path.insert(0, {repo!r})
from explorer.app.serving.errors import AppError
from explorer.app.serving.registry import ModelRegistry
from explorer.app.serving.session import AppContext, load_session
try:
    load_session({folder!r}, "cpu", AppContext(ModelRegistry(), allowed_dirs=({root!r},)))
    print(json.dumps({{"result": "loaded"}}))
except AppError as err:
    print(json.dumps({{"result": "refused", "message": str(err)}}))
except BaseException as err:
    print(json.dumps({{"result": type(err).__name__, "message": str(err)[:300]}}))
print(json.dumps({{"peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def test_absurd_sequence_length_refused(allowed, tiny_encoder_factory):
    """A config whose position table would not fit in memory (tiny weights, max_len 10**9) is refused up front.

    Run in a subprocess with an address-space limit, so an unguarded loader fails fast instead of swapping."""
    root, _, _ = allowed
    folder = tiny_explorer_checkpoint(root / "long", tiny_encoder_factory)
    meta = json.loads((folder / "config.json").read_text())
    meta["model"]["max_len"] = 10**9
    (folder / "config.json").write_text(json.dumps(meta))
    code = ABSURD_POSITIONS.format(limit=6 << 30, repo=str(REPO), folder=str(folder), root=str(root))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=SUBPROCESS_S,
                          check=False, env={**os.environ, "HF_HUB_OFFLINE": "1"})  # a hang guard only
    lines = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    assert lines, proc.stderr[-2000:]
    result = lines[0]
    assert result["result"] == "refused", result
    assert "config.json" in result["message"], result

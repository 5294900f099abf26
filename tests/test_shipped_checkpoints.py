"""The trained checkpoints shipped in checkpoints/: they load, they are accurate on fresh dates, their
heads matter. No training here: these tests read the committed files."""

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from explorer.checkpoints import load_checkpoint
from explorer.training import dates
from explorer.training.tasks import exact_match, task_from_dict

ROOT = Path(__file__).resolve().parent.parent / "checkpoints"
FRESH_SEED = 987_654  # the shipped models were trained on splits of data seed 0
SHIPPED = {  # name: (task, architecture, kind of attention that reads the source, required exact match)
    "date-translator": ("date-translation", "encoder-decoder", "cross", 0.99),
    "date-gpt": ("date-gpt", "decoder", "decoder", 0.97),
}
FILES = ("README.md", "config.json", "model.safetensors", "tokenizer.json")


@pytest.fixture(scope="module")
def fresh():
    return dates.generate_examples(200, seed=FRESH_SEED)


@pytest.fixture(scope="module", params=sorted(SHIPPED))
def shipped(request):
    name = request.param
    folder = ROOT / name
    if not (folder / "config.json").is_file():
        pytest.fail(f"shipped checkpoint {folder} is missing")
    return name, load_checkpoint(folder, device="cpu")


def test_files_are_present_and_small(shipped):
    name, _ = shipped
    for file in FILES:
        path = ROOT / name / file
        assert path.is_file(), path
        assert path.stat().st_size < 10 * 1024 * 1024, f"{path} is {path.stat().st_size:,} bytes"
    assert not (ROOT / name / "training_state.pt").exists()


def test_metadata_and_card(shipped):
    name, loaded = shipped
    task_name, arch, _, required = SHIPPED[name]
    assert loaded.task["name"] == task_name and loaded.arch == arch
    assert next(loaded.model.parameters()).dtype == torch.float32
    training = loaded.task["training"]
    assert training["n_test"] == 2000 and training["test_exact_match"] >= required
    card = loaded.card
    assert card is not None and training["command"] in card
    assert training["command"].startswith("python -m explorer.training.train --task " + task_name)
    assert f"--out checkpoints/{name}" in training["command"]
    assert f"Exact match on 2,000 held-out test dates: {training['test_exact_match']:.2%}" in card
    assert f"{loaded.model.num_parameters():,}" in card
    assert len(loaded.task["examples"]) >= 4


def test_exact_match_on_fresh_dates(shipped, fresh):
    name, loaded = shipped
    required = SHIPPED[name][3]
    score = exact_match(loaded, fresh, batch_size=200)
    assert score >= required, f"{name}: {score:.1%} exact match on 200 fresh dates"


def test_switching_off_a_head_changes_some_output(shipped, fresh):
    """Heads mean something: some single head, switched off, changes the answer for some input."""
    name, loaded = shipped
    kind = SHIPPED[name][2]
    task = task_from_dict(loaded.task, loaded.tokenizer)
    texts = [e.text for e in fresh[:24]]
    base = task.predict(loaded.model, texts)
    config = loaded.config
    layers = config.decoder_layers
    found = None
    for layer in range(layers):
        for head in range(config.n_heads):
            mask = torch.ones(layers, config.n_heads)
            mask[layer, head] = 0.0
            after = task.predict(loaded.model, texts, head_mask={kind: mask})
            changed = [(t, a, b) for t, a, b in zip(texts, base, after) if a != b]
            if changed:
                found = (layer, head, changed[0])
                break
        if found:
            break
    assert found, f"{name}: no single {kind} head changes any of {len(texts)} answers"
    text, before, after = found[2]
    assert before != after and task.predict(loaded.model, [text])[0] == before  # toggles are per call
    # and without any of these heads the model cannot do the task
    off = torch.zeros(layers, config.n_heads)
    blind = task.predict(loaded.model, texts[:10], head_mask={kind: off})
    assert sum(a == b for a, b in zip(blind, base[:10])) <= 2


def test_translator_cross_attention_reads_the_year_for_the_year():
    """Generating each year digit, the strongest cross-attention head looks at a year digit of the source."""
    loaded = load_checkpoint(ROOT / "date-translator", device="cpu")
    task = task_from_dict(loaded.task, loaded.tokenizer)
    text = "samedi 21 novembre 2026"
    gen = task.generate(loaded.model, [text])
    assert task.decode(gen.tokens[0]) == "2026-11-21"
    year = set(range(text.index("2026"), text.index("2026") + 4))
    for t in range(4):  # the four year digits
        cross = torch.stack([w[0] for w in gen.steps[t].cross])  # (L, H, S)
        strongest = cross.amax(dim=-1).argmax()  # the (layer, head) most sure of where to look
        best = cross.flatten(0, 1)[strongest].argmax().item()
        assert best in year, f"year digit {t}: strongest head attends position {best} ({text[best]!r})"


def test_loading_by_shipped_name():
    if importlib.util.find_spec("explorer.loading") is None:
        pytest.skip("explorer.loading is not there yet")
    from explorer.loading import load, shipped_names

    assert {"date-translator", "date-gpt"} <= set(shipped_names())
    a = load("date-translator", device="cpu")
    b = load_checkpoint(ROOT / "date-translator", device="cpu")
    assert a.task == b.task
    for key, value in a.model.state_dict().items():
        assert torch.equal(value, b.model.state_dict()[key])


def test_config_json_is_plain_json():
    for name in SHIPPED:
        meta = json.loads((ROOT / name / "config.json").read_text())
        assert meta["format_version"] == 1 and meta["model"]["vocab_size"] >= 135

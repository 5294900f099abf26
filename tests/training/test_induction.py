"""The induction task: its readable tokenizer, its training rows, its metadata, and a tiny training run."""

from types import SimpleNamespace

import pytest
import torch

from explorer.training import induction, train
from explorer.checkpoints import load_checkpoint
from explorer.training.induction import (N_TOKENS, SPAN_RANGE, InductionTask, build_tokenizer, evaluate,
                                step_generator)


@pytest.fixture(scope="module")
def task():
    return InductionTask(build_tokenizer())


def test_tokenizer_is_readable_and_round_trips_the_examples(task):
    tok = task.tokenizer
    assert tok.vocab_size == 4 + N_TOKENS
    assert (tok.pad_id, tok.unk_id, tok.bos_id, tok.eos_id) == (0, 1, 2, 3)
    assert tok.token_to_id("t0") == 4 and tok.token_to_id(f"t{N_TOKENS - 1}") == 3 + N_TOKENS
    enc = tok.encode("t17  T3\tt17 hello")
    assert enc.ids == [2, 21, 7, 21, 1] and enc.tokens[0] == "[BOS]"  # [BOS] first; case-insensitive; unknown
    assert len(task.examples) >= 3
    for text in task.examples:
        ids = tok.encode(text).ids
        assert ids[0] == tok.bos_id and tok.unk_id not in ids
        assert tok.decode(ids) == text  # the tokens are the text
        assert len(ids) <= 44  # fits the app's decoder-only input limit for max_len 64 (room to generate)
    assert task.examples[0].split()[:12] == task.examples[0].split()[12:]  # a span and its repeat


def test_training_rows_repeat_a_span_after_a_random_prefix(task):
    batch = task.training_batch(64, step_generator(0, 5))
    rows = torch.cat([batch.src, batch.labels[:, -1:]], dim=1)  # (B, T) the full rows
    assert rows.shape == (64, task.seq_len)
    assert torch.equal(batch.labels[:, :-1], batch.src[:, 1:]) and batch.tgt is None
    assert (rows[:, 0] == task.bos_id).all() and (rows[:, 1:] >= 4).all()  # no special token after [BOS]
    starts = []
    for row in rows.tolist():
        # some span length n and start s (after [BOS] + prefix) make the row periodic from s on, with room
        # for a whole second copy
        found = [(s, n) for n in range(SPAN_RANGE[0], SPAN_RANGE[1] + 1) for s in range(1, len(row) - 2 * n + 1)
                 if all(row[q] == row[q - n] for q in range(s + n, len(row)))]
        assert found, row
        starts.append(min(s for s, _ in found))
    assert max(starts) > 20  # first copies are not all near the start
    assert torch.equal(task.training_batch(64, step_generator(0, 5)).src, batch.src)  # recomputable
    assert not torch.equal(task.training_batch(64, step_generator(0, 6)).src, batch.src)


def test_metadata_round_trip(task):
    d = task.to_dict()
    again = InductionTask.from_dict(d, task.tokenizer)
    assert again.to_dict() == d and d["name"] == "induction" and d["arch"] == "decoder"
    with pytest.raises(ValueError, match="not the induction task"):
        InductionTask.from_dict({"name": "date-gpt"}, task.tokenizer)
    with pytest.raises(ValueError, match="no room"):
        InductionTask(task.tokenizer, seq_len=10)


class StepClock:
    """A clock that moves 0.25 s each time it is read: the run's measured times then do not depend on how fast this
    machine trains (a real 4-step run takes a few hundredths of a second, rounded to 0.0 s on a fast machine)."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.25
        return self.now


def test_a_tiny_training_run_writes_a_checkpoint_with_its_measurements(tmp_path, monkeypatch):
    # train.fit reads time.perf_counter (wall) and time.process_time (CPU) at the start and end of the steps (and on
    # each save and progress line): each read moves its clock on by 0.25 s, so both spans are at least 0.25 s.
    monkeypatch.setattr(train, "time", SimpleNamespace(perf_counter=StepClock(), process_time=StepClock()))
    out = tmp_path / "ind"
    argv = ["--task", "induction", "--out", str(out), "--d-model", "16", "--heads", "2", "--layers", "2",
            "--d-ff", "32", "--dropout", "0", "--positional", "learned", "--steps", "4", "--eval-every", "2",
            "--batch-size", "8", "--warmup", "2", "--quiet", "--threads", "1"]
    assert train.main(argv) == out
    loaded = load_checkpoint(out, device="cpu")
    meta = loaded.task["training"]
    assert loaded.task["name"] == "induction" and loaded.arch == "decoder" and loaded.config.vocab_size == 304
    assert [h["step"] for h in meta["history"]] == [2, 4]
    assert meta["cpu_seconds"] >= 0.2 and meta["seconds"] >= 0.2  # the spans the run measured, rounded to 0.1 s
    assert meta["command"].startswith("python -m explorer.training.train --task induction")
    report = evaluate(loaded.model, InductionTask.from_dict(loaded.task, loaded.tokenizer))
    stored = meta["evaluation"]
    assert stored["scores"]["induction"] == [[round(float(v), 4) for v in row] for row in report.scores["induction"]]
    assert stored["loss_repeated_copy"] == pytest.approx(report.losses.repeated, abs=1e-4)
    card = (out / "README.md").read_text()
    assert meta["command"] in card and f"{loaded.model.num_parameters():,}" in card
    assert f"{report.losses.repeated:.3f}" in card
    assert induction.describe_data() in card

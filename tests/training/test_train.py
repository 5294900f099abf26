import itertools
import json

import pytest
import torch

from explorer.training import train
from explorer.checkpoints import load_checkpoint
from explorer.training.tasks import task_from_dict

TINY = ["--d-model", "16", "--heads", "2", "--layers", "1", "--d-ff", "32", "--dropout", "0.1",
        "--n-train", "256", "--n-val", "16", "--n-test", "24", "--batch-size", "32", "--lr", "3e-3",
        "--warmup", "2", "--length-pool", "4", "--quiet", "--threads", "1"]


@pytest.mark.parametrize("task", ["date-translation", "date-gpt"])
def test_training_writes_a_loadable_checkpoint_with_a_card(tmp_path, task):
    out = tmp_path / task
    argv = ["--task", task, "--out", str(out), "--steps", "4", "--eval-every", "2", *TINY]
    assert train.main(argv) == out
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "config.json", "model.safetensors", "tokenizer.json"]
    loaded = load_checkpoint(out, device="cpu")
    assert loaded.task["name"] == task
    assert loaded.arch == ("encoder-decoder" if task == "date-translation" else "decoder")
    assert loaded.config.d_model == 16 and loaded.config.dropout == 0.1
    meta = loaded.task["training"]
    assert meta["steps"] == 4 and meta["n_test"] == 24 and 0.0 <= meta["test_exact_match"] <= 1.0
    card = (out / "README.md").read_text()
    assert "python -m explorer.training.train --task " + task in card
    assert "Exact match on 24 held-out test dates" in card
    assert f"{loaded.model.num_parameters():,}" in card
    # the saved model generates through the task rebuilt from its metadata
    task_obj = task_from_dict(loaded.task, loaded.tokenizer)
    assert len(task_obj.predict(loaded.model, ["1 mai 2000", "3/4/2001"])) == 2


def test_loss_goes_down_on_a_tiny_run(tmp_path, capsys):
    argv = ["--task", "date-translation", "--out", str(tmp_path / "x"), "--steps", "40", "--eval-every", "40", *TINY,
            "--lr", "1e-2"]
    train.main(argv)
    meta = json.loads((tmp_path / "x" / "config.json").read_text())
    assert meta["task"]["training"]["steps"] == 40
    # an untrained model over 135 tokens has loss about ln(135) = 4.9; 40 steps get well below that
    assert float(meta["task"]["training"]["final_loss"]) < 3.0


def test_resume_continues_exactly_where_the_run_stopped(tmp_path, monkeypatch):
    base = ["--task", "date-gpt", "--steps", "6", "--eval-every", "100", "--save-every", "3", *TINY]
    full = tmp_path / "full"
    train.main([*base, "--out", str(full)])

    broken = tmp_path / "broken"
    real_loss = train.compute_loss
    calls = {"n": 0}

    def crash_on_step_5(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return real_loss(*args, **kwargs)

    monkeypatch.setattr(train, "compute_loss", crash_on_step_5)
    with pytest.raises(KeyboardInterrupt):
        train.main([*base, "--out", str(broken)])
    monkeypatch.setattr(train, "compute_loss", real_loss)
    state = torch.load(broken / train.STATE_FILE, weights_only=True)
    assert state["step"] == 3
    assert not (broken / "model.safetensors").exists()

    train.main([*base, "--out", str(broken), "--resume"])
    assert not (broken / train.STATE_FILE).exists()  # removed once the run is complete
    a = load_checkpoint(full, device="cpu").model.state_dict()
    b = load_checkpoint(broken, device="cpu").model.state_dict()
    for name in a:
        assert torch.equal(a[name], b[name]), name


def test_resume_refuses_a_different_run(tmp_path):
    out = tmp_path / "r"
    base = ["--task", "date-gpt", "--out", str(out), "--eval-every", "100", "--save-every", "2", "--keep-state", *TINY]
    train.main([*base, "--steps", "2"])
    assert (out / train.STATE_FILE).exists()
    with pytest.raises(SystemExit, match="--steps"):
        train.main([*base, "--steps", "4", "--resume"])
    with pytest.raises(SystemExit, match="no training_state.pt"):
        train.main(["--task", "date-gpt", "--out", str(tmp_path / "empty"), "--steps", "2", "--resume", *TINY])


def test_batch_order_is_recomputable_and_covers_each_epoch_once():
    lengths = [i % 17 for i in range(100)]
    order = train.BatchOrder(lengths, batch_size=10, seed=3, pool=4)
    assert order.per_epoch == 10
    epoch0 = torch.cat([order.indices(s) for s in range(10)])
    assert sorted(epoch0.tolist()) == list(range(100))
    again = train.BatchOrder(lengths, batch_size=10, seed=3, pool=4)
    assert torch.equal(again.indices(13), order.indices(13))
    assert not torch.equal(order.indices(10), order.indices(0))  # a new permutation next epoch
    # inside a pool, batches hold examples of similar length
    def spread(rows):
        return sum(max(lengths[i] for i in r) - min(lengths[i] for i in r) for r in rows)

    sorted_batches = [order.indices(s).tolist() for s in range(10)]
    random_batches = [train.BatchOrder(lengths, 10, 3, pool=1).indices(s).tolist() for s in range(10)]
    assert spread(sorted_batches) < spread(random_batches) / 2


def test_lr_schedule_warms_up_then_decays():
    f = [train.lr_factor(s, 100, 10, 0.1) for s in range(100)]
    assert f[0] == pytest.approx(0.1) and f[9] == pytest.approx(1.0)
    assert f[10] == pytest.approx(1.0) and f[99] == pytest.approx(0.1, abs=1e-3)
    assert all(a >= b for a, b in itertools.pairwise(f[10:]))

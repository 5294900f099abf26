"""The SAE trainer: the TopK fit (deterministic for a seed, unit-norm decoder rows, the training scale folded back, dead
latents revived by the AuxK loss), the task's spliced losses against the model trainer's own loss, and the CLI on tiny
runs (seconds): a folder in SAELens's format that load_sae reads with the model, bit-identical for a seed."""

import json
from pathlib import Path

import pytest
import torch

import explorer
from explorer.interpret.sae import SAE, explained_variance, load_sae
from explorer.training import dates, sae_train, train
from explorer.training.sae_data import date_rows, sae_splits
from explorer.training.sae_eval import check_site, held_out_metrics, spliced_losses
from explorer.training.sae_fit import TopKSettings, batch_losses, fit_topk, lr_at
from explorer.training.tasks import task_from_dict

TINY = ["--d-sae", "32", "--k", "4", "--steps", "20", "--batch-size", "256", "--n-train", "30", "--n-test", "8",
        "--threads", "1", "--quiet"]


def sparse_data(n=3000, d=16, atoms=24, active=3, seed=0):
    """x = a sum of `active` of `atoms` random unit directions per row, with positive weights, plus an offset."""
    gen = torch.Generator().manual_seed(seed)
    dictionary = torch.randn(atoms, d, generator=gen)
    dictionary /= dictionary.norm(dim=-1, keepdim=True)
    which = torch.rand(n, atoms, generator=gen).argsort(-1)[:, :active]  # (n, active)
    weights = torch.zeros(n, atoms).scatter(1, which, 1 + torch.rand(n, active, generator=gen))
    return 5 * (weights @ dictionary) + 3.0


def test_a_topk_fit_is_deterministic_for_a_seed_and_reconstructs():
    x = sparse_data()
    settings = TopKSettings(d_sae=48, k=4, steps=300, batch=256, lr=1e-2, seed=1)
    a = fit_topk(x, settings, "blocks.0.hook_resid_pre", model_name="toy")
    b = fit_topk(x, settings, "blocks.0.hook_resid_pre", model_name="toy")
    for name in ("W_enc", "b_enc", "W_dec", "b_dec"):
        assert torch.equal(getattr(a.sae, name), getattr(b.sae, name)), name
    other = fit_topk(x, TopKSettings(d_sae=48, k=4, steps=300, batch=256, lr=1e-2, seed=2), "blocks.0.hook_resid_pre")
    assert not torch.equal(a.sae.W_dec, other.sae.W_dec)
    sae = a.sae
    assert (sae.architecture, sae.k, sae.model_name, sae.d_sae) == ("topk", 4, "toy", 48)
    assert torch.allclose(sae.W_dec.norm(dim=-1), torch.ones(48), atol=1e-5)  # unit rows
    f = sae.encode(x)
    assert int((f > 0).sum(-1).max()) <= 4
    # the training scale is folded back: the SAE reads the raw vectors and reconstructs them as well as in training
    assert a.scale != pytest.approx(1.0)
    assert explained_variance(x, sae.decode(f)) > 0.95
    assert 1 - explained_variance(x, sae.decode(f)) == pytest.approx(a.history[-1]["fvu"], abs=0.03)


def test_only_the_aux_loss_reaches_the_dead_latents():
    gen = torch.Generator().manual_seed(0)
    x = sparse_data(n=64)
    W_dec = torch.randn(32, 16, generator=gen)
    W_dec = (W_dec / W_dec.norm(dim=-1, keepdim=True)).requires_grad_()
    W_enc = W_dec.detach().T.clone().requires_grad_()
    b_enc, b_dec = torch.zeros(32, requires_grad=True), x.mean(0).clone().requires_grad_()
    _, _, fired = batch_losses(x, W_enc, b_enc, W_dec, b_dec, 2, None, 8)
    dead = ~fired  # latents not in any vector's top 2 on this batch
    assert 0 < int(dead.sum()) < 32
    mse, aux, _ = batch_losses(x, W_enc, b_enc, W_dec, b_dec, 2, dead, 8)
    assert float(aux.detach()) > 0
    for loss, reaches in ((mse, False), (aux, True)):
        W_enc.grad = W_dec.grad = None
        loss.backward(retain_graph=True)
        assert bool(W_enc.grad[:, dead].abs().sum() > 0) == reaches
        assert bool(W_dec.grad[dead].abs().sum() > 0) == reaches
    assert float(batch_losses(x, W_enc, b_enc, W_dec, b_dec, 2, torch.zeros(32, dtype=torch.bool), 8)[1]) == 0.0


def test_the_settings_are_checked():
    with pytest.raises(ValueError, match="k=9"):
        TopKSettings(d_sae=8, k=9)
    with pytest.raises(ValueError, match="lr"):
        TopKSettings(d_sae=8, k=2, lr=0.0)
    with pytest.raises(ValueError, match="shape"):
        fit_topk(torch.zeros(5), TopKSettings(d_sae=8, k=2), "blocks.0.hook_resid_pre")
    s = TopKSettings(d_sae=8, k=2, steps=100, lr=1.0, decay=0.2)
    assert [lr_at(t, s) for t in (0, 79, 80, 90, 99)] == pytest.approx([1.0, 1.0, 1.0, 0.5, 0.05])


@pytest.mark.parametrize("name", ["date-gpt", "date-translator"])
def test_the_clean_task_loss_is_the_model_trainers_loss(name):
    loaded = explorer.load(name, "cpu")
    task = task_from_dict(loaded.task, loaded.tokenizer)
    e = dates.generate_examples(1, seed=9)
    rows = date_rows(task, e)
    identity = identity_sae(loaded.config.d_model, "blocks.1.hook_resid_pre" if name == "date-gpt"
                            else "encoder.1.hook_resid_pre")
    losses = spliced_losses(loaded.model, rows, identity)
    with torch.no_grad():
        expected = float(train.compute_loss(loaded.model, task.training_batch(e)))
    assert losses.clean == pytest.approx(expected, abs=1e-5)
    assert losses.sae == pytest.approx(losses.clean, abs=1e-5)  # an exact reconstruction changes nothing
    assert losses.zero > losses.clean + 1.0 and losses.recovered == pytest.approx(1.0, abs=1e-4)


def identity_sae(d: int, hook: str) -> SAE:
    """relu(x) - relu(-x) = x: a standard SAE with 2d latents that reconstructs exactly."""
    eye = torch.eye(d)
    return SAE(torch.cat([eye, -eye], 1), torch.zeros(2 * d), torch.cat([eye, -eye], 0), torch.zeros(d), "standard",
               hook, apply_b_dec_to_input=False)


def test_an_encoder_decoders_decoder_is_refused():
    loaded = explorer.load("date-translator", "cpu")
    with pytest.raises(ValueError, match="encoder hook"):
        check_site(loaded.model, "decoder.0.resid_pre")


@pytest.mark.parametrize("model, hook", [("induction-gpt", "blocks.1.hook_resid_post"),
                                         ("date-translator", "encoder.0.hook_resid_post")])
def test_a_tiny_run_writes_a_folder_load_sae_reads_bit_identical_for_a_seed(tmp_path, model, hook):
    argv = ["--model", model, "--hook", hook, *TINY]
    first = sae_train.main([*argv, "--out", str(tmp_path / "a")])
    sae_train.main([*argv, "--out", str(tmp_path / "b")])
    assert sorted(p.name for p in first.iterdir()) == ["README.md", "cfg.json", "sae_weights.safetensors",
                                                       "sparsity.safetensors"]
    for name in ("sae_weights.safetensors", "sparsity.safetensors"):
        assert (first / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    loaded = explorer.load(model, "cpu")
    sae = load_sae(Path(first), model=loaded.model, model_name=model)
    assert (sae.architecture, sae.k, sae.d_sae, sae.hook_name, sae.model_name) == ("topk", 4, 32, hook, model)
    assert sae.sparsity is not None and sae.sparsity.shape == (32,)
    cfg = json.loads((first / "cfg.json").read_text())
    meta = cfg["metadata"]
    assert meta["model_name"] == model and meta["hook_name"] == hook
    assert meta["training"]["sequences"] == 30 and meta["evaluation"]["sequences"] == 8
    assert set(meta["evaluation"]["met"]) == {"explained_variance", "ce_loss_recovered", "l0", "dead_fraction"}
    card = (first / "README.md").read_text()
    assert f"python -m explorer.training.sae_train --model {model} --hook {hook}" in card
    assert f"{meta['evaluation']['explained_variance']:.4f}" in card
    # the numbers written are the ones held_out_metrics gives on the same held-out sequences
    _, test = sae_splits(loaded, 30, 8, seed=0)
    again = held_out_metrics(loaded.model, test, sae)
    assert again.saelens.explained_variance == pytest.approx(meta["evaluation"]["explained_variance"], abs=1e-4)
    assert again.ce_loss_recovered == pytest.approx(meta["evaluation"]["ce_loss_recovered"], abs=1e-4)


def test_bad_options_are_refused():
    with pytest.raises(SystemExit):
        sae_train.parse_args(["--model", "date-gpt", "--hook", "blocks.0.hook_resid_pre", "--out", "x", "--k", "40",
                              "--d-sae", "32"])
    with pytest.raises(ValueError, match="encoder hook"):
        sae_train.main(["--model", "date-translator", "--hook", "decoder.0.hook_resid_pre", "--out", "x", *TINY])

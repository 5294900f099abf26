"""The shipped SAEs (checkpoints/saes/): each loads with its shipped model, says which model and hook it reads, meets
issue 36's thresholds on held-out sequences of its model's task (recomputed here on a small seeded held-out set, not
read from the card), and its named latents are what the card says they are. Reads the committed files; no training."""

import json
from pathlib import Path

import pytest
import torch

import explorer
from explorer.interpret.sae import hook_site, load_sae, shipped_saes
from explorer.training.sae_data import sae_splits
from explorer.training.sae_eval import THRESHOLDS, collect_activations, held_out_metrics
from explorer.training.sae_train import ACTIVE_SHARE

ROOT = Path(__file__).resolve().parent.parent / "checkpoints" / "saes"
# name -> (model, hook, held-out sequences measured here (the cards: 500), {named property: (min precision, min
# recall)} checked for the latent the card names for it). The held-out sequences are the card's own split (disjoint
# from the SAE's training sequences): for the dates the first of the card's held-out dates, for induction fresh rows.
SHIPPED = {
    "date-gpt-L3-resid-pre": ("date-gpt", "blocks.3.hook_resid_pre", 100, {
        "[SEP]": (0.95, 0.95), "ISO dash 1": (0.9, 0.95), "ISO month digit 1": (0.85, 0.95),
        "next char 9": (0.8, 0.8), "date month number": (0.8, 0.75)}),
    "date-translator-enc-L1-resid-post": ("date-translator", "encoder.1.hook_resid_post", 100, {
        "date day": (0.95, 0.95), "date year digit 4": (0.95, 0.95), "date month number": (0.9, 0.6),
        "char ␣": (0.95, 0.95)}),
    "induction-gpt-L1-resid-post": ("induction-gpt", "blocks.1.hook_resid_post", 300, {
        "repeated token": (0.95, 0.95), "new token": (0.97, 0.6), "copies t123": (0.9, 0.9),
        "token t60": (0.9, 0.9), "token t155": (0.9, 0.9)}),
    "induction-gpt-L1-resid-pre": ("induction-gpt", "blocks.1.hook_resid_pre", 300, {
        "token t3": (0.95, 0.95), "token t31": (0.95, 0.95), "token t193": (0.95, 0.95)}),
}


@pytest.fixture(scope="module")
def models():
    return {name: explorer.load(name, "cpu") for name in {model for model, *_ in SHIPPED.values()}}


def cfg(name: str) -> dict:
    return json.loads((ROOT / name / "cfg.json").read_text())


@pytest.fixture(scope="module")
def measured(models):
    """name -> (the SAE, its held-out rows, their activations at its site), computed once."""
    out = {}
    for name, (model_name, _, n_test, _) in SHIPPED.items():
        loaded = models[model_name]
        sae = load_sae(name, model=loaded.model, model_name=model_name)  # by its shipped name, as the app types it
        training = cfg(name)["metadata"]["training"]
        rows = sae_splits(loaded, training["sequences"], n_test, training["data_seed"])[1]
        out[name] = sae, rows, collect_activations(loaded.model, rows, hook_site(loaded.config, sae.hook_name))
    return out


def test_the_shipped_saes_are_these_and_small():
    assert shipped_saes() == sorted(SHIPPED)
    for name in SHIPPED:
        files = sorted(p.name for p in (ROOT / name).iterdir())
        assert files == ["README.md", "cfg.json", "sae_weights.safetensors", "sparsity.safetensors"], name
    total = sum(p.stat().st_size for p in ROOT.rglob("*") if p.is_file())
    assert total < 2 * 1024 * 1024, f"{total:,} bytes"


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_it_loads_with_its_model_and_names_it(models, measured, name):
    model_name, hook, _, _ = SHIPPED[name]
    meta = cfg(name)["metadata"]
    assert meta["model_name"] == model_name and meta["hook_name"] == hook
    assert hook.split(".hook_")[1] in ("resid_pre", "resid_post")
    sae = measured[name][0]
    assert not sae.notes  # no model-name mismatch, nothing applied as nothing
    assert (sae.architecture, sae.d_in, sae.normalize_activations) == ("topk", models[model_name].config.d_model,
                                                                       "none")
    assert sae.k <= 32 and 256 <= sae.d_sae <= 1024
    assert sae.sparsity is not None and sae.sparsity.shape == (sae.d_sae,)
    assert torch.allclose(sae.W_dec.norm(dim=-1), torch.ones(sae.d_sae), atol=1e-4)  # unit decoder rows
    card = (ROOT / name / "README.md").read_text()
    assert f"python -m explorer.training.sae_train --model {model_name} --hook {hook}" in card
    assert f"--out checkpoints/saes/{name} " in card


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_it_meets_the_thresholds_on_held_out_data(models, measured, name):
    sae, rows, _ = measured[name]
    m = held_out_metrics(models[SHIPPED[name][0]].model, rows, sae)
    assert m.saelens.l0 <= THRESHOLDS["l0"]
    assert m.saelens.explained_variance >= THRESHOLDS["explained_variance"]
    assert m.ce_loss_recovered >= THRESHOLDS["ce_loss_recovered"]
    assert m.task.recovered >= THRESHOLDS["ce_loss_recovered"]  # on the task's own loss too
    # dead latents: on a few thousand tokens a rare latent may not fire; the card's 500 sequences give the number the
    # threshold is for (checked as written there)
    assert m.dead_fraction <= 1.5 * THRESHOLDS["dead_fraction"]
    evaluation = cfg(name)["metadata"]["evaluation"]
    assert evaluation["dead_fraction"] <= THRESHOLDS["dead_fraction"] and all(evaluation["met"].values())
    assert m.saelens.explained_variance == pytest.approx(evaluation["explained_variance"], abs=0.01)


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_its_named_latents_are_what_the_card_says(measured, name):
    sae, rows, acts = measured[name]
    f = sae.encode(acts.x)  # (N, F)
    props = [set(rows.properties[int(r)][int(p)]) for r, p in zip(acts.row, acts.position)]
    named = cfg(name)["metadata"]["named_latents"]
    card = (ROOT / name / "README.md").read_text()
    assert len(named) >= 3
    by_property = {entry["property"]: entry["latent"] for entry in named}
    claims = SHIPPED[name][3]
    assert set(claims) <= set(by_property)
    for entry in named:
        assert f"| {entry['latent']} | {entry['property']} | {entry['precision']:.3f} | {entry['recall']:.3f} |" in card
        a = f[:, entry["latent"]]
        active = a > ACTIVE_SHARE * a.max()  # as the card counts it
        holds = torch.tensor([entry["property"] in p for p in props])
        both = int((active & holds).sum())
        precision, recall = both / max(1, int(active.sum())), both / max(1, int(holds.sum()))
        low_p, low_r = claims.get(entry["property"], (0.75, 0.5))  # every named latent: near the card's 0.85 / 0.5
        assert precision >= low_p and recall >= low_r, (entry, precision, recall)

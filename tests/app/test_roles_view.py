"""The head roles the page scores (explorer.app.tabs.roles.scores, drawn by the Roles tab): scores on the typed text and
the probe, the overview's role labels, the heads a role ablation picks, and the probe's copy losses with heads off."""

from __future__ import annotations

import math

import pytest
import torch

from explorer.app.run.pair import compare
from explorer.app.run.readings import read_texts
from explorer.app.run.role_labels import text_scores, tile_notes
from explorer.app.run.toggles import Toggles
from explorer.app.serving.errors import AppError
from explorer.app.tabs.roles.scores import RoleResult, role_ablation, score_roles, stack_of
from explorer.app.tabs.roles.tab import roles_markdown
from explorer.interpret import ROLES, copy_losses, head_mask_without, head_roles, repeated_tokens


def test_tile_notes_pick_the_strongest_role_and_local_only_alone():
    scores = {r: torch.zeros(2, 3) for r in ROLES}
    scores["previous"][0, 0], scores["local"][0, 0] = 0.91, 0.99  # a previous-token head is also "local"
    scores["induction"][0, 1], scores["duplicate"][0, 1] = 0.62, 0.7
    scores["local"][1, 2] = 0.8  # no narrower role: local
    scores["self"][1, 0] = 0.49  # below the threshold
    scores["first"][1, 1] = float("nan")
    assert tile_notes(scores) == [["prev .91", "dup .70", ""], ["", "", "local .80"]]
    assert tile_notes({"self": torch.ones(1, 1)}) == [["self 1.00"]]
    assert tile_notes(None) is None


def test_overview_labels_come_from_the_baseline_attention(app):
    """The run's own attention gives the same scores as a fresh head_roles run on the same ids."""
    _, loaded = app.load("date-gpt")
    view = app.View("decoder", 0, 0, 2)  # sentence 2: row 1 of the batch, padded
    a = app.analyze(loaded, app.DATE1, app.DATE2, app.toggles({"decoder": ["L0 H0"]}), view)
    c = compare(loaded, app.DATE1, app.DATE2, Toggles(), 1024)
    got = text_scores(c.baseline, "decoder", 1)
    assert a.reduction("overview").roles == tile_notes(got)  # the toggled grid is labelled with the baseline's roles
    ids = torch.tensor([c.baseline.ids["decoder"][1]])
    want = head_roles(loaded.model, ids, padding=False)["decoder"]
    for role in ROLES:
        torch.testing.assert_close(got[role], want[role], atol=1e-5, rtol=0, equal_nan=True)
    assert text_scores(c.baseline, "cross", 0) is None


def test_encoder_has_no_induction_and_says_why(app):
    _, loaded = app.build("encoder")
    r = score_roles(loaded, app.DATE1, "encoder", None, 1024)
    assert r.stack == "encoder" and "induction" not in r.probe and r.losses is None
    assert set(r.text) == set(ROLES) - {"induction"}
    assert "Induction is not scored" in roles_markdown(r)
    with pytest.raises(AppError, match="Induction is not scored"):
        role_ablation(r, "induction", 1, "probe")


def test_encoder_decoder_scores_the_stack_shown(app):
    _, loaded = app.load("date-translator")
    assert stack_of(loaded, "cross") == "decoder" and stack_of(loaded, "encoder") == "encoder"
    dec = score_roles(loaded, app.DATE1, "cross", None, 1024)
    reading = read_texts(loaded, app.DATE1, None, 1024)[0]
    src, tgt = reading.tensors("cpu")
    want = head_roles(loaded.model, src, tgt, padding=False)["decoder"]
    torch.testing.assert_close(dec.text["previous"], want["previous"], equal_nan=True)
    assert dec.stack == "decoder" and dec.losses is None and set(dec.probe) == set(ROLES)
    assert score_roles(loaded, app.DATE1, "encoder", None, 1024).stack == "encoder"


def test_role_ablation_and_copy_losses_with_heads_off(app):
    _, loaded = app.load("date-gpt")
    n_layers, n_heads = loaded.config.decoder_layers, loaded.config.n_heads
    r = score_roles(loaded, app.DATE1, "decoder", None, 1024)
    top = role_ablation(r, "local", 2, "probe")
    flat = r.probe["local"].flatten()
    assert len(top) == 2 and float(r.probe["local"][top[0]]) == float(flat.max())
    assert float(r.probe["local"][top[0]]) >= float(r.probe["local"][top[1]])
    assert role_ablation(r, "previous", 1, "typed text")[0] == divmod(int(r.text["previous"].flatten().argmax()),
                                                                      n_heads)
    off = {"decoder": head_mask_without(top, n_layers, n_heads)}
    toggled = score_roles(loaded, app.DATE1, "decoder", off, 1024)
    base, with_off = toggled.losses
    probe = repeated_tokens(loaded.tokenizer, span=20, batch=4, seed=0, vocab_size=loaded.config.vocab_size)
    assert math.isclose(base.repeated, copy_losses(loaded.model, probe).repeated, rel_tol=1e-6)
    assert math.isclose(with_off.repeated, copy_losses(loaded.model, probe, head_mask=off).repeated, rel_tol=1e-6)
    assert with_off.repeated != base.repeated
    md = roles_markdown(toggled)
    assert f"{base.repeated:.3f}" in md and f"{with_off.repeated:.3f}" in md
    with pytest.raises(AppError, match="unknown role"):
        role_ablation(r, "nonsense", 1, "probe")


def test_nan_scores_are_never_ablated():
    nan = torch.full((1, 2), float("nan"))
    r = RoleResult("decoder", {"induction": nan}, {"induction": nan}, "probe", None)
    assert role_ablation(r, "induction", 2, "probe") == []

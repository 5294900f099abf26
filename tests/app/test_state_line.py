"""The state line above the tabs (explorer.app.run.state_line) and the note under it that explains "2·2" labels
(explorer.labels.occurrence_note): words for every toggle, never blank, from the Run actually made."""

from __future__ import annotations

from explorer.app.run.state_line import NOTHING, state_line
from explorer.app.run.toggles import Toggles
from explorer.labels import occurrence_note, unique_labels

KINDS = {"encoder": (2, 4), "decoder": (2, 4), "cross": (2, 4)}
ALL = frozenset((layer, head) for layer in range(2) for head in range(4))


def test_no_toggle_is_said_in_words():
    assert state_line(Toggles(), KINDS) == NOTHING
    assert state_line(Toggles(heads_on={k: ALL for k in KINDS}), KINDS) == NOTHING  # every head on is no toggle


def test_every_toggle_is_named_once_in_order():
    toggles = Toggles(causal=False, padding=False, custom="local window", window=2,
                      heads_on={"encoder": ALL, "decoder": ALL, "cross": ALL - {(0, 1), (1, 3)}})
    assert state_line(toggles, KINDS) == ("Toggles: Padding mask off · Causal mask off · window 2 · "
                                          "cross L0 H1, L1 H3 off")
    assert state_line(Toggles(custom="block token", block_token=3), KINDS) == "Toggles: position 3 blocked"
    assert state_line(Toggles(custom="no self"), KINDS) == "Toggles: no attention to self"
    assert state_line(Toggles(heads_on={"decoder": frozenset()}), KINDS) == "Toggles: every decoder head off"


def test_the_causal_mask_is_not_named_for_a_model_without_one():
    assert state_line(Toggles(causal=False), {"encoder": (2, 4)}) == NOTHING


def test_the_occurrence_note_names_the_label_it_explains():
    labels = unique_labels(["[BOS]", "2", "0", "2", "6", "-", "1", "1"])
    assert labels[3] == "2·2"
    assert occurrence_note(labels).startswith("“2·2” in the figures = the 2nd “2” of the sequence.")
    assert occurrence_note(unique_labels(["a", "b", "c"])) is None
    assert occurrence_note(["l·l", "x"]) is None  # a token that merely holds a middle dot


def test_a_run_carries_its_state_and_note(app):
    """date-translator with every cross head off: the line names it; the answer 2026-11-21 repeats "2" and "1"."""
    _, loaded = app.load("date-translator")
    heads = {**app.all_heads(loaded), "cross": []}
    a = app.analyze(loaded, app.DATE1, None, app.toggles(heads), app.View("decoder", 0, 0, 1))
    assert a.state == "Toggles: every cross head off"
    assert a.note is not None and "“2·2”" in a.note
    plain = app.analyze(loaded, "3 May 2024", None)
    assert plain.state == NOTHING


def test_a_sampled_run_says_how_it_drew_after_its_toggles():
    from explorer.outputs.sampling import Sampling

    sampled = Sampling(temperature=0.7, top_k=40, top_p=0.95, seed=12)
    assert state_line(Toggles(), KINDS, sampled) == (NOTHING + " · Generated tokens sampled: T=0.7, top-k=40, "
                                                     "top-p=0.95, seed=12")
    assert state_line(Toggles(causal=False), KINDS, Sampling()) == ("Toggles: Causal mask off · Generated tokens "
                                                                    "sampled: T=1, top-k=off, top-p=off, seed=0")
    assert state_line(Toggles(), KINDS, None) == NOTHING  # greedy is not said: the line is as before

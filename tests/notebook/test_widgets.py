"""The notebook widgets, driven from Python as their controls drive them: a change reruns the model and sends new
outputs (`runs` counts them), the numbers on `.data` are the model's own, and a bad value is said in words."""

from __future__ import annotations

import numpy as np

import explorer.notebook as nb
from tests.notebook.conftest import DATE

TEXT = DATE + " ="


def test_a_head_switch_reruns_the_model_and_changes_the_output(date_gpt):
    w = nb.switches(date_gpt, TEXT, layer=2)
    assert w.runs == 1 and w.error == "" and len(w.figures) == 3 and not w.data["output"]["changed"]
    w.set(**{"heads_off:decoder": [[2, 0]]})  # what the switch L2 H0 writes
    assert w.runs == 2 and len(w.figures) == 5  # the baseline and the difference join
    assert [r[2] for r in w.data["output"]["rows"]] == ["2026-11-21", "2046-11-21"]
    assert [r[2] for r in w.tables[0]["rows"]] == ["2026-11-21", "2046-11-21"]
    assert not w.data["head_on"]  # the head shown, L2 H0, is switched off
    w.set(layer="two")
    assert w.runs == 2 and w.error == "layer must be a whole number, got 'two'"
    w.set(layer=1)
    assert w.runs == 3 and w.error == "" and w.data["view"].layer == 1


def test_inside_a_head_gives_the_weights_the_run_returns(date_gpt):
    head = nb.inside_head(date_gpt, TEXT, layer=2, head=0, query=5)
    shown = nb.show(date_gpt, TEXT, layer=2, head=0)
    assert head.error == "" and len(head.figures) == 2
    weights = [w if w is not None else 0.0 for w in head.data["baseline"]["weights"]]
    np.testing.assert_allclose(weights, shown.data["weights"][5, :len(weights)], atol=1e-5)
    head.set(**{"heads_off:decoder": [[1, 0], [1, 1], [1, 2], [1, 3]]})  # layer 1 off changes layer 2's input
    assert head.runs == 2 and head.data["toggled"] is not None
    assert not np.allclose(head.data["toggled"]["weights"], weights, atol=1e-4)
    head.set(layer=9)
    assert head.error == "layer 9 is outside the 4 decoder layers: use 0..3"


def test_why_this_token_ranks_the_heads_and_reruns_with_the_switches(date_gpt):
    why = nb.why(date_gpt, TEXT, method="input_x_gradient")
    assert why.error == "" and why.data["token"] == "[EOS]" and len(why.figures) == 2  # after the greedy answer
    rows = why.data["ranking"]["rows"]
    assert rows and all(abs(r[2] - (r[1] - why.data["baseline_prob"])) < 2e-4 for r in rows)  # change = p - p0
    base = why.data["contributions"].baseline
    assert abs(base.total - base.logit) < 1e-3  # the shares add up to the model's own logit
    before = base.logit
    why.set(**{"heads_off:decoder": [[0, 0]]})
    assert why.runs == 2 and why.data["contributions"].toggled is not None
    assert why.data["contributions"].baseline.logit == before

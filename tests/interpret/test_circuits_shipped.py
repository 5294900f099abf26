"""The shipped models' circuits, found from Python and checked (docs/circuits.md says what they are):

- induction-gpt (trained with a concave penalty on its heads' OV norms, so one induction head, L1 H2, copies and
  one previous-token head, L0 H1, feeds it), the earlier copy refreshed (half="first": what the keys read changes):
  the previous-token head into the induction head's key input is among the strongest edges (K-composition). With
  the query's copy refreshed (half="second") the query side carries the difference. The issue's criterion: a circuit
  of <= 10% of the 110 edges keeps >= 0.9 of the logit difference on held-out repeated sequences; the greedy
  circuit of the earlier copy (11 edges) and the circuit ordered by exact effects (select="exact", 10 edges) of the
  query's copy, each on held-out pairs.
- date-translator, the month of "lundi 3 mars 2025"-like dates: a circuit of about an eighth of the edges keeps 0.9,
  read in the encoder and carried by cross-attention (every decoder self-attention head off).

Found pairs and held-out pairs come from different seeds."""

import pytest
import torch

import explorer
from explorer.interpret import circuit_faithfulness, find_circuit
from explorer.interpret.circuits import generated_task


@pytest.fixture(scope="module")
def induction():
    return explorer.load("induction-gpt", "cpu")


@pytest.fixture(scope="module")
def date_translator():
    return explorer.load("date-translator", "cpu")


def test_the_previous_token_head_feeds_the_induction_heads_keys(induction):
    found = generated_task(induction, 64, seed=0, half="first")
    held = generated_task(induction, 64, seed=1, half="first")
    c = find_circuit(induction.model, found, metric="logprob", held_out=held)
    top = [(e.upstream, e.downstream) for e in c.all_edges[:5]]  # of 110
    assert ("decoder.L0.H1", "decoder.L1.H2.k") in top  # measured: 3rd
    into_keys = [e for e in c.all_edges if e.downstream.startswith("decoder.L1.") and e.downstream.endswith(".k")
                 and e.upstream != "embed"]
    assert into_keys[0].upstream == "decoder.L0.H1"  # the strongest K-composition comes from the previous-token head
    # measured: 11 edges of 110, 0.924 on the found pairs, 0.949 held out; EAP-IG's 33 points leave a gap of 6.6%
    assert c.faithfulness >= 0.9 and c.held_out.value >= 0.9 and c.scores.gap < 0.1
    assert len(c.edges) <= 0.1 * c.n_edges
    assert ("decoder.L0.H1", "decoder.L1.H2.k") in [(e.upstream, e.downstream) for e in c.edges]
    assert not c.off["decoder"][0, 1] and not c.off["decoder"][1, 2]
    assert c.off["decoder"].sum() == 6  # every other head is off: one previous-token head, one induction head


def test_with_the_querys_copy_refreshed_the_query_side_carries_the_difference(induction):
    """The issue's criterion, found by find_circuit itself: ordered by the exact effects of the 32 strongest edges
    (select="exact"), 10 edges (9% of 110) keep 0.9 of the logit difference, on held-out pairs too. Greedy by the
    estimates needs 21 (measured: 1.000 found, 1.000 held out): two edges the estimate puts near 0 (the embeddings and
    layer 0's MLP into the logits, the current token's own push) move the logit difference by 2.3 and 3.4 of 11.5."""
    found = generated_task(induction, 64, seed=0)
    held = generated_task(induction, 64, seed=1)
    c = find_circuit(induction.model, found, held_out=held, select="exact", curve_points=10)
    top = [(e.upstream, e.downstream) for e in c.all_edges[:5]]  # by estimate
    assert ("embed", "decoder.L1.H2.q") in top and ("decoder.L1.mlp", "logits") in top
    # measured: 10 edges, 1.014 found, 0.994 held out; the curve's held-out points track the found ones
    assert len(c.edges) <= 0.1 * c.n_edges and c.faithfulness >= 0.9 and c.held_out.value >= 0.9
    assert c.curve.faithfulness[-1] == 1.0 and len(c.curve.held_out) == len(c.curve.sizes)
    # the circuit is the edges whose patch alone moves the logit difference by more than 1 (2.3 to 11.4 of 11.5); every
    # other edge checked moves it by less than 0.5 (most by about 0: heads whose OV weights the penalty took to 0)
    strong = {(e.upstream, e.downstream) for e, x in zip(c.exact.edges, c.exact.exact) if abs(x) > 1.0}
    assert {(e.upstream, e.downstream) for e in c.edges} == strong
    assert max(abs(x) for e, x in zip(c.exact.edges, c.exact.exact) if (e.upstream, e.downstream) not in strong) < 0.5
    assert ("decoder.L1.H2", "decoder.L1.mlp.in") in strong and ("decoder.L1.H2", "logits") in strong
    # and circuit_faithfulness agrees on the held-out pairs, from the edges' names alone
    kept = circuit_faithfulness(induction.model, held, [(e.upstream, e.downstream) for e in c.edges])
    assert kept.edges == len(c.edges) and abs(float(kept) - c.held_out.value) < 1e-6


def test_the_month_circuit_of_the_date_translator(date_translator):
    found = generated_task(date_translator, 64, seed=0)
    held = generated_task(date_translator, 64, seed=1)
    c = find_circuit(date_translator.model, found, held_out=held)
    # measured: 65 edges of 529 (12%), 0.903 found, 0.908 held out, 17 points, gap 1.3%
    assert c.scores.reached and c.faithfulness >= 0.9 and c.held_out.value >= 0.85
    assert len(c.edges) <= 0.15 * c.n_edges
    names = {(e.upstream, e.downstream) for e in c.edges}
    assert ("decoder.L1.mlp", "logits") in names and ("cross.L1.H1", "logits") in names
    assert any(d.startswith("cross.L1.H1.") and u.startswith("encoder.") for u, d in names)  # it reads the month
    assert c.scores.clean.mean() > 10 and c.scores.corrupted.mean() < -10  # answer vs wrong digit, both ways
    assert c.notes and c.notes[0].startswith("Cross-attention: ")  # the graph's family, said
    assert c.off["decoder"].all() and not c.off["cross"][1].any()  # layer 1's cross heads all in, no self head


def test_the_api_from_ids_and_the_faithfulness_of_given_edges(induction):
    task = generated_task(induction, 16, seed=2)
    clean = [p.clean for p in task.pairs]
    corrupted = [p.corrupted for p in task.pairs]
    answers = torch.tensor([p.answer for p in task.pairs])
    wrongs = [p.wrong for p in task.pairs]
    c = find_circuit(induction.model, clean, corrupted, answers, wrongs, method="eap", edges=12, exact_top=8,
                     curve_points=6)
    assert c.select == "top" and len(c.edges) <= 12 and c.scores.method == "eap" and len(c.exact.exact) == 8
    assert all(abs(a.score) >= abs(b.score) for a, b in zip(c.edges, c.edges[1:]))
    again = circuit_faithfulness(induction.model, (clean, corrupted, answers, wrongs), c.edges)
    assert abs(float(again) - c.faithfulness) < 1e-9 and again.edges == len(c.edges)
    mask = c.head_mask()["decoder"]
    assert mask.shape == (2, 4) and set(mask.unique().tolist()) <= {0.0, 1.0}
    without_wrongs = find_circuit(induction.model, clean, corrupted, answers, method="eap", edges=12, exact_top=0,
                                  curve_points=3)
    assert (without_wrongs.scores.wrongs != without_wrongs.scores.answers).all()  # the corrupted run's top tokens
    with pytest.raises(ValueError, match="edges must be a number of edges from 1 to 110"):
        find_circuit(induction.model, task, edges=0)

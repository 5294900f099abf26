"""find_circuit end to end on the tiny models of every layout (from-scratch decoder, GPT-NeoX-like parallel residual,
grouped-query attention, encoder-decoder): the family said in `notes`, held-out pairs kept apart, the curve, the heads
left off as the page's switches, and circuit_faithfulness agreeing with the circuit found."""

import pytest
import torch

from tests.interpret.circuit_cases import CASES, tiny_model, tiny_task
from explorer.interpret import circuit_faithfulness, find_circuit

SAID = {"decoder": None, "neox": "Parallel residual", "gqa": "Grouped-query attention",
        "encoder-decoder": "Cross-attention"}


@pytest.mark.parametrize("case", CASES)
def test_find_circuit_in_every_layout(case):
    model = tiny_model(case)
    task = tiny_task(model, n=8)
    c = find_circuit(model, task, held_out=2, curve_points=6, exact_top=6)
    said = [n for n in c.notes if not n.startswith("The edge scores")]
    assert [n.split(" (")[0].split(":")[0] for n in said] == ([SAID[case]] if SAID[case] else [])
    assert c.per_pair.shape == (6,) and c.held_out.per_pair.shape == (2,)  # 6 pairs found, 2 held out
    assert len(c.curve.sizes) == len(c.curve.faithfulness) == len(c.curve.held_out) and c.curve.sizes[-1] == c.n_edges
    assert c.curve.faithfulness[-1] == c.curve.held_out[-1] == 1.0
    assert c.select == "greedy" and 0 < len(c.edges) <= c.n_edges
    kept = {(e.upstream, e.downstream) for e in c.edges}
    assert kept <= {(e.upstream, e.downstream) for e in c.all_edges}
    for kind, off in c.off.items():  # a head is on exactly when it is a node of the circuit
        layers, heads = off.shape
        for layer in range(layers):
            for head in range(heads):
                assert bool(off[layer, head]) == (f"{kind}.L{layer}.H{head}" not in c.nodes)
        assert torch.equal(c.head_mask()[kind], (~off).float())
    again = circuit_faithfulness(model, task.split(2)[0], c.edges)
    # the same circuit run again; the clean metric comes from a plain run here, from the scores' clean pass there
    assert again.value == pytest.approx(c.faithfulness, abs=1e-4)
    assert torch.allclose(again.per_pair, c.per_pair, rtol=1e-3, atol=1e-4, equal_nan=True)
    assert len(c.exact.exact) == 6 and -1 <= c.exact.spearman <= 1


def test_the_exact_order_takes_the_checked_edges_by_their_exact_effect_first():
    """select="exact": the circuit of n edges is the n checked edges of largest |exact effect| (n <= exact_top), here
    on the from-scratch decoder; the estimate's order would differ unless the two agree. An unknown order, or "exact"
    with no edge checked, is refused."""
    model = tiny_model("decoder")
    task = tiny_task(model, n=6)
    c = find_circuit(model, task, edges=3, select="exact", curve_points=4, exact_top=8)
    ranked = sorted(zip(c.exact.edges, c.exact.exact), key=lambda ex: -abs(ex[1]))
    first = {(e.upstream, e.downstream) for e, _ in ranked[:3]}
    # the circuit is those 3, less any edge pruned as dangling (a node with no way to the logits)
    assert c.edges and {(e.upstream, e.downstream) for e in c.edges} <= first and c.select == "exact"
    with pytest.raises(ValueError, match="select must be one of top, greedy, exact"):
        find_circuit(model, task, select="best")
    with pytest.raises(ValueError, match="exact_top must be at least 1"):
        find_circuit(model, task, select="exact", exact_top=0)


def test_the_rank_correlation_equals_scipys_without_scipy():
    """The exact check's Spearman is computed here (the app's requirements hold no scipy), ties by average rank."""
    import random

    from scipy.stats import spearmanr  # a test dependency only

    from explorer.interpret.circuits.circuit import _spearman

    rng = random.Random(0)
    for n in (2, 3, 8, 32):
        a = [rng.choice([0.0, 0.5, 1.0, rng.random()]) for _ in range(n)]  # ties on purpose
        b = [rng.choice([0.0, rng.random(), -rng.random()]) for _ in range(n)]
        if len(set(a)) > 1 and len(set(b)) > 1:
            assert _spearman(a, b) == pytest.approx(spearmanr(a, b).statistic, abs=1e-12)
    assert _spearman([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == pytest.approx(-1.0)
    nan = _spearman([1.0], [2.0])
    assert nan != nan and _spearman([1.0, 1.0], [1.0, 2.0]) != _spearman([1.0, 1.0], [1.0, 2.0])

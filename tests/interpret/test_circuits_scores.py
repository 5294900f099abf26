"""Edge scores on tiny models built here: EAP against exact edge patching (every edge patched alone), EAP-IG's
completeness (the embeddings' edges add up to m(corrupted) - m(clean) within 2%), every metric, the points chosen per
request and the words when the cap stops them, and the refusals."""

import pytest
import torch
from scipy.stats import spearmanr

from tests.interpret.circuit_cases import CASES, linear_regime, tiny_model, tiny_task
from explorer.interpret.circuits import CircuitGraph, edge_scores
from explorer.interpret.circuits.faithfulness import exact_effects
from explorer.interpret.circuits.metrics import METRICS
from explorer.interpret.circuits.scores import prepare


def scored(case, method, metric="logit_diff", **kw):
    model = kw.pop("model", None) or tiny_model(case)
    task = tiny_task(model)
    graph = CircuitGraph(model.config)
    prepared = prepare(model, graph, list(task.pairs), metric)
    return model, graph, prepared, edge_scores(model, graph, list(task.pairs), method, metric, prepared=prepared, **kw)


def exact_and_estimate(model, graph, prepared, result):
    us, rs = torch.nonzero(graph.real, as_tuple=True)
    exact = exact_effects(model, graph, prepared, list(zip(us.tolist(), rs.tolist())), result.metric, result.clean)
    return exact, result.scores[us, rs]


def test_eap_ranks_the_top_edges_as_exact_patching_does_on_a_tiny_decoder():
    # measured: the 10 strongest edges (of 110) in the same order, Spearman 0.9998 over every edge
    model = linear_regime(tiny_model("decoder"))
    model, graph, prepared, result = scored("decoder", "eap", model=model)
    exact, estimate = exact_and_estimate(model, graph, prepared, result)
    top = 10
    assert torch.equal(exact.abs().argsort(descending=True)[:top], estimate.abs().argsort(descending=True)[:top])
    assert spearmanr(estimate, exact).statistic > 0.99


@pytest.mark.parametrize("case", CASES)
def test_eap_agrees_with_exact_patching_in_every_layout(case):
    # measured Spearman over every edge: decoder 0.9998, neox 0.977, gqa 0.986, encoder-decoder 0.986
    model = linear_regime(tiny_model(case))
    model, graph, prepared, result = scored(case, "eap", model=model)
    exact, estimate = exact_and_estimate(model, graph, prepared, result)
    assert spearmanr(estimate, exact).statistic > 0.95
    assert result.points == 1 and result.reached is None


@pytest.mark.parametrize("case", CASES)
def test_eap_ig_scores_of_the_embeddings_add_up_to_the_metrics_change(case):
    model, graph, prepared, result = scored(case, "eap-ig")
    assert result.reached and result.gap < 0.02 and result.message is None
    assert result.points in (5, 9, 17, 33)
    # the same measured here: the embeddings' edges, summed over receivers and pairs
    embed = result.scores[graph.embed_nodes()].sum() * len(result.clean)
    change = (result.corrupted - result.clean).sum()
    assert abs(float(embed - change)) < 0.02 * float((result.corrupted - result.clean).abs().sum())
    eap = scored(case, "eap")[3]
    assert eap.gap > result.gap  # one point promises less


@pytest.mark.parametrize("metric", METRICS)
def test_every_metric_scores_and_adds_up(metric):
    model, graph, prepared, result = scored("decoder", "eap-ig", metric)
    assert result.reached and result.scores.abs().sum() > 0
    assert not result.scores[~graph.real].any()  # nothing where there is no edge
    if metric == "kl":
        assert torch.allclose(result.clean, torch.zeros_like(result.clean), atol=1e-6)


def test_the_cap_stops_the_points_and_says_so_in_words():
    model, graph, prepared, result = scored("decoder", "eap-ig", target=1e-9, max_points=9)
    assert result.points == 9 and result.reached is False
    assert "do not add up to within 0%" in result.message and "9 integration points" in result.message


def test_refusals_name_what_is_wrong():
    model = tiny_model("decoder")
    task = tiny_task(model)
    graph = CircuitGraph(model.config)
    pairs = list(task.pairs)
    with pytest.raises(ValueError, match="EAP takes the gradient at the clean run"):
        edge_scores(model, graph, pairs, "eap", "kl")
    with pytest.raises(ValueError, match="method must be one of eap, eap-ig"):
        edge_scores(model, graph, pairs, "acdc")
    with pytest.raises(ValueError, match="metric must be one of"):
        edge_scores(model, graph, pairs, "eap", "accuracy")
    same = tiny_task(model, changed=2)
    flat = [p.__class__(p.clean, p.clean, p.answer, p.wrong) for p in same.pairs]
    with pytest.raises(ValueError, match="no difference to attribute"):
        edge_scores(model, graph, flat, "eap")


def test_no_parameter_gets_a_gradient():
    model, graph, prepared, result = scored("decoder", "eap-ig")
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.parametrize("case", CASES)
def test_heads_gradients_from_q_k_v_equal_those_of_per_head_copies(case, monkeypatch):
    """The heads' input gradients are read at q / k / v and turned back through rotary, the projection and the norm
    (head_grads); running the blocks on a per-head copy of the stream instead gives the same scores in every layout
    (LayerNorm, RMSNorm, partial rotary, grouped-query keys, cross-attention)."""
    from explorer.interpret.circuits import gradients

    model = tiny_model(case)
    tapped = scored(case, "eap-ig", "logprob", model=model)[3]
    assert gradients.tap_sites(model, CircuitGraph(model.config))  # the fast way is taken here
    monkeypatch.setattr(gradients, "tap_sites", lambda model, graph: {})
    copied = scored(case, "eap-ig", "logprob", model=model)[3]
    assert tapped.scores.abs().max() > 1e-3
    assert torch.allclose(tapped.scores, copied.scores, atol=1e-6 * float(copied.scores.abs().max()), rtol=0)
    assert tapped.points == copied.points

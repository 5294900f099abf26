"""The graph a circuit keeps edges of: its names, which upstream nodes reach which receivers (sequential layers,
GPT-NeoX's parallel residual, grouped-query attention, cross-attention's two streams), EAP-IG's edge count on
GPT-2-small's shape, pruning and the heads left off, the greedy order."""

import pytest
import torch

from explorer.interpret.circuits import CircuitGraph
from explorer.interpret.circuits.selection import circuit_of, edge_order, off_heads, prune
from explorer.model import TransformerConfig


def graph(**options) -> CircuitGraph:
    return CircuitGraph(TransformerConfig(**{**dict(arch="decoder", vocab_size=30, d_model=32, n_heads=4, n_layers=2,
                                                    d_ff=48, norm_first=True), **options}))


def reaches(g: CircuitGraph, upstream: str, downstream: str) -> bool:
    return bool(g.real[g.node_index[upstream], g.receiver_index[downstream]])


def test_gpt2_small_has_eap_igs_count_of_nodes_receivers_and_edges():
    g = graph(d_model=768, n_heads=12, n_layers=12, d_ff=3072, vocab_size=50257)
    assert (g.n_nodes, g.n_receivers, g.n_edges) == (157, 445, 32491)


def test_names_and_a_sequential_layer():
    g = graph()
    assert [n.name for n in g.nodes[:6]] == ["embed", "decoder.L0.H0", "decoder.L0.H1", "decoder.L0.H2",
                                             "decoder.L0.H3", "decoder.L0.mlp"]
    assert g.receivers[:3] == ("decoder.L0.H0.q", "decoder.L0.H1.q", "decoder.L0.H2.q")
    assert g.receivers[-2:] == ("decoder.L1.mlp.in", "logits")
    assert reaches(g, "decoder.L0.H1", "decoder.L0.mlp.in")  # sequential: the MLP reads its layer's heads
    assert not reaches(g, "decoder.L0.H1", "decoder.L0.H2.k")  # a head never reads its own layer
    assert reaches(g, "decoder.L0.mlp", "decoder.L1.H0.v") and reaches(g, "decoder.L1.mlp", "logits")
    assert not reaches(g, "decoder.L1.mlp", "decoder.L1.H0.q")


def test_a_parallel_residual_mlp_does_not_read_its_own_layers_heads():
    g = graph(parallel_residual=True)
    assert not reaches(g, "decoder.L1.H1", "decoder.L1.mlp.in")
    assert reaches(g, "decoder.L0.H1", "decoder.L1.mlp.in") and reaches(g, "embed", "decoder.L1.mlp.in")
    assert g.n_edges == graph().n_edges - 2 * 4
    assert g.notes == ["Parallel residual (GPT-NeoX): a layer's MLP reads the layer's input, as its attention does, "
                       "so no edge runs from a layer's heads to its own MLP."]


def test_grouped_query_attention_gives_each_query_head_its_key_and_value_receivers():
    g = graph(n_kv_heads=2)
    assert g.n_receivers == graph().n_receivers
    assert "decoder.L1.H3.k" in g.receiver_index and "decoder.L1.H3.v" in g.receiver_index
    (note,) = g.notes
    assert note.startswith("Grouped-query attention (2 key/value heads for 4 query heads): each query head has its own")
    assert graph().notes == []  # a sequential multi-head decoder: nothing to say


def test_cross_attention_keys_read_the_encoder_and_its_query_the_decoder():
    g = graph(arch="encoder-decoder")
    assert g.nodes[0].name == "encoder.embed" and "decoder.embed" in g.node_index
    assert reaches(g, "encoder.L1.mlp", "cross.L0.H2.k") and reaches(g, "encoder.embed", "cross.L1.H0.v")
    assert not reaches(g, "decoder.embed", "cross.L0.H0.k")
    assert reaches(g, "decoder.L0.H3", "cross.L0.H1.q") and not reaches(g, "encoder.embed", "cross.L0.H1.q")
    assert not reaches(g, "encoder.L1.mlp", "logits") and reaches(g, "cross.L1.H0", "logits")
    assert reaches(g, "cross.L0.H0", "decoder.L0.mlp.in")
    (note,) = g.notes
    assert note.startswith("Cross-attention: a head's query reads the decoder's stream; its keys and values read the "
                           "encoder's") and "cross.L{l}.H{h}.k / .v" in note


def test_post_norm_and_encoder_only_models_are_refused_in_words():
    with pytest.raises(ValueError, match="pre-norm"):
        graph(norm_first=False)
    with pytest.raises(ValueError, match="encoder without a decoder"):
        graph(arch="encoder", mlm_head=True)


def test_edges_by_name_and_bad_names():
    g = graph()
    assert g.mask_of([("embed", "logits", 1.0)]).sum() == 1
    with pytest.raises(ValueError, match="unknown upstream node 'decoder.L9.H0'"):
        g.edge("decoder.L9.H0", "logits")
    with pytest.raises(ValueError, match="does not reach"):
        g.edge("decoder.L1.H0", "decoder.L0.mlp.in")


def test_greedy_grows_from_the_logits_and_prune_drops_what_cannot_matter():
    g = graph()
    scores = torch.zeros(g.n_nodes, g.n_receivers, dtype=torch.float64)
    scores[g.edge("decoder.L0.H1", "decoder.L1.H2.k")] = 5.0  # strongest, but not reached from the logits yet
    scores[g.edge("decoder.L1.H2", "logits")] = 1.0
    scores[g.edge("embed", "decoder.L0.H1.v")] = 0.5
    top = edge_order(g, scores, "top")
    greedy = edge_order(g, scores, "greedy")
    name = lambda i: (g.nodes[int(i) // g.n_receivers].name, g.receivers[int(i) % g.n_receivers])  # noqa: E731
    assert name(top[0]) == ("decoder.L0.H1", "decoder.L1.H2.k")
    assert [name(i) for i in greedy[:3]] == [("decoder.L1.H2", "logits"), ("decoder.L0.H1", "decoder.L1.H2.k"),
                                             ("embed", "decoder.L0.H1.v")]
    assert sorted(greedy.tolist()) == sorted(top.tolist())  # every edge, once
    circuit, nodes = prune(g, circuit_of(g, top, 1))  # the strongest edge alone reaches no logit: nothing left
    assert circuit.sum() == 0
    circuit, nodes = prune(g, circuit_of(g, greedy, 3))
    assert circuit.sum() == 3
    off = off_heads(g, nodes)["decoder"]
    assert off.sum() == 8 - 2 and not off[0, 1] and not off[1, 2]

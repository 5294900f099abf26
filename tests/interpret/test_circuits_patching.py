"""Runs with edges patched from the corrupted run, on tiny models built here (from-scratch decoder, GPT-NeoX-like
parallel residual, grouped-query attention, encoder-decoder): a circuit of every edge is the clean model and a
circuit of no edge the corrupted one (logits within 1e-5), for every metric; patching every edge out of one head is
activation patching of that head (its z from the corrupted run, through the model's own head_hook); patching the
edges into one receiver changes that receiver's input only."""

import pytest
import torch

from tests.interpret.circuit_cases import CASES, tiny_model, tiny_task
from explorer.interpret.circuits import CircuitGraph, circuit_faithfulness
from explorer.interpret.circuits.batches import make_inputs
from explorer.interpret.circuits.metrics import METRICS
from explorer.interpret.circuits.edge_patching import patched_logits
from explorer.interpret.circuits.runner import plain_run, run_logits


def setup(case):
    model = tiny_model(case)
    task = tiny_task(model)
    graph = CircuitGraph(model.config)
    inputs = make_inputs(model, list(task.pairs))
    return model, task, graph, inputs, plain_run(model, inputs, False), plain_run(model, inputs, True)


@pytest.mark.parametrize("case", CASES)
def test_every_edge_is_the_clean_model_and_none_the_corrupted_one(case):
    model, task, graph, inputs, clean, corrupted = setup(case)
    assert not torch.allclose(clean.logits, corrupted.logits, atol=1e-3)  # the pairs differ
    keep_all, keep_none = torch.zeros_like(graph.real), graph.real.clone()  # what is patched
    out = patched_logits(model, graph, inputs, torch.stack([keep_all, keep_none]), corrupted)
    assert torch.allclose(out[0], clean.logits, atol=1e-5, rtol=0)
    assert torch.allclose(out[1], corrupted.logits, atol=1e-5, rtol=0)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("case", ["decoder", "encoder-decoder"])
def test_faithfulness_of_every_edge_is_1_and_of_none_0_for_every_metric(case, metric):
    model = tiny_model(case)
    task = tiny_task(model)
    graph = CircuitGraph(model.config)
    every = [(graph.nodes[u].name, graph.receivers[r]) for u, r in torch.nonzero(graph.real).tolist()]
    whole = circuit_faithfulness(model, task, every, metric=metric)
    assert torch.allclose(whole.circuit, whole.clean, atol=1e-5, rtol=0) and whole.edges == graph.n_edges
    assert abs(whole.value - 1) < 1e-3
    none = circuit_faithfulness(model, task, [], metric=metric)
    assert torch.allclose(none.circuit, none.corrupted, atol=1e-5, rtol=0) and abs(none.value) < 1e-3
    if metric == "kl":
        assert torch.allclose(whole.clean, torch.zeros_like(whole.clean), atol=1e-6) and (none.corrupted > 0).all()


@pytest.mark.parametrize("case", CASES)
def test_patching_every_edge_out_of_a_head_is_patching_that_heads_output(case):
    model, task, graph, inputs, clean, corrupted = setup(case)
    kind = "cross" if case == "encoder-decoder" else "decoder"
    head = graph.node_index[f"{kind}.L0.H2"]
    patched = torch.zeros_like(graph.real)
    patched[head] = graph.real[head]  # every reader of L0 H2 reads its corrupted output
    out = patched_logits(model, graph, inputs, patched[None], corrupted)[0]
    z = corrupted.tensors[f"{kind}.0.z"]  # (P, H, T, Dh) the corrupted run's head outputs

    def hook(k, layer, heads):
        if (k, layer) != (kind, 0):
            return heads
        heads = heads.clone()
        heads[:, 2] = z[:, 2]
        return heads

    with torch.no_grad():
        want = _with_head_hook(model, inputs, hook)
    assert torch.allclose(out, want, atol=1e-5, rtol=0)
    assert not torch.allclose(out, clean.logits, atol=1e-4)


def _with_head_hook(model, inputs, hook):
    if model.config.arch == "encoder-decoder":
        enc = model.encode(inputs.src_clean, key_mask=inputs.src_mask, need_weights=False, head_hook=hook)
        out = model.decode(inputs.clean, enc.memory, inputs.src_mask, key_mask=inputs.mask, need_weights=False,
                           head_hook=hook).output
    else:
        out = model.decode(inputs.clean, key_mask=inputs.mask, need_weights=False, head_hook=hook).output
    return model.generator.logits(out[torch.arange(out.shape[0]), inputs.read])


def test_patching_every_edge_into_one_receiver_gives_it_the_corrupted_runs_stream():
    model, task, graph, inputs, clean, corrupted = setup("decoder")
    r = graph.receiver_index["decoder.L1.H3.k"]
    patched = torch.zeros_like(graph.real)
    patched[:, r] = graph.real[:, r]
    out = patched_logits(model, graph, inputs, patched[None], corrupted)[0]
    with torch.no_grad():
        stream = model.decode(inputs.corrupted, key_mask=inputs.mask, need_weights=False).hidden_states[1]

        def receivers(site, x):  # head 3's keys alone read layer 1's input of the corrupted run
            if site != "decoder.1.k":
                return x
            x = x.unsqueeze(2).repeat(1, 1, 4, 1)
            x[:, :, 3] = stream
            return x

        want = run_logits(model, inputs, False, receivers=receivers)
    assert torch.allclose(out, want, atol=1e-5, rtol=0)
    assert not torch.allclose(out, clean.logits, atol=1e-5)


@pytest.mark.parametrize("case", CASES)
def test_both_ways_of_rebuilding_a_receiver_agree(case, monkeypatch):
    """A receiver block is rebuilt from the patched edges' differences, or from every difference minus the kept
    edges' (whichever reads fewer nodes), or for a small model every variant in one product: forced one way, then the
    others, circuits of 10% and 60% of the edges give the
    same logits, alone or batched with the clean model."""
    from explorer.interpret.circuits import edge_patching

    model, task, graph, inputs, clean, corrupted = setup(case)
    g = torch.Generator().manual_seed(3)
    circuits = [graph.real & (torch.rand(graph.real.shape, generator=g) < share) for share in (0.1, 0.6)]
    patched = torch.stack([torch.zeros_like(graph.real)] + [graph.real & ~c for c in circuits])
    got = {}
    monkeypatch.setattr(edge_patching, "SMALL", 0)  # variant by variant, as a large model's run goes
    for way in (True, False):
        monkeypatch.setattr(edge_patching, "from_total", lambda patched, kept, way=way: way)
        got[way] = patched_logits(model, graph, inputs, patched, corrupted)
    assert torch.allclose(got[True], got[False], atol=1e-5, rtol=0)
    monkeypatch.undo()
    together = patched_logits(model, graph, inputs, patched, corrupted)  # a small model's: every variant at once
    assert torch.allclose(together, got[True], atol=1e-5, rtol=0)
    alone = patched_logits(model, graph, inputs, patched[1:2], corrupted)[0]
    assert torch.allclose(alone, got[True][1], atol=1e-5, rtol=0)
    assert torch.allclose(got[True][0], clean.logits, atol=1e-5, rtol=0)
    for out in got[True][1:]:
        assert not torch.allclose(out, clean.logits, atol=1e-4) and not torch.allclose(out, corrupted.logits, atol=1e-4)


@pytest.mark.parametrize("with_clean", [False, True])
def test_circuit_metrics_runs_each_distinct_circuit_once(with_clean, monkeypatch):
    """The curve's shortcuts change no number: circuits repeated, of no edge (the corrupted run's metric) and of every
    edge (the clean run's, when the batch has it) give what patching each circuit alone gives, within 1e-5, and
    only the distinct circuits that need it are patched."""
    from explorer.interpret.circuits import faithfulness
    from explorer.interpret.circuits.metrics import metric_values
    from explorer.interpret.circuits.scores import prepare

    model, task, graph, inputs, clean, corrupted = setup("decoder")
    (batch,) = prepare(model, graph, list(task.pairs), "logit_diff")
    if with_clean:
        batch.clean = plain_run(model, batch.inputs, False)
    g = torch.Generator().manual_seed(5)
    some = [graph.real & (torch.rand(graph.real.shape, generator=g) < share) for share in (0.1, 0.6)]
    none, every = torch.zeros_like(graph.real), graph.real.clone()
    circuits = torch.stack([some[0], none, some[1], some[0], every, none])
    runs = []
    real_patched = faithfulness.patched_logits
    monkeypatch.setattr(faithfulness, "patched_logits", lambda m, gr, i, p, *a: runs.append(len(p)) or
                        real_patched(m, gr, i, p, *a))
    got = faithfulness.circuit_metrics(model, graph, [batch], circuits, "logit_diff")
    assert sum(runs) == (2 if with_clean else 3)
    b = batch.inputs
    alone = torch.stack([metric_values("logit_diff", real_patched(model, graph, b, (graph.real & ~c)[None],
                                                                  batch.corrupted)[0], b.answers, b.wrongs)
                         for c in circuits]).double()[:, torch.argsort(b.index)]
    assert torch.allclose(got, alone, atol=1e-5, rtol=0)
    assert torch.equal(got[1], got[5]) and torch.equal(got[0], got[3])
    corrupted_metric = metric_values("logit_diff", batch.corrupted.logits, b.answers, b.wrongs).double()
    assert torch.equal(got[1][b.index], corrupted_metric)

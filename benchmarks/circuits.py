"""Circuits benchmark (issue 41): EAP-IG over a task, and the faithfulness curve, on a GPT-2-small-shaped model
(12 layers x 12 heads, d_model 768, random weights, loaded with `explorer.load` from the Hugging Face layout as hub_lm
writes it: 157 nodes, 32,491 edges), beside one forward and one forward + backward on the same pairs in the same run.

The task: 32 pairs of 32 random tokens, the corrupted prompt with two tokens changed (positions 5 and 20), random
answer and wrong tokens; the metric the logit difference. Measured, side by side (each after a warm-up, the reference
passes timed before and after the circuit's parts and their median taken, so load on the machine hits both):

- one forward: `model(ids, need_weights=False)` in inference mode, every position's logits;
- one forward + backward: `model.decode(ids, token_embeds=...)`, every position's logits, the pairs' logit differences
  at the last position, and their gradient with respect to the token embeddings (torch.autograd.grad, as EAP-IG
  differentiates: no parameter gradient);
- EAP-IG: `edge_scores(method="eap-ig")` with the points chosen per request (target 2%), its corrupted run included
  (`prepare`): target <= 12 forward + backward;
- the curve: 20 circuit sizes from 1 edge to every edge (top edges by |score|, pruned; every edge needs no run: it is
  the clean model; a size pruned to no edge is the corrupted run and one equal to a smaller size's is run once), every
  pair, batched (`circuit_metrics`): target <= 20 forwards.

- the shipped models' whole computation: `find_circuit` with its defaults (EAP-IG, greedy circuit at 0.9, the curve
  at 20 sizes, the 32 strongest edges patched exactly) on induction-gpt and date-translator, 64 generated pairs found
  and 64 held out (as tests/interpret/test_circuits_shipped.py);
- the shipped models' Circuit tab with its defaults (16 generated pairs, 4 of them held out, EAP-IG, the greedy
  circuit, the curve at 20 sizes, 8 edges patched exactly): target <= 3 s each.

Each time is given as wall time and as CPU time of the process (all its threads): on a shared machine the wall time
grows with the others' load, the CPU time much less.

A circuit's runs read the LM head at the answer position only (the metric reads nothing else), which a forward over
every position does not; GPT-2's 50,257-token head is about a third of its forward. The load average is recorded:
other processes on the same cores change every number.

Run alone: python -m benchmarks.circuits [--quick] [--pairs 32] [--tokens 32]; in the report: python -m benchmarks
--only circuits
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from benchmarks.hub_lm import GPT2_SMALL, TINY, write_folder


def timed(fn) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def cpu_timed(fn) -> tuple[float, float, Any]:
    """(wall s, CPU s of the process, result)."""
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, out


def patched_runs(graph, circuits: torch.Tensor) -> int:
    """How many of the curve's circuits need a patched run: the distinct ones with an edge kept and one left out (no
    edge is the corrupted run, every edge the clean one: circuit_metrics reads those off the plain runs)."""
    distinct = torch.unique((circuits & graph.real).flatten(1), dim=0)
    return int((distinct.any(1) & (distinct != graph.real.flatten()).any(1)).sum())


def run(pairs: int = 32, tokens: int = 32, shape: dict[str, int] | None = None, repeats: int = 3) -> dict[str, Any]:
    import explorer
    from explorer.interpret.circuits import CircuitGraph, make_task
    from explorer.interpret.circuits.faithfulness import circuit_metrics, curve_sizes, faithfulness_of
    from explorer.interpret.circuits.scores import edge_scores, prepare
    from explorer.interpret.circuits.selection import circuit_of, edge_order, prune

    shape = shape or GPT2_SMALL
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        model = explorer.load(write_folder(Path(tmp) / "gpt2", shape), "cpu").model.eval()
    g = torch.Generator().manual_seed(0)
    vocab = shape["vocab_size"]
    clean = torch.randint(0, vocab, (pairs, tokens), generator=g)
    corrupted = clean.clone()
    for position in (5, 20):
        corrupted[:, position % tokens] = torch.randint(0, vocab, (pairs,), generator=g)
    answers, wrongs = torch.randint(0, vocab, (2, pairs), generator=g)
    task = make_task(clean, corrupted, answers, wrongs)
    graph = CircuitGraph(model.config)
    rows = torch.arange(pairs)

    def forward():
        with torch.inference_mode():
            return model(clean, need_weights=False).logits

    def forward_backward():
        with torch.inference_mode(False), torch.enable_grad():
            embeds = model.tgt_embed.token(clean).detach().requires_grad_()
            logits = model.generator.logits(model.decode(clean, need_weights=False, token_embeds=embeds).output)
            metric = (logits[rows, -1, answers] - logits[rows, -1, wrongs]).sum()
            return torch.autograd.grad(metric, embeds)

    reference: dict[str, list[float]] = {"forward": [], "forward_backward": [], "forward_cpu": [],
                                         "forward_backward_cpu": []}

    def measure_reference() -> None:
        for _ in range(repeats):
            for name, fn in (("forward", forward), ("forward_backward", forward_backward)):
                wall, cpu, _ = cpu_timed(fn)
                reference[name].append(wall)
                reference[f"{name}_cpu"].append(cpu)

    forward(), forward_backward()  # warm-up
    measure_reference()
    prepare_s, prepare_cpu, prepared = cpu_timed(lambda: prepare(model, graph, list(task.pairs), "logit_diff"))
    scores_s, scores_cpu, scored = cpu_timed(lambda: edge_scores(model, graph, list(task.pairs), "eap-ig",
                                                                 "logit_diff", prepared=prepared))
    order = edge_order(graph, scored.scores, "top")
    sizes = [n for n in curve_sizes(graph.n_edges, 20) if n < graph.n_edges]
    circuits = torch.stack([prune(graph, circuit_of(graph, order, n))[0] for n in sizes])
    curve_s, curve_cpu, metrics = cpu_timed(lambda: circuit_metrics(model, graph, prepared, circuits, "logit_diff"))
    measure_reference()
    fwd = statistics.median(reference["forward"])
    fwd_bwd = statistics.median(reference["forward_backward"])
    fwd_cpu = statistics.median(reference["forward_cpu"])
    fwd_bwd_cpu = statistics.median(reference["forward_backward_cpu"])
    eap_ig_s, eap_ig_cpu = prepare_s + scores_s, prepare_cpu + scores_cpu
    return {
        "model": "GPT-2 small shape (12 x 12, d768), random weights" if shape is GPT2_SMALL else
        f"a tiny GPT-2 ({shape['n_layer']} x {shape['n_head']}, d{shape['n_embd']}), random weights",
        "gpt2_small": shape is GPT2_SMALL, "pairs": pairs, "tokens": tokens, "nodes": graph.n_nodes,
        "edges": graph.n_edges, "threads": torch.get_num_threads(), "repeats": repeats,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "forward_ms": round(fwd * 1e3, 1), "forward_backward_ms": round(fwd_bwd * 1e3, 1),
        "forward_ms_all": [round(x * 1e3, 1) for x in reference["forward"]],
        "forward_backward_ms_all": [round(x * 1e3, 1) for x in reference["forward_backward"]],
        "eap_ig_ms": round(eap_ig_s * 1e3, 1), "eap_ig_corrupted_run_ms": round(prepare_s * 1e3, 1),
        "eap_ig_points": scored.points, "eap_ig_gap": round(scored.gap, 5),
        "eap_ig_over_forward_backward": round(eap_ig_s / fwd_bwd, 2),
        "curve_points": len(sizes) + 1, "curve_runs": len(sizes), "curve_patched": patched_runs(graph, circuits),
        "curve_ms": round(curve_s * 1e3, 1),
        "curve_over_forward": round(curve_s / fwd, 2),
        "forward_cpu_s": round(fwd_cpu, 3), "forward_backward_cpu_s": round(fwd_bwd_cpu, 3),
        "eap_ig_cpu_s": round(eap_ig_cpu, 3), "curve_cpu_s": round(curve_cpu, 3),
        "eap_ig_over_forward_backward_cpu": round(eap_ig_cpu / fwd_bwd_cpu, 2),
        "curve_over_forward_cpu": round(curve_cpu / fwd_cpu, 2),
        "curve": [[int(n), round(faithfulness_of(m, scored.clean, scored.corrupted, 0).value, 4)]
                  for n, m in zip(sizes, metrics)],
    }


def shipped(pairs: int = 64, repeats: int = 3) -> list[dict[str, Any]]:
    """find_circuit with its defaults on the shipped induction-gpt and date-translator: `pairs` generated pairs
    found and as many held out, the best of `repeats` runs (after a warm-up on 4 pairs)."""
    import explorer
    from explorer.interpret import find_circuit
    from explorer.interpret.circuits import generated_task

    rows = []
    for name in ("induction-gpt", "date-translator"):
        loaded = explorer.load(name, "cpu")
        found, held = generated_task(loaded, pairs, seed=0), generated_task(loaded, pairs, seed=1)
        find_circuit(loaded.model, generated_task(loaded, 4, seed=2), edges=8, exact_top=2, curve_points=3)
        runs = [cpu_timed(lambda: find_circuit(loaded.model, found, held_out=held)) for _ in range(repeats)]
        wall, cpu, c = min(runs, key=lambda r: r[0])
        rows.append({"model": name, "pairs": pairs, "held_out": pairs, "s": round(wall, 3), "cpu_s": round(cpu, 3),
                     "s_all": [round(r[0], 3) for r in runs], "points": c.scores.points,
                     "gap": round(c.scores.gap, 4), "edges": len(c.edges), "of_edges": c.n_edges,
                     "faithfulness": round(c.faithfulness, 3), "held_out_faithfulness": round(c.held_out.value, 3),
                     "spearman_top_32": round(c.exact.spearman, 3)})
    return rows


def tab(repeats: int = 3, quick: bool = False) -> list[dict[str, Any]]:
    """The Circuit tab's computation with its defaults (explorer.app.tabs.circuit: the generated task, 16 pairs of
    which 4 held out, EAP-IG, the greedy circuit keeping 0.9, the curve at 20 sizes, 8 edges patched exactly) on the
    shipped induction-gpt and date-translator: the best of `repeats` runs after a warm-up (target <= 3 s). `quick`:
    induction-gpt alone, 8 pairs (2 held out), no warm-up."""
    import explorer
    from explorer.app.tabs.circuit.computation import circuit
    from explorer.app.tabs.circuit.forms import CircuitForm

    rows = []
    for name in ("induction-gpt",) if quick else ("induction-gpt", "date-translator"):
        loaded = explorer.load(name, "cpu")
        small = CircuitForm(None, generated=8, held_out=2).request()
        request = small if quick else CircuitForm(None).request()
        if not quick:
            circuit(loaded, small, 0)  # warm-up (scipy's import too)
        runs = [cpu_timed(lambda: circuit(loaded, request, 0)) for _ in range(repeats)]
        wall, cpu, r = min(runs, key=lambda x: x[0])
        rows.append({"model": name, "pairs": request.generated, "held_out": request.held_out, "s": round(wall, 3),
                     "cpu_s": round(cpu, 3), "s_all": [round(x[0], 3) for x in runs],
                     "cpu_s_all": [round(x[1], 3) for x in runs], "points": r.points, "edges": len(r.edges),
                     "of_edges": r.n_edges, "faithfulness": round(r.faithfulness, 3)})
    return rows


def run_section(pairs: int = 32, tokens: int = 32, repeats: int = 3, quick: bool = False) -> dict[str, Any]:
    """`python -m benchmarks --only circuits`: the GPT-2-small shape (a tiny GPT-2 with --quick) and the shipped
    models (8 pairs and one run with --quick)."""
    out = run(pairs, tokens, TINY if quick else None, repeats)
    out["shipped"] = shipped(8 if quick else 64, 1 if quick else repeats)
    out["tab"] = tab(1 if quick else repeats, quick)
    out["quick"] = quick
    out["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a tiny GPT-2, 8 pairs of 16 tokens, one repeat")
    args = parser.parse_args(argv)
    if args.quick:
        print(json.dumps(run_section(8, 16, 1, quick=True), indent=2))
    else:
        print(json.dumps(run_section(args.pairs, args.tokens, args.repeats), indent=2))


if __name__ == "__main__":
    main()

"""Runs with edges patched from the corrupted run, several variants (circuits, single edges) batched in one forward.

An edge (u -> r) patched means: receiver r reads u's output from the corrupted run instead of u's output in this
run; every other reader of u keeps this run's value. So each receiver's input is rebuilt as

    input_r = (this run's stream at r) + sum over patched edges (u -> r) of (a_u(corrupted) - a_u(this run))

exactly as hannamw/EAP-IG's evaluate_graph does. "This run's" value of u is what u computes from its own (possibly
patched) inputs: with nothing patched it is the clean run (a circuit of every edge is the clean model, to float
precision), with every edge patched every receiver reads the corrupted run's stream (a circuit of no edge is the
corrupted run). A receiver whose edges are all kept reads the stream itself; a site (an attention block's q, k or v,
an MLP, the logits) with nothing patched in any variant is not split at all.

    patched_logits(model, graph, inputs, patched (V, U, R) bool, corrupted Snapshot) -> (V, P, vocab)

The variants' difference buffer (V, U_s, P, T, D) per stream is filled node group by node group as the run
produces them (from its Record); each site's corrections are one batched product (V, R_s, U) @ (V, U, P T D).

Shapes: V variants, P pairs, rows V P (variant-major), T length, D width, U nodes (U_s of a stream), R receivers.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ...model import Record, Transformer
from .graph import CircuitGraph
from .batches import Inputs
from .runner import RECORDED, Snapshot, group_outputs, run_logits


@torch.no_grad()
def patched_logits(model: Transformer, graph: CircuitGraph, inputs: Inputs, patched: Tensor,
                   corrupted: Snapshot) -> Tensor:
    """(V, P, vocab) logits at the answer positions, variant v with the edges patched[v] patched."""
    V, P = patched.shape[0], inputs.size
    if tuple(patched.shape[1:]) != (graph.n_nodes, graph.n_receivers):
        raise ValueError(f"patched must be (variants, {graph.n_nodes}, {graph.n_receivers}), got "
                         f"{tuple(patched.shape)}")
    device = inputs.clean.device
    patched = patched.to(device) & graph.real.to(device)
    record = Record(only=RECORDED)
    corr = {s: corrupted.outputs(model, graph, s).transpose(0, 1) for s in graph.streams}  # (U_s, P, T, D)
    diffs: dict[str, Tensor] = {}  # stream -> (V, U_s, P, T, D): corrupted - this run, filled group by group
    filled = {s: 0 for s in graph.streams}  # groups of each stream filled so far
    groups = {s: [g for g in graph.groups if g.stream == s] for s in graph.streams}
    final: dict[str, Tensor] = {}

    def fill(stream: str, upto: int) -> Tensor:
        """The difference buffer of `stream` with its first `upto` nodes written."""
        buffer = diffs.get(stream)
        if buffer is None:
            U_s, _, T, D = corr[stream].shape
            buffer = diffs[stream] = corr[stream].new_empty(V, U_s, P, T, D)
        todo = groups[stream]
        while filled[stream] < len(todo) and todo[filled[stream]].start < upto:
            g = todo[filled[stream]]
            now = group_outputs(model, graph, record, g)  # (V P, size, T, D) in this run
            now = now.reshape(V, P, *now.shape[1:]).transpose(1, 2)  # (V, size, P, T, D)
            torch.sub(corr[stream][None, g.start:g.start + g.size], now, out=buffer[:, g.start:g.start + g.size])
            filled[stream] += 1
        return buffer

    def receivers(site: str, x: Tensor) -> Tensor:
        if site == "encoder.final":
            final["encoder"] = x
            return x
        s = graph.site_of[site]
        first = graph.offsets[s.stream]
        mask = patched[:, first:first + s.prefix, s.start:s.start + s.size]  # (V, prefix, R_s)
        if not mask.any():
            return x
        buffer = fill(s.stream, s.prefix)[:, :s.prefix]  # (V, prefix, P, T, D)
        T, D = buffer.shape[3], buffer.shape[4]
        fix = torch.bmm(mask.transpose(1, 2).to(buffer.dtype), buffer.reshape(V, s.prefix, -1))  # (V, R_s, P T D)
        fix = fix.view(V, s.size, P, T, D).permute(0, 2, 3, 1, 4).reshape(V * P, T, s.size, D)  # (V P, T, R_s, D)
        if s.norm == "encoder_final":  # cross k / v: the encoder's last stream, corrected per head, then its norm
            own = final["encoder"].unsqueeze(2) + fix
            return own if model.encoder.norm is None else model.encoder.norm(own)
        if s.role in ("q", "k", "v"):
            return x.unsqueeze(2) + fix  # (V P, T, H, D): each head its own input
        return x + fix[:, :, 0]

    logits = run_logits(model, inputs, False, V, receivers=receivers, record=record)
    return logits.float().view(V, P, -1)

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
produces them (from its Record). A site's corrections are, for each variant, one product over the nodes that have a
patched edge into it, or (when fewer nodes have a kept edge) the sum of every difference minus that product over the
kept edges: a small circuit's receivers mostly read the corrupted stream whole, a large one's mostly their own. On a
small model (under SMALL values of one variant's differences) every variant's corrections are one batched product
over the whole prefix instead: there the loop over variants, not the arithmetic, is what costs. Receivers
of a site patched alike (e.g. every edge into every head) read one input and the block is not split.

Shapes: V variants, P pairs, rows V P (variant-major), T length, D width, U nodes (U_s of a stream), R receivers.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ...model import Record, Transformer
from .graph import CircuitGraph
from .batches import Inputs
from .runner import RECORDED, Snapshot, group_outputs, run_logits


SMALL = 2**20  # values (nodes x P T D) of one variant's differences under which the variants share one product


def from_total(patched: int, kept: int) -> bool:
    """Rebuild a receiver block from every difference minus the kept edges' when fewer nodes have a kept edge."""
    return patched > kept


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

    sums: dict[str, tuple[int, Tensor]] = {}  # stream -> (prefix, sum of its first `prefix` differences)

    def total(stream: str, prefix: int) -> Tensor:
        """(V, P T D) the sum of the differences of a stream's first `prefix` nodes (prefixes come in order)."""
        upto, value = sums.get(stream, (0, None))
        buffer = fill(stream, prefix)
        if value is None or prefix < upto:  # the first call, or (never in forward order) a shorter prefix
            upto, value = 0, buffer[:, :0].sum(1).flatten(1)
        if prefix > upto:
            value = value + buffer[:, upto:prefix].sum(1).flatten(1)
        sums[stream] = (prefix, value)
        return value

    def corrections(stream: str, prefix: int, mask: Tensor, kept: Tensor) -> Tensor:
        """(V, R_s, P T D) what each receiver adds to the stream, variant by variant: the patched edges' differences,
        or (fewer nodes to read) every difference minus the kept edges'. Only the nodes with such an edge are read."""
        buffer = fill(stream, prefix).flatten(2)  # (V, U_s, P T D)
        R = mask.shape[2]
        if prefix * buffer.shape[2] <= SMALL:  # a small model: one product for every variant, no loop over them
            return torch.bmm(mask.transpose(1, 2).to(buffer.dtype), buffer[:, :prefix])  # (V, R_s, P T D)
        out = buffer.new_empty(V, R, buffer.shape[2])
        patched_nodes, kept_nodes = mask.any(2), kept.any(2)  # (V, prefix)
        for v in range(V):
            complement = from_total(int(patched_nodes[v].sum()), int(kept_nodes[v].sum()))
            use, nodes = (kept[v], kept_nodes[v]) if complement else (mask[v], patched_nodes[v])
            start = total(stream, prefix)[v].expand(R, -1) if complement else None  # (R_s, P T D), not copied
            if 2 * int(nodes.sum()) > prefix:  # most of the prefix: a view of it reads less than a gather copies
                weights, values = use.T.to(buffer.dtype), buffer[v, :prefix]
            elif nodes.any():
                index = nodes.nonzero().flatten()
                weights, values = use[index].T.to(buffer.dtype), buffer[v, index]
            else:
                out[v] = 0.0 if start is None else start
                continue
            if start is None:  # (R_s, nodes) @ (nodes, P T D)
                torch.mm(weights, values, out=out[v])
            else:
                torch.addmm(start, weights, values, alpha=-1.0, out=out[v])
        return out

    def receivers(site: str, x: Tensor) -> Tensor:
        if site == "encoder.final":
            final["encoder"] = x
            return x
        s = graph.site_of[site]
        first = graph.offsets[s.stream]
        mask = patched[:, first:first + s.prefix, s.start:s.start + s.size]  # (V, prefix, R_s)
        if not mask.any():
            return x
        # receivers whose edges are patched alike read one input: the block is not split per head
        shared = bool((mask == mask[:, :, :1]).all())
        if shared:
            mask = mask[:, :, :1]
        kept = ~mask  # every edge of the prefix is real
        R = mask.shape[2]
        T, D = corr[s.stream].shape[2:]
        fix = corrections(s.stream, s.prefix, mask, kept)
        fix = fix.view(V, R, P, T, D).permute(0, 2, 3, 1, 4).reshape(V * P, T, R, D)  # (V P, T, R, D)
        if shared:
            fix = fix[:, :, 0]
        if s.norm == "encoder_final":  # cross k / v: the encoder's last stream, corrected per head, then its norm
            own = (final["encoder"] if shared else final["encoder"].unsqueeze(2)) + fix
            return own if model.encoder.norm is None else model.encoder.norm(own)
        if s.role in ("q", "k", "v") and not shared:
            return x.unsqueeze(2) + fix  # (V P, T, H, D): each head its own input
        return x + fix if shared else x + fix[:, :, 0]

    logits = run_logits(model, inputs, False, V, receivers=receivers, record=record)
    return logits.float().view(V, P, -1)

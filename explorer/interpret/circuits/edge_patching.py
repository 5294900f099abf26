"""Runs with edges patched from the corrupted run, several variants (circuits, single edges) batched in one forward.

An edge (u -> r) patched means: receiver r reads u's output from the corrupted run instead of u's output in this
run; every other reader of u keeps this run's value. So each receiver's input is rebuilt as

    input_r = (this run's stream at r) + sum over patched edges (u -> r) of (a_u(corrupted) - a_u(this run))

exactly as hannamw/EAP-IG's evaluate_graph does. "This run's" value of u is what u computes from its own (possibly
patched) inputs: with nothing patched it is the clean run (a circuit of every edge is the clean model, to float
precision), with every edge patched every receiver reads the corrupted run's stream (a circuit of no edge is the
corrupted run). A receiver whose edges are all kept reads the stream itself; a site (an attention block's q, k or v,
an MLP, the logits) with nothing patched in any variant is not split at all.

    patched_logits(model, graph, inputs, patched (V, U, R) bool, corrupted Snapshot, corr=None) -> (V, P, vocab)
    corrupted_outputs(model, graph, corrupted Snapshot) -> {stream: (U_s, 1, P T D)} the corrupted run's node outputs,
        node-major: what every patched run of a batch reads (made once per batch, passed as `corr`)

The run's node differences sit in one buffer per stream, (1 + U_s, V, P T D), filled node group by node group as
the run produces them (from its Record). A site's inputs are, for each variant, one product over the nodes that have a
patched edge into it, or (when fewer nodes have a kept edge) the sum of every difference minus that product over the
kept edges; the buffer's row 0 holds that base (the stream, or the stream plus every difference), so the product
gives each receiver's whole input, written straight in the (rows, T, heads, D) layout the block reads. On a
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
from .runner import RECORDED, Snapshot, attention_module, run_logits


GATHER = 4  # nodes read by gathering their rows when fewer than 1 / GATHER of the prefix (else a view of it all)
SMALL = 2**20  # values (nodes x P T D) of one variant's differences under which the variants share one product


def from_total(patched: int, kept: int) -> bool:
    """Rebuild a receiver block from every difference minus the kept edges' when fewer nodes have a kept edge."""
    return patched > kept


def node_outputs(model: Transformer, tensors, group, V: int, out: Tensor) -> Tensor:
    """(size, V, P T D) a group's outputs in this run, node-major: a head's written into `out` straight from the
    product z_h W_O^h (no transposed copy), the embeddings' or an MLP's a view of the Record's."""
    value = tensors[group.site]  # a Record's tensors, or a Snapshot's
    if group.kind != "heads":
        return value.reshape(1, V, -1)  # (V P, T, D) -> (1, V, P T D)
    H, Dh = value.shape[1], value.shape[3]
    weight = attention_module(model, group.attention, group.layer).out_proj.weight.view(-1, H, Dh)  # (D, H, Dh)
    z = value.transpose(0, 1).reshape(H, -1, Dh)  # (V P, H, T, Dh) -> (H, V P T, Dh)
    torch.bmm(z, weight.permute(1, 2, 0).to(z.dtype), out=out.view(H, z.shape[1], -1))
    return out


@torch.no_grad()
def corrupted_outputs(model: Transformer, graph: CircuitGraph, corrupted: Snapshot) -> dict[str, Tensor]:
    """{stream: (U_s, 1, P T D)} the corrupted run's node outputs, each group written in place by node_outputs (no
    concatenated, transposed copy)."""
    out = {}
    for s in graph.streams:
        embed = corrupted.embed(s)  # (P, T, D)
        buffer = embed.new_empty(graph.stream_sizes[s], 1, embed.numel())
        for g in graph.groups:
            if g.stream == s:
                rows = buffer[g.start:g.start + g.size]
                value = node_outputs(model, corrupted.tensors, g, 1, rows)
                if value is not rows:
                    rows.copy_(value)
        out[s] = buffer
    return out


@torch.no_grad()
def patched_logits(model: Transformer, graph: CircuitGraph, inputs: Inputs, patched: Tensor,
                   corrupted: Snapshot, corr: dict[str, Tensor] | None = None) -> Tensor:
    """(V, P, vocab) logits at the answer positions, variant v with the edges patched[v] patched; `corr`: the
    batch's corrupted_outputs, when the caller made them already."""
    V, P = patched.shape[0], inputs.size
    if tuple(patched.shape[1:]) != (graph.n_nodes, graph.n_receivers):
        raise ValueError(f"patched must be (variants, {graph.n_nodes}, {graph.n_receivers}), got "
                         f"{tuple(patched.shape)}")
    device = inputs.clean.device
    patched = patched.to(device) & graph.real.to(device)
    record = Record(only=RECORDED)
    shapes = {s: corrupted.embed(s).shape[1:] for s in graph.streams}  # (T, D)
    corr = corrupted_outputs(model, graph, corrupted) if corr is None else corr  # {stream: (U_s, 1, P T D)}
    # stream -> (1 + U_s, V, P T D): row 1 + u node u's corrupted - this run's output, filled group by group as the
    # run writes them; row 0 the base a receiver adds the differences to (so one product gives its whole input)
    diffs: dict[str, Tensor] = {}
    filled = {s: 0 for s in graph.streams}  # groups of each stream filled so far
    groups = {s: [g for g in graph.groups if g.stream == s] for s in graph.streams}
    final: dict[str, Tensor] = {}

    def fill(stream: str, upto: int) -> Tensor:
        """The difference buffer of `stream` with its first `upto` nodes written."""
        buffer = diffs.get(stream)
        if buffer is None:
            U_s, _, PTD = corr[stream].shape
            buffer = diffs[stream] = corr[stream].new_empty(1 + U_s, V, PTD)
        todo = groups[stream]
        while filled[stream] < len(todo) and todo[filled[stream]].start < upto:
            g = todo[filled[stream]]
            rows = buffer[1 + g.start:1 + g.start + g.size]
            torch.sub(corr[stream][g.start:g.start + g.size], node_outputs(model, record.tensors, g, V, rows), out=rows)
            filled[stream] += 1
        return buffer

    sums: dict[str, tuple[int, Tensor]] = {}  # stream -> (prefix, sum of its first `prefix` differences)

    def total(stream: str, prefix: int) -> Tensor:
        """(V, P T D) the sum of the differences of a stream's first `prefix` nodes (prefixes come in order)."""
        upto, value = sums.get(stream, (0, None))
        buffer = fill(stream, prefix)
        if value is None or prefix < upto:  # the first call, or (never in forward order) a shorter prefix
            upto, value = 0, buffer[1:1].sum(0)
        if prefix > upto:
            value = value + buffer[1 + upto:1 + prefix].sum(0)
        sums[stream] = (prefix, value)
        return value

    def inputs_of(stream: str, prefix: int, mask: Tensor, x: Tensor) -> Tensor:
        """(V, P T, R_s, D) each receiver's input, variant by variant: x plus the patched edges' differences, or
        (fewer nodes to read) x plus every difference minus the kept edges', as one product whose first row is that
        base. Only the nodes with such an edge are read."""
        buffer = fill(stream, prefix)  # (1 + U_s, V, P T D)
        R, D = mask.shape[2], x.shape[-1]
        xs = x.reshape(V, -1)  # (V, P T D)
        PT = xs.shape[1] // D
        out = x.new_empty(V, PT, R, D)
        if prefix * xs.shape[1] <= SMALL:  # a small model: one product for every variant, no loop over them
            fix = torch.bmm(mask.transpose(1, 2).to(buffer.dtype), buffer[1:1 + prefix].transpose(0, 1))
            return torch.add(xs.view(V, PT, 1, D), fix.view(V, R, PT, D).transpose(1, 2), out=out)
        kept = ~mask  # every edge of the prefix is real
        patched_nodes, kept_nodes = mask.any(2), kept.any(2)  # (V, prefix)
        for v in range(V):
            complement = from_total(int(patched_nodes[v].sum()), int(kept_nodes[v].sum()))
            use, nodes = (kept[v], kept_nodes[v]) if complement else (mask[v], patched_nodes[v])
            base = buffer[0, v]  # (P T D): x, or x plus every difference
            torch.add(xs[v], total(stream, prefix)[v], out=base) if complement else base.copy_(xs[v])
            if not nodes.any():
                out[v] = base.view(PT, 1, D)
                continue
            sign = -1.0 if complement else 1.0
            if GATHER * int(nodes.sum()) > prefix:  # a view of the prefix reads less than a gather copies
                weights, values = use.T, buffer[:1 + prefix, v]
            else:
                index = nodes.nonzero().flatten()
                weights, values = use[index].T, buffer[torch.cat([index.new_zeros(1), 1 + index]), v]
            weights = torch.cat([weights.new_ones(R, 1), weights], 1).to(buffer.dtype)  # (R, 1 + nodes)
            weights[:, 1:] *= sign
            # (P T, R, 1 + nodes) @ (P T, 1 + nodes, D): written straight in the (rows, T, R, D) layout the block reads
            torch.matmul(weights, values.view(-1, PT, D).transpose(0, 1), out=out[v])
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
        source = final["encoder"] if s.norm == "encoder_final" else x  # cross k / v: the encoder's last stream
        own = inputs_of(s.stream, s.prefix, mask, source)  # (V, P T, R, D)
        T = shapes[s.stream][0]
        own = own.view(V * P, T, *own.shape[2:])
        if shared or s.role not in ("q", "k", "v"):
            own = own[:, :, 0]
        if s.norm == "encoder_final":  # then the encoder's final norm, per head
            return own if model.encoder.norm is None else model.encoder.norm(own)
        return own  # (V P, T, H, D): each head its own input, or (V P, T, D)

    logits = run_logits(model, inputs, False, V, receivers=receivers, record=record)
    return logits.float().view(V, P, -1)

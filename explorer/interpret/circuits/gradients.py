"""One backward pass that scores every edge at once: the model run on the clean ids with its embeddings set on the
path from the corrupted run's to the clean run's (alpha = 0: the corrupted run, 1: the clean run), and each
receiver's gradient contracted with the upstream nodes' (corrupted - clean) outputs as it arrives:

    score[u, r] += sum over positions and width of (a_u(corrupted) - a_u(clean)) . d metric / d input_r

A head's q / k / v receiver is its own copy of the stream before the block's norm. Its gradient is taken from an
ordinary run: a hook on the block's q / k / v (explorer.model's Record) turns the gradient there back through the
rotary turn, the head's rows of the projection and the norm (head_grads.py), so the block never runs on per-head
copies. Grouped-query keys and values (a K/V head shared by a group: the heads' gradients are summed in it) and norms
without a written backward still read a per-head copy of the stream (B, T, H, D), as cross-attention's k / v rebuild
the encoder's last stream per head before the encoder's final norm (that norm is theirs). An MLP's and the logits'
receiver is a view of the stream. The gradient is taken with torch.autograd.grad with respect to the interpolated
embeddings only: no parameter's .grad is touched, nothing is registered on a module (the hooks sit on this call's
own tensors).

    gradient_pass(model, graph, inputs, alphas (K,), corrupted, clean | None, metric, clean_logprobs)
        -> Pass(scores (K, U, R) summed over the pairs, embed (K, P) each pair's sum over the embeddings' edges,
                metric (K, P), clean Snapshot when the pass made it (alpha 1 first, clean None: the other points
                ride in the same run))

Shapes: K integration points, P pairs, rows K P (point-major), T length, D width, U nodes, R receivers.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ...model import Record, Transformer
from ...model.positional import position_ids
from ...model.rotary import RotaryTables, rotary_tables
from .graph import CircuitGraph, Site
from .batches import Inputs
from .head_grads import head_input_grads
from .metrics import metric_values
from .runner import RECORDED, Snapshot, attention_module, run_logits


@dataclass
class Pass:
    scores: Tensor  # (K, U, R) float64, summed over pairs
    embed: Tensor  # (K, P) float64: per pair, the sum of the scores of the embeddings' edges
    metric: Tensor  # (K, P) float64
    clean: Snapshot | None  # the clean run, when this pass was it (alpha 1, no clean snapshot given)
    deltas: dict[str, Tensor]  # stream -> (U_s, P T D) corrupted - clean node outputs: the next pass may reuse them


def stream_deltas(model: Transformer, graph: CircuitGraph, corrupted: Snapshot, clean: Snapshot) -> dict[str, Tensor]:
    """stream -> (U_s, P T D) float: each node's corrupted - clean output, one row per node (the same at every
    point of the path: computed once per batch)."""
    deltas = {}
    for stream in graph.streams:
        change = corrupted.outputs(model, graph, stream) - clean.outputs(model, graph, stream)  # (P, U_s, T, D)
        deltas[stream] = change.float().transpose(0, 1).reshape(change.shape[1], -1)
    return deltas


def tap_sites(model: Transformer, graph: CircuitGraph) -> dict[str, tuple[Tensor, nn.Module | None]]:
    """site -> (its rows of the packed projection (H Dh, D), the norm its heads' input goes through) for every q / k / v
    site whose heads' gradients come from the projection's output (head_grads); grouped-query keys and values (one
    K/V head per group: the heads' gradients are summed there) and unknown norms keep a copy of the stream per head."""
    config, taps = model.config, {}
    H, Hkv, Dh = config.n_heads, config.resolved_kv_heads, config.resolved_head_dim
    rows = {"q": (0, H * Dh), "k": (H * Dh, (H + Hkv) * Dh), "v": ((H + Hkv) * Dh, (H + 2 * Hkv) * Dh)}
    for s in graph.sites:
        if s.role not in rows or (s.role != "q" and Hkv != H):
            continue
        kind, layer = s.site.split(".")[:2]
        layer = int(layer)
        if s.norm == "encoder_final":
            norm = model.encoder.norm
        elif kind == "encoder":
            norm = model.encoder.layers[layer].attn_sublayer.norm
        else:
            block = model.decoder.layers[layer]
            norm = (block.cross_sublayer if kind == "cross" else block.self_sublayer).norm
        if norm is not None and not isinstance(norm, (nn.LayerNorm, nn.RMSNorm)):
            continue
        start, stop = rows[s.role]
        taps[s.site] = (attention_module(model, kind, layer).in_proj.weight[start:stop].detach(), norm)
    return taps


class _Taps(dict):
    """The Record's tensors: a tapped site's q / k / v gets a gradient hook as the model writes it (and is not
    kept: the backward holds it as long as it is needed)."""

    def __init__(self, on_grad, sites: set[str]) -> None:
        super().__init__()
        self.on_grad, self.sites = on_grad, sites

    def __setitem__(self, name: str, value: Tensor) -> None:
        if name in self.sites and value.requires_grad:
            value.register_hook(lambda g, site=name: self.on_grad(site, g))
        if name.rsplit(".", 1)[-1] not in ("q", "k", "v"):
            super().__setitem__(name, value)


class TapRecord(Record):
    """A Record that hands the gradient at each tapped site's q / k / v (after rotary) to `on_grad(site, grad)` as
    the backward reaches it, and keeps the `keep` sites (the node outputs, when the pass records the clean run)."""

    def __init__(self, on_grad, sites: set[str], keep) -> None:
        super().__init__(only=tuple(keep) + ("q", "k", "v"))
        self.tensors = _Taps(on_grad, sites)


def gradient_pass(model: Transformer, graph: CircuitGraph, inputs: Inputs, alphas: list[float], corrupted: Snapshot,
                  clean: Snapshot | None, metric: str, clean_logprobs: Tensor | None = None,
                  deltas: dict[str, Tensor] | None = None) -> Pass:
    """See the module docstring. `clean` None: the first alpha must be 1.0, and the pass records the clean run from
    those rows (the other points ride along in the same run). `deltas`:
    the batch's stream_deltas from an earlier pass."""
    if clean is None and (not alphas or alphas[0] != 1.0):
        raise ValueError("the clean run is the first point (alpha 1) when no clean snapshot is given")
    K, P = len(alphas), inputs.size
    U, R = graph.n_nodes, graph.n_receivers
    H = graph.config.n_heads
    device = inputs.clean.device
    a = torch.tensor(alphas, device=device).repeat_interleave(P)[:, None, None]  # (K P, 1, 1) point-major
    leaves: list[Tensor] = []
    deltas = dict(deltas or {})  # stream -> (U_s, P T D): corrupted - clean node outputs, one row per node
    totals = torch.zeros(K, U, R, dtype=torch.float64, device=device)
    embed = torch.zeros(K, P, dtype=torch.float64, device=device)
    final: dict[str, Tensor] = {}

    def interpolate(site: str, x: Tensor) -> Tensor:
        stream = site.split(".")[0]
        if site != f"{stream}.0.resid_pre":
            return x
        base = x.detach()  # the clean ids' embeddings
        if list(alphas) != [1.0]:
            corr = corrupted.embed(stream).repeat(K, 1, 1)
            base = torch.lerp(corr, base, a.to(corr.dtype))  # exactly the clean embeddings at alpha 1
        leaf = base.requires_grad_()
        leaves.append(leaf)
        return leaf

    # sites reading the same prefix of a stream (a layer's q, k, v) are contracted together: one read of the deltas
    group_sizes = Counter((s.stream, s.prefix) for s in graph.sites)
    pending: dict[tuple[str, int], list[tuple[Site, Tensor]]] = {}

    def flush(key: tuple[str, int]) -> None:
        items = pending.pop(key)
        stream, prefix = key
        first = graph.offsets[stream]
        rows = torch.cat([g for _, g in items], 0) if len(items) > 1 else items[0][1]  # (sum R_s K, P T D)
        product = deltas[stream][:prefix] @ rows.T  # (prefix, sum R_s K): one product over every pair
        for (s, _), part in zip(items, product.split([s.size * K for s, _ in items], 1)):
            part = part.view(prefix, s.size, K).permute(2, 0, 1)  # (K, prefix, R_s)
            totals[:, first:first + prefix, s.start:s.start + s.size] += part.double()

    def contract(s: Site, grad: Tensor, head_first: bool = False) -> None:
        """grad (R_s, K P, T, D) head first (head_grads' layout), or as the model's copies give it: (K P, T, R_s, D)
        per head, (K P, T, D) for an MLP or the logits."""
        if grad.dim() == 3:
            grad = grad.unsqueeze(0)
        elif not head_first:  # a per-head copy's (K P, T, H, D)
            grad = grad.permute(2, 0, 1, 3)
        g = grad.reshape(s.size, K, P, -1)  # (R_s, K, P, T D)
        per_pair = torch.einsum("pn,kpn->kp", deltas[s.stream][0].view(P, -1), g.sum(0))
        embed.add_(per_pair.double())  # each pair's embeddings' edges (node 0 of the stream), for completeness
        key = (s.stream, s.prefix)
        pending.setdefault(key, []).append((s, g.reshape(s.size * K, -1)))  # rows r K + k
        if len(pending[key]) == group_sizes[key]:
            flush(key)

    tapped: dict[str, Tensor] = {}  # site -> the stream its heads read (B, T, D): their gradients come from q / k / v
    rotary: dict[str, RotaryTables] = {}  # stream -> its rotary tables, made once
    taps = tap_sites(model, graph)

    def receivers(site: str, x: Tensor) -> Tensor:
        if site == "encoder.final":
            final["encoder"] = x
            return x
        s = graph.site_of[site]
        if site in taps:  # one input for every head; each head's gradient is taken at its own q / k / v (head_grads)
            tapped[site] = final["encoder"] if s.norm == "encoder_final" else x
            return x
        if s.norm == "encoder_final":  # cross k / v: each head rebuilds the encoder's stream, then its final norm
            copy = final["encoder"].unsqueeze(2).expand(-1, -1, H, -1)  # (B, S, H, D)
            copy.register_hook(lambda g, s=s: contract(s, g))
            return copy if model.encoder.norm is None else model.encoder.norm(copy)
        copy = x.unsqueeze(2).expand(-1, -1, H, -1) if s.role in ("q", "k", "v") else x.view(x.shape)
        copy.register_hook(lambda g, s=s: contract(s, g))
        return copy

    def on_head_grad(site: str, grad: Tensor) -> None:
        """grad (K P, H, T, Dh) at a tapped site's q / k / v: each head's gradient at its own input, contracted."""
        s, (weight, norm) = graph.site_of[site], taps[site]
        turn = None
        if s.role in ("q", "k") and not site.startswith("cross.") and model.config.positional == "rotary":
            if s.stream not in rotary:  # the positions the stack turned this stream's queries and keys by
                mask = inputs.src_mask if s.stream == "encoder" else inputs.mask
                rotary[s.stream] = rotary_tables(position_ids(mask.repeat(K, 1), grad.shape[2]), model.config)
            turn = rotary[s.stream]
        contract(s, head_input_grads(grad, weight, norm, tapped.pop(site), turn), head_first=True)

    record = TapRecord(on_head_grad, set(taps), RECORDED if clean is None else ())
    with torch.inference_mode(False), torch.enable_grad():
        logits = run_logits(model, inputs, False, K, receivers=receivers, record=record, resid_hook=interpolate)
        snapshot = None
        if clean is None:
            snapshot = Snapshot(logits[:P].detach().float(), {k: v[:P].detach() for k, v in record.tensors.items()})
            if clean_logprobs is None:
                clean_logprobs = snapshot.logits.log_softmax(-1)
        reference = None if clean_logprobs is None else clean_logprobs.repeat(K, 1)
        values = metric_values(metric, logits.float(), inputs.answers.repeat(K), inputs.wrongs.repeat(K), reference)
        if not deltas:
            with torch.no_grad():
                deltas.update(stream_deltas(model, graph, corrupted, snapshot if snapshot is not None else clean))
        torch.autograd.grad(values.sum(), leaves, allow_unused=True)  # the hooks contract the gradients as they come
        for key in list(pending):  # groups some of whose receivers got no gradient (they change no metric)
            flush(key)
    return Pass(totals, embed, values.detach().double().view(K, P), snapshot, deltas)


"""One run of the model over a batch of pairs, repeated for several variants (circuits, integration points), and the
node outputs it wrote: what the scores and the patched runs share.

    run_logits(model, inputs, corrupted, copies, receivers=None, record=None, resid_hook=None) -> (K P, V)
        the logits at each pair's answer position, rows variant-major (copy k of pair p is row k P + p)
    stream_outputs(model, graph, record, stream) -> (B, U_s, T, D): every node of a stream, its output in the run
    plain_run(model, graph, inputs, corrupted) -> Snapshot: the logits and the node outputs of an unpatched run

Only the answer position goes through the LM head (a circuit's metric reads nothing else), so a run costs less than
a forward computing every position's logits. Head h's output is z_h W_O^h, from the Record's z (B, H, T, Dh) and the
block's W_O (the bias of W_O belongs to no head).

Shapes: B rows, P pairs, K copies, T length of the stream's sequence, D model width, U_s nodes of a stream.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ...model import Record, Transformer
from .graph import CircuitGraph
from .batches import Inputs

RECORDED = ("embed", "z", "mlp")  # the Record sites the node outputs come from
BUDGET = 2**30  # bytes of per-row tensors a run may hold at once (node differences, split inputs, saved activations)


def attention_module(model: Transformer, kind: str, layer: int) -> nn.Module:
    if kind == "encoder":
        return model.encoder.layers[layer].self_attn
    block = model.decoder.layers[layer]
    return block.cross_attn if kind == "cross" else block.self_attn


def head_outputs(z: Tensor, attention: nn.Module) -> Tensor:
    """z (B, H, T, Dh) -> each head's write into the residual stream, (B, H, T, D): z_h @ W_O[:, h].T."""
    H, Dh = z.shape[1], z.shape[3]
    weight = attention.out_proj.weight.view(-1, H, Dh)  # (D, H Dh) -> (D, H, Dh)
    return torch.einsum("bhte,dhe->bhtd", z, weight)


def group_outputs(model: Transformer, graph: CircuitGraph, tensors, group) -> Tensor:
    """One group's outputs (B, size, T, D) from a Record (or a dict of its tensors)."""
    value = tensors[group.site]
    if group.kind == "heads":
        return head_outputs(value, attention_module(model, group.attention, group.layer))
    return value.unsqueeze(1)  # (B, T, D) -> (B, 1, T, D)


def stream_outputs(model: Transformer, graph: CircuitGraph, tensors, stream: str) -> Tensor:
    """(B, U_s, T, D) the outputs of every node of `stream`."""
    return torch.cat([group_outputs(model, graph, tensors, g) for g in graph.groups if g.stream == stream], dim=1)


def run_logits(model: Transformer, inputs: Inputs, corrupted: bool, copies: int = 1, *, receivers=None,
               record: Record | None = None, resid_hook=None) -> Tensor:
    """(copies P, V) logits at the answer positions; see the module docstring."""
    def rep(t: Tensor | None) -> Tensor | None:
        return None if t is None else t.repeat(copies, *([1] * (t.dim() - 1)))

    ids, mask = rep(inputs.ids(corrupted)), rep(inputs.mask)
    hooks = dict(need_weights=False, record=record, receivers=receivers, resid_hook=resid_hook)
    if model.config.arch == "encoder-decoder":
        src_mask = rep(inputs.src_mask)
        enc = model.encode(rep(inputs.src_ids(corrupted)), key_mask=src_mask, **hooks)
        out = model.decode(ids, enc.memory, src_mask, key_mask=mask, **hooks).output
    else:
        out = model.decode(ids, key_mask=mask, **hooks).output
    rows = torch.arange(out.shape[0], device=out.device)
    return model.generator.logits(out[rows, rep(inputs.read)])  # (copies P, V): the answer positions only


@dataclass
class Snapshot:
    """An unpatched run of a batch: its logits at the answer positions and what its nodes wrote."""

    logits: Tensor  # (P, V)
    tensors: dict[str, Tensor]  # the Record's embed / z / mlp sites

    def outputs(self, model: Transformer, graph: CircuitGraph, stream: str) -> Tensor:
        return stream_outputs(model, graph, self.tensors, stream)  # (P, U_s, T, D)

    def embed(self, stream: str) -> Tensor:
        return self.tensors[f"{stream}.embed"]  # (P, T, D)


@torch.no_grad()
def plain_run(model: Transformer, inputs: Inputs, corrupted: bool) -> Snapshot:
    record = Record(only=RECORDED)
    logits = run_logits(model, inputs, corrupted, record=record)
    return Snapshot(logits.float(), dict(record.tensors))


def row_bytes(graph: CircuitGraph, inputs: Inputs, backward: bool) -> int:
    """What one row (a pair in one variant or at one point) holds at once, about: a patched run, every node's
    difference for its longest stream twice over and a layer's split inputs; a backward pass, every node's difference,
    each layer's saved activations and one site's per-head gradients (the heads' gradients come from q / k / v, no
    per-head copy of the stream is kept). Twice what was measured on GPT-2-small's shape (28 rows of 32 tokens:
    about 18-23 MB a row, against 46 MB here)."""
    config = graph.config
    T = max(inputs.clean.shape[1], 0 if inputs.src_clean is None else inputs.src_clean.shape[1])
    layers = config.encoder_layers + config.decoder_layers
    U, H = max(graph.stream_sizes.values()), config.n_heads
    width = U + layers * (H + 16) if backward else 2 * U + 6 * H
    return 4 * T * config.d_model * width


def rows_per_run(graph: CircuitGraph, inputs: Inputs, backward: bool = True, budget: int = BUDGET) -> int:
    """Rows one run may hold within `budget` bytes (at least 1)."""
    return max(1, budget // row_bytes(graph, inputs, backward))

"""Information Flow Routes (Ferrando & Voita 2024; Meta's LM Transparency Tool draws them): the contribution
graph of one prediction, built top-down from the chosen token at the last layer.

Every residual update is a sum of parts. An attention sublayer: x_out = x_in + sum_{h, j} c_hj + b_o with
c_hj = a_ij^h v_j W_o^h (head h carrying key j), the residual x_in, and W_o's bias b_o, which no part
carries (it is in the whole, as in the tool: TransformerLens's resid_mid includes b_O). A feed-forward
sublayer: x_out = x_in + mlp(x_in). GPT-NeoX's parallel residual is ONE update with every part:
x_out = x_in + heads + mlp. Each part's proximity to the whole, in L1 norms,

    p_k = max(||x_out||_1 - ||x_out - c_k||_1, 0),  floored at EPS for parts that are not exactly zero,

normalised over the parts of that update (shares sum to 1). The floor is the tool's (`clip(min=1e-5)`), kept
only for non-zero parts so that the sum is never 0, while a head switched off (z = 0), a masked or causally
hidden key (a_ij = 0) has share exactly 0. Post-norm sublayers (BERT, BART, Marian, seeds 001/002) end
with a norm: it is frozen at the forward pass's divisor s (explorer.interpret.dla does the same), so every part
goes through the linear map c -> gamma * (c - mean c) / s (RMSNorm: gamma * c / s) and the whole is the
sublayer's output; the norm's beta, like b_o, is in the whole only.

The graph (Algorithm 1 of the paper): start at node (stack, last layer, position, "out"); for every node
reached, compute its update's shares; keep the parts with share >= threshold; their source nodes are
reached. Nodes are residual-stream states: (stack, layer, position, sublayer) with sublayer

    "embed"  what layer 0 receives (layer is 0)          "attn"  after layer's self-attention
    "cross"  after layer's cross-attention (enc-dec)     "out"   the layer's output (after its MLP)

Edges: kind "head" (attention "decoder" / "encoder" self-attention or "cross"; source (layer - 1, j, "out")
or (0, j, "embed"), for cross the encoder's top node (encoder, last layer, j, "out"), whose final norm is
position-wise), "mlp" and "residual" (from the state before the update, same position). A cross edge reached
continues the trace down the encoder. `share` is the raw share, `weight` the share renormalised over the
parts kept at that node (the tool's `apply_threshold_and_renormalize`).

Cost: one forward pass with every attention returned and a Record (values, head outputs, MLP outputs, norm
divisors); per layer, the vectors v_j W_o^h (H, S, D) once, and the distances ||x_i - a_ij^h v_j W_o^h||_1 only
for the rows i in the graph, in chunks of at most CHUNK elements: nothing of shape (T, T, H, D) is built.

Shapes: L layers, H (query) heads, Hkv key/value heads, T length of the traced stack, S key length (T, or the
source length for cross-attention), D model width, Dh head width, r rows (positions) reached in a layer.

    contribution_graph(model, ids (T,)|(1, T), position, tgt, head_mask, threshold, kind) -> ContributionGraph
    proximity_shares(whole (r, D), parts (r, k, D)) -> (r, k)       the measure, on explicit parts
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
from torch import Tensor, nn

from ..model import Record, Transformer
from .sequence import as_row, check_inputs, resolve_position

EPS = 1e-5  # the LM Transparency Tool's floor of a proximity (absolute, in L1 units of the residual stream)
CHUNK = 1 << 23  # elements of one (rows, H, keys, D) block of head parts (32 MB in float32)
SUBLAYERS = ("embed", "attn", "cross", "out")
KINDS = ("head", "mlp", "residual")


class FlowNode(NamedTuple):
    """A residual-stream state: `stack` "decoder" / "encoder", `layer` from 0, `position` from 0, `sublayer` one of
    SUBLAYERS ("embed" nodes have layer 0)."""

    stack: str
    layer: int
    position: int
    sublayer: str


@dataclass(frozen=True)
class FlowEdge:
    """One kept part of `target`'s update. kind "head" / "mlp" / "residual"; `head` and `attention` ("decoder",
    "encoder", "cross") only for heads; `layer` is the layer of the update; `share` before the threshold,
    `weight` renormalised over the parts kept at `target`."""

    source: FlowNode
    target: FlowNode
    kind: str
    layer: int
    head: int | None
    attention: str | None
    share: float
    weight: float


@dataclass
class NodeShares:
    """Every part's share of one node's update, before the threshold (they sum to 1).
    heads (H, S) over (head, key) for attention updates, else None; `attention` their kind; mlp None where the
    update has no MLP part; residual the incoming stream's."""

    residual: float
    heads: Tensor | None = None
    attention: str | None = None
    mlp: float | None = None

    def total(self) -> float:
        return self.residual + (0.0 if self.mlp is None else self.mlp) + \
            (0.0 if self.heads is None else float(self.heads.double().sum()))


@dataclass
class ContributionGraph:
    """The routes to `root`: kept nodes (top-down order), kept edges, and the share tables of every kept node that
    has an update (embed nodes have none). lengths: stack -> its number of positions; layers: stack -> L."""

    root: FlowNode
    threshold: float
    nodes: list[FlowNode]
    edges: list[FlowEdge]
    shares: dict[FlowNode, NodeShares]
    n_heads: int
    layers: dict[str, int]
    lengths: dict[str, int]
    parallel: bool  # GPT-NeoX's parallel residual: one "out" update per layer, no "attn" nodes
    cross: bool  # an encoder-decoder traced from its decoder: "cross" nodes and encoder nodes exist
    arch: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def heads_used(self) -> dict[tuple[str, int, int], float]:
        """(attention, layer, head) -> the sum of its kept edges' shares: which heads the routes go through."""
        out: dict[tuple[str, int, int], float] = {}
        for e in self.edges:
            if e.kind == "head":
                key = (e.attention, e.layer, e.head)
                out[key] = out.get(key, 0.0) + e.share
        return out

    def edges_into(self, node: FlowNode) -> list[FlowEdge]:
        return [e for e in self.edges if e.target == node]


# ------------------------------------------------------------------------------------------------ the measure
def proximity_shares(whole: Tensor, parts: Tensor) -> Tensor:
    """whole (r, D), parts (r, k, D) -> shares (r, k): the proximity measure on explicit parts (module docstring).
    The reference the graph's chunked computation is tested against; fine for small k."""
    norm = whole.abs().sum(-1, keepdim=True)  # (r, 1)
    prox = (norm - (whole[:, None] - parts).abs().sum(-1)).clamp(min=0)  # (r, k)
    nonzero = parts.ne(0).any(-1)
    prox = torch.where(nonzero, prox.clamp(min=EPS), torch.zeros_like(prox))
    return prox / prox.sum(-1, keepdim=True)


def _proximity(whole: Tensor, part: Tensor) -> Tensor:
    """whole (r, D), part (r, D) -> (r,) unnormalised proximity of one dense part per row."""
    norm = whole.abs().sum(-1)
    prox = (norm - (whole - part).abs().sum(-1)).clamp(min=0)
    return torch.where(part.ne(0).any(-1), prox.clamp(min=EPS), torch.zeros_like(prox))


def _head_proximity(whole: Tensor, coef: Tensor, vectors: Tensor) -> Tensor:
    """whole (r, D); coef (r, H, S) the factor of each (head, key) vector for each row; vectors (H, S, D)
    -> (r, H, S) unnormalised proximities of the parts coef[r, h, j] * vectors[h, j], chunked over rows and keys
    (keys past the last non-zero coefficient of a chunk are never touched: causal rows read only their past)."""
    r, H, S = coef.shape
    D = whole.shape[-1]
    out = torch.zeros(r, H, S, dtype=whole.dtype, device=whole.device)
    norm = whole.abs().sum(-1)  # (r,)
    keys_per_chunk = max(1, CHUNK // (H * D))
    for i in range(r):
        used = coef[i].ne(0).any(0).nonzero()
        if used.numel() == 0:
            continue
        last = int(used[-1]) + 1
        for j0 in range(0, last, keys_per_chunk):
            j1 = min(last, j0 + keys_per_chunk)
            c = coef[i, :, j0:j1]  # (H, s)
            diff = vectors[:, j0:j1] * c[..., None]  # (H, s, D)
            diff.sub_(whole[i]).abs_()
            prox = (norm[i] - diff.sum(-1)).clamp_(min=0)  # (H, s)
            out[i, :, j0:j1] = torch.where(c.ne(0), prox.clamp(min=EPS), torch.zeros_like(prox))
    return out


# ------------------------------------------------------------------------------------------------ one run
@dataclass
class _Stack:
    """What the forward pass gave for one stack."""

    name: str  # "decoder" / "encoder"
    module: nn.Module
    hidden: tuple[Tensor, ...]  # L + 1 of (T, D): layer inputs then outputs (before a final norm)
    self_weights: tuple[Tensor, ...]  # L of (H, T, T)
    cross_weights: tuple[Tensor, ...]  # L of (H, T, S) or ()
    gates: dict[str, Tensor | None]  # attention kind -> (L, H) head mask or None


def _frozen_norm(norm: nn.Module, scale: Tensor):
    """A post-norm sublayer's norm frozen at its divisors `scale` (r, 1) -> (shape, scale): `shape` maps (..., D)
    to gamma * (c - mean c) (LayerNorm; RMSNorm gamma * c), the part of the frozen map that is the same for every
    row; dividing by the row's scale completes it (head vectors are shaped once and divided per row)."""
    gamma = norm.weight.float() if getattr(norm, "weight", None) is not None else None
    centre = isinstance(norm, nn.LayerNorm)

    def shape(c: Tensor) -> Tensor:  # centre and gamma, no divisor
        if centre:
            c = c - c.mean(-1, keepdim=True)
        return c if gamma is None else c * gamma

    return shape, scale.float()


class _Tracer:
    def __init__(self, model: Transformer, stacks: dict[str, _Stack], record: Record, threshold: float):
        self.model, self.stacks, self.record, self.threshold = model, stacks, record, threshold
        self.config = model.config
        self.post = not model.config.norm_first
        self.parallel = model.config.parallel_residual
        self.nodes: dict[FlowNode, None] = {}
        self.edges: list[FlowEdge] = []
        self.shares: dict[FlowNode, NodeShares] = {}
        self.cache: dict[tuple[str, int], Tensor] = {}

    # --- per-layer tensors ----------------------------------------------------------------------------------
    def head_vectors(self, kind: str, layer: int, attention: nn.Module, shape=None) -> Tensor:
        """(H, S, D): v_j W_o^h for every query head and key (float32), shaped by a frozen post-norm if any."""
        key = (kind, layer)
        if key not in self.cache:
            v = self.record[f"{kind}.{layer}.v"][0].float()  # (Hkv, S, Dh)
            H, Hkv, Dh = attention.n_heads, attention.n_kv_heads, attention.head_dim
            v = v.repeat_interleave(H // Hkv, dim=0)  # (Hkv, S, Dh) -> (H, S, Dh): query head h reads h // G
            w = attention.out_proj.weight.float().view(-1, H, Dh)  # (D, H*Dh) -> (D, H, Dh)
            vec = torch.einsum("hsi,dhi->hsd", v, w)  # (H, S, D)
            self.cache.clear()  # one layer at a time: the trace goes down layer by layer
            self.cache[key] = vec if shape is None else shape(vec)
        return self.cache[key]

    def attn_out(self, kind: str, layer: int, attention: nn.Module, rows: Tensor) -> Tensor:
        """(r, D): what the block added at `rows` (heads through W_o, plus its bias), from the recorded z."""
        z = self.record[f"{kind}.{layer}.z"][0][:, rows].float()  # (H, r, Dh)
        merged = z.transpose(0, 1).reshape(len(rows), -1)  # (H, r, Dh) -> (r, H*Dh)
        out_proj = attention.out_proj
        out = merged @ out_proj.weight.float().T
        return out if out_proj.bias is None else out + out_proj.bias.float()

    # --- one update ------------------------------------------------------------------------------------------
    def update(self, targets: list[FlowNode], whole: Tensor, residual: Tensor, residual_source: list[FlowNode],
               heads: tuple | None, mlp: Tensor | None, mlp_source: list[FlowNode] | None) -> list[FlowNode]:
        """Shares of each target's update; keep and record edges; -> the source nodes reached.
        heads: (attention kind, layer, coef (r, H, S), vectors (H, S, D), source(j) -> FlowNode) or None."""
        parts = [_proximity(whole, residual)]  # each (r,) or (r, H, S)
        if mlp is not None:
            parts.append(_proximity(whole, mlp))
        head_prox = None
        if heads is not None:
            _, _, coef, vectors, source = heads
            head_prox = _head_proximity(whole, coef, vectors)  # (r, H, S)
        total = sum(p for p in parts)
        if head_prox is not None:
            total = total + head_prox.sum((1, 2))
        total = total.clamp(min=torch.finfo(total.dtype).tiny)  # all parts zero: shares 0, never NaN
        res_share = (parts[0] / total).tolist()
        mlp_share = None if mlp is None else (parts[1] / total).tolist()
        head_share = None if head_prox is None else (head_prox / total[:, None, None]).cpu()
        reached: list[FlowNode] = []
        t = self.threshold
        for i, node in enumerate(targets):
            table = NodeShares(res_share[i], None if head_share is None else head_share[i],
                               None if heads is None else heads[0], None if mlp_share is None else mlp_share[i])
            self.shares[node] = table
            kept: list[tuple[FlowNode, str, int | None, float]] = []
            if table.residual >= t:
                kept.append((residual_source[i], "residual", None, table.residual))
            if table.mlp is not None and table.mlp >= t:
                kept.append((mlp_source[i], "mlp", None, table.mlp))
            if table.heads is not None:
                for h, j in (table.heads >= t).nonzero().tolist():
                    kept.append((source(j), "head", h, float(table.heads[h, j])))
            norm = sum(k[3] for k in kept) or 1.0
            layer_of = node.layer
            for src, kind, h, share in kept:
                self.edges.append(FlowEdge(src, node, kind, layer_of, h, table.attention if kind == "head" else None,
                                           share, share / norm))
                if src not in self.nodes:
                    self.nodes[src] = None
                    reached.append(src)
        return reached

    # --- a stack, top-down ---------------------------------------------------------------------------------
    def trace(self, stack: _Stack, seeds: list[FlowNode]) -> list[FlowNode]:
        """Trace `seeds` (nodes of this stack) down to its embeddings; -> the encoder nodes reached by cross edges."""
        name, layers = stack.name, stack.module.layers
        pending: dict[FlowNode, None] = dict.fromkeys(seeds)
        encoder_nodes: list[FlowNode] = []
        for layer in range(len(layers) - 1, -1, -1):
            block = layers[layer]
            for sub in ("out", "cross", "attn"):
                targets = sorted((n for n in pending if n.layer == layer and n.sublayer == sub),
                                 key=lambda n: n.position)
                if not targets:
                    continue
                for n in targets:
                    del pending[n]
                reached = getattr(self, f"_{sub}")(stack, layer, block, targets)
                for n in reached:
                    if n.stack != name:
                        encoder_nodes.append(n)
                    elif n.sublayer != "embed":
                        pending[n] = None
        return encoder_nodes

    def _below(self, stack: _Stack, layer: int, j: int) -> FlowNode:
        return FlowNode(stack.name, layer - 1, j, "out") if layer else FlowNode(stack.name, 0, j, "embed")

    def _coef(self, weights: Tensor, rows: Tensor, gate: Tensor | None, scale: Tensor | None) -> Tensor:
        coef = weights[:, rows].float().transpose(0, 1)  # (H, r, S) -> (r, H, S)
        if gate is not None:
            coef = coef * gate.float()[:, None]
        if scale is not None:
            coef = coef / scale[:, :, None]  # (r, 1) -> (r, 1, 1)
        return coef

    def _attention(self, stack: _Stack, layer: int, block, targets: list[FlowNode], kind: str):
        """The self- ("attn") or cross-attention ("cross") update of `targets`."""
        rows = torch.tensor([n.position for n in targets], device=stack.hidden[0].device)
        if kind == "cross":
            attention, sublayer = block.cross_attn, block.cross_sublayer
            x_in = self.self_out(stack, layer, block, rows)
            weights, gate, record_kind = stack.cross_weights[layer], stack.gates.get("cross"), "cross"
            enc = self.stacks["encoder"]
            top = len(enc.module.layers) - 1
            source = lambda j: FlowNode("encoder", top, j, "out")
            residual_source = [n._replace(sublayer="attn") for n in targets]
        else:
            attention = block.self_attn
            sublayer = block.attn_sublayer if stack.name == "encoder" else block.self_sublayer
            x_in = stack.hidden[layer][rows].float()
            weights, gate, record_kind = stack.self_weights[layer], stack.gates.get(stack.name), stack.name
            source = lambda j: self._below(stack, layer, j)
            residual_source = [self._below(stack, layer, n.position) for n in targets]
        gate = None if gate is None else gate[layer]
        added = x_in + self.attn_out(record_kind, layer, attention, rows)
        if self.post:
            shape, scale = _frozen_norm(sublayer.norm, self.record[f"{record_kind}.{layer}.scale"][0][rows])
            whole = sublayer.norm(added.to(stack.hidden[0].dtype)).float()
            residual = shape(x_in) / scale
            vectors = self.head_vectors(record_kind, layer, attention, shape)
        else:
            whole, residual, scale = added, x_in, None
            vectors = self.head_vectors(record_kind, layer, attention)
        coef = self._coef(weights[0], rows, gate, scale)
        return self.update(targets, whole, residual, residual_source,
                           (record_kind, layer, coef, vectors, source), None, None)

    def self_out(self, stack: _Stack, layer: int, block, rows: Tensor) -> Tensor:
        """(r, D) float32: the stream after `layer`'s self-attention at `rows`."""
        x = stack.hidden[layer][rows].float() + self.attn_out(stack.name, layer, block.self_attn, rows)
        if self.post:
            sub = block.self_sublayer if stack.name == "decoder" else block.attn_sublayer
            x = sub.norm(x.to(stack.hidden[0].dtype)).float()
        return x

    def mid(self, stack: _Stack, layer: int, block, rows: Tensor) -> Tensor:
        """(r, D): the stream the MLP of a sequential layer reads (after self- and cross-attention)."""
        x = self.self_out(stack, layer, block, rows)
        if getattr(block, "cross_attn", None) is not None:
            x = x + self.attn_out("cross", layer, block.cross_attn, rows)
            if self.post:
                x = block.cross_sublayer.norm(x.to(stack.hidden[0].dtype)).float()
        return x

    def _attn(self, stack, layer, block, targets):
        return self._attention(stack, layer, block, targets, "attn")

    def _cross(self, stack, layer, block, targets):
        return self._attention(stack, layer, block, targets, "cross")

    def _out(self, stack: _Stack, layer: int, block, targets: list[FlowNode]) -> list[FlowNode]:
        rows = torch.tensor([n.position for n in targets], device=stack.hidden[0].device)
        whole = stack.hidden[layer + 1][rows].float()
        mlp = self.record[f"{stack.name}.{layer}.mlp"][0][rows].float()
        if self.parallel:  # x_out = x_in + heads + mlp: one update (parallel residual is pre-norm, validated)
            x_in = stack.hidden[layer][rows].float()
            below = [self._below(stack, layer, n.position) for n in targets]
            gate = stack.gates.get(stack.name)
            coef = self._coef(stack.self_weights[layer][0], rows, None if gate is None else gate[layer], None)
            vectors = self.head_vectors(stack.name, layer, block.self_attn)
            heads = (stack.name, layer, coef, vectors, lambda j: self._below(stack, layer, j))
            return self.update(targets, whole, x_in, below, heads, mlp, below)
        sub = "cross" if getattr(block, "cross_attn", None) is not None else "attn"
        x_mid = self.mid(stack, layer, block, rows)
        if self.post:
            shape, scale = _frozen_norm(block.ff_sublayer.norm, self.record[f"{stack.name}.{layer}.mlp.scale"][0][rows])
            x_mid, mlp = shape(x_mid) / scale, shape(mlp) / scale
        sources = [n._replace(sublayer=sub) for n in targets]
        return self.update(targets, whole, x_mid, sources, None, mlp, sources)


# ------------------------------------------------------------------------------------------------ entry point
@torch.no_grad()
def contribution_graph(model: Transformer, ids: Tensor, *, position: int = -1, tgt: Tensor | None = None,
                       head_mask: Mapping[str, Any] | None = None, threshold: float = 0.04,
                       kind: str | None = None) -> ContributionGraph:
    """The information-flow routes to `position` (see the module docstring): one forward pass, then top-down.

    ids: the sequence (decoder-only, encoders) or the source (encoder-decoders, with `tgt` the decoder input).
    kind: the stack traced from: "decoder" (default where there is one; `position` counts in tgt for an
    encoder-decoder, and cross edges continue into the encoder) or "encoder" (encoders, masked LMs; an
    encoder-decoder's encoder alone). head_mask: as the forward takes it ({kind: (L, H)}, 1 = on); a head
    switched off has share 0. threshold: parts with share >= threshold are kept (the paper's tau)."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
        raise ValueError(f"threshold must be a number in (0, 1], got {threshold!r}")
    arch = model.config.arch
    kind = kind or ("encoder" if arch == "encoder" else "decoder")
    if kind not in ("encoder", "decoder") or (kind == "encoder" and arch == "decoder") or \
            (kind == "decoder" and arch == "encoder"):
        have = {"decoder": "decoder", "encoder": "encoder", "encoder-decoder": "encoder or decoder"}[arch]
        raise ValueError(f"kind must name a stack of this model ({have}), got {kind!r}")
    check_inputs(model, "the contribution graph", tgt, needs_tgt=arch == "encoder-decoder" and kind == "decoder")
    device = model.device
    ids = as_row(ids, "ids").to(device)
    masks = model.head_masks(head_mask)
    # a norm's divisor is computed only when recorded: only post-norm sublayers need it (their frozen norm)
    record = Record(only=("v", "z", "mlp") + (() if model.config.norm_first else ("scale", "mlp.scale")))
    stacks: dict[str, _Stack] = {}
    lengths: dict[str, int] = {}
    if arch != "decoder":
        enc = model.encode(ids, head_mask=masks.get("encoder"), need_weights=True, record=record)
        stacks["encoder"] = _Stack("encoder", model.encoder, tuple(h[0] for h in enc.hidden_states), enc.attentions,
                                   (), {"encoder": masks.get("encoder")})
        lengths["encoder"] = ids.shape[1]
    if arch != "encoder" and kind == "decoder":
        if arch == "decoder":
            seq = ids
            dec = model.decode(ids, head_mask=masks.get("decoder"), need_weights=True, record=record)
        else:
            seq = as_row(tgt, "tgt").to(device)
            dec = model.decode(seq, enc.memory, enc.key_mask, head_mask=masks.get("decoder"),
                               cross_head_mask=masks.get("cross"), key_mask=model.target_key_mask(seq, True),
                               need_weights=True, record=record)
        stacks["decoder"] = _Stack("decoder", model.decoder, tuple(h[0] for h in dec.hidden_states),
                                   dec.self_attentions, dec.cross_attentions,
                                   {"decoder": masks.get("decoder"), "cross": masks.get("cross")})
        lengths["decoder"] = seq.shape[1]
    t = resolve_position(position, lengths[kind])
    top = stacks[kind]
    L = len(top.module.layers)
    root = FlowNode(kind, L - 1, t, "out")
    tracer = _Tracer(model, stacks, record, float(threshold))
    tracer.nodes[root] = None
    encoder_seeds = tracer.trace(top, [root])
    if encoder_seeds:
        tracer.cache.clear()
        tracer.trace(stacks["encoder"], encoder_seeds)
    return ContributionGraph(root=root, threshold=float(threshold), nodes=list(tracer.nodes), edges=tracer.edges,
                             shares=tracer.shares, n_heads=model.config.n_heads,
                             layers={name: len(s.module.layers) for name, s in stacks.items()}, lengths=lengths,
                             parallel=bool(model.config.parallel_residual),
                             cross=arch == "encoder-decoder" and kind == "decoder", arch=arch)

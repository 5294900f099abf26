"""How one attention head computes (BertViz's neuron view, Transformer Explainer's expanded attention): for head h
of one attention block and one query token i, every intermediate vector of the model's own run.

    x_i                     the block's input at token i: after the sublayer's norm (pre-norm), its input (post-norm)
    q_i = x_i W_Q^h (+ b)   rotated by position in rotary models (both sides kept; GPT-NeoX rotates its first R dims)
    k_j, v_j                likewise from key j's input (cross-attention: the encoder's output); grouped-query
                            attention: query head h reads key/value head h // (H / Hkv)
    q_i * k_j               element-wise products (BertViz's neuron view); their sum is the dot product q_i . k_j
    score_ij                (q_i . k_j) * scale + position_ij: scale is the model's (1/sqrt(Dh); T5: 1), position the
                            term the model adds (T5's relative bias; None for every other family)
    blocked keys            score -inf, and why: "padding", "causal", "custom" (a given attn_mask), "window" (sliding)
    a_ij                    softmax over j: the weights the model returns
    z_i = sum_j a_ij v_j    the head's weighted sum of values
    written                 gate_h * z_i W_O^h.T: what the head adds to the residual stream at token i (gate = the head
                            mask, 0 = switched off; W_O's bias is added once per block, by no head)

How: one forward pass of the model itself (fast attention path), with a Record that keeps what the chosen block reads
(its input x, q, k after rotary, v, its mask and score bias: explorer.model.record) and a head_hook that takes the
block's head outputs z and ends the run there, so no layer above it is computed. Only the rows of scores, softmax
and weights asked for are computed here, from the model's own q, k, bias and mask; tests check them against the
weights the model returns (1e-6) and the written vector against the Record's z (1e-5), on every family. q and k
before rotation are the block's input through the head's rows of W_Q / W_K (the model's weights).

Shapes: T query length, S key length (T for self-attention, the source length for cross-attention), D model width,
H query heads, Hkv key/value heads, Dh head width, R rotary width.

    capture_block(model, ids, kind, layer, ...)   -> BlockCapture (CPU tensors of the block: every head, every token)
    capture_from_record(model, record, ids, kind, layer, row=b, ...) -> BlockCapture of row b of a forward pass that
                                                  already ran with Record(only=block_sites(kind, layer)): no model run
    BlockCapture.head(head, query)                -> HeadComputation (numpy arrays of one head at one query)
    BlockCapture.weights(head)                    -> (T, S) one head's weights, computed as the model does
    head_computation(model, ids, kind, layer, head, query, ...)   -> HeadComputation (the two steps in one call)
    head_computation_pair(...)                    -> HeadComputationPair: without the toggles and with them, each
                                                     from its own forward pass (a head off changes the layers above it)
A BlockCapture is what a page keeps to answer clicks on other queries and heads of the same block in about a
millisecond; it and the results hold only CPU tensors and numpy arrays (picklable: a GPU worker can return them).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ..model import Record, Transformer
from ..model.masks import normalize_mask
from .sequence import as_row

REASONS = ("padding", "causal", "custom", "window")  # why a key is blocked, in the order they are named


class _Stop(Exception):
    """Raised by the head hook once the chosen block has run: nothing above it is computed."""


@dataclass
class HeadComputation:
    """One head at one query token, every number from the model's run (numpy, float32 unless said)."""

    kind: str  # "encoder", "decoder" (self-attention) or "cross"
    layer: int
    head: int  # the query head
    query: int  # the query position, from 0
    kv_head: int  # the key/value head this query head reads: head // (H / Hkv) (= head without grouped-query attn)
    n_heads: int  # H
    n_kv_heads: int  # Hkv
    scale: float  # what q.k is multiplied by: the model's own (1/sqrt(Dh); T5: 1.0)
    rotary_dim: int  # R: dimensions of q and k that rotate with position (0: no rotary; GPT-NeoX: a quarter of Dh)
    pre_norm: bool  # x is the block's input after its norm (True) or its input itself (post-norm)
    query_id: int  # the query token's id
    key_ids: np.ndarray  # (S,) int64 the keys' token ids
    x: np.ndarray  # (D,) what the block reads at the query token
    q: np.ndarray  # (Dh,) the query as the scores read it (after rotary)
    q_unrotated: np.ndarray | None  # (Dh,) before rotary (rotary models), else None
    keys: np.ndarray  # (S, Dh) every key as the scores read it (after rotary)
    keys_unrotated: np.ndarray | None  # (S, Dh) before rotary (rotary models), else None
    products: np.ndarray  # (S, Dh) q * k_j element-wise
    dots: np.ndarray  # (S,) q . k_j
    position: np.ndarray | None  # (S,) the position term added to each score (T5's relative bias), else None
    scores: np.ndarray  # (S,) dots * scale + position: before the mask
    allowed: np.ndarray  # (S,) bool, the model's own mask row: True = may attend
    blocked_by: tuple[str, ...]  # (S,) "" for an allowed key, else the reasons, e.g. "causal" or "padding, custom"
    masked_scores: np.ndarray  # (S,) scores with -inf at blocked keys: what the softmax reads
    weights: np.ndarray  # (S,) softmax: the weights the model returns (all 0 when every key is blocked)
    values: np.ndarray  # (S, Dh) v_j
    value_norms: np.ndarray  # (S,) || v_j W_O^h.T ||: the length of what key j adds through this head
    weighted_sum: np.ndarray  # (Dh,) z = sum_j a_j v_j, the model's own head output before the head mask
    head_on: bool  # the head mask's value for this head is not 0
    gate: float  # the head mask's value (1.0 on, 0.0 off)
    written: np.ndarray  # (D,) gate * z W_O^h.T: what the head writes into the residual stream at the query
    written_norm: float  # || written ||

    @property
    def weight_x_value(self) -> np.ndarray:
        """(S,) weight x |value written| (Kobayashi et al. 2020), as the app's heatmaps offer it."""
        return self.weights * self.value_norms


@dataclass
class HeadComputationPair:
    """The same head and query computed without toggles (every mask at its default, every head on) and with them;
    `toggled` is None when nothing was toggled. Each comes from its own forward pass."""

    baseline: HeadComputation
    toggled: HeadComputation | None
    changes: tuple[str, ...]  # what the toggled run changes, e.g. ("causal mask off", "head decoder L0 H3 off")

    @property
    def weight_change(self) -> np.ndarray | None:
        """(S,) toggled weights minus baseline weights, or None without toggles."""
        return None if self.toggled is None else self.toggled.weights - self.baseline.weights


@dataclass
class BlockCapture:
    """What one attention block read and computed in one run of one sequence (CPU tensors, batch dimension dropped).

    Blocked keys: `allowed` is the mask the block applied; `key_real`, `causal`, `custom` and `window` are its parts,
    kept to say why a key is blocked."""

    kind: str
    layer: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    scale: float  # the block's multiplier of q.k
    rotary_dim: int  # R, 0 without rotary positions (cross-attention: always 0)
    pre_norm: bool
    query_ids: Tensor  # (T,) int64
    key_ids: Tensor  # (S,) int64
    x: Tensor  # (T, D) the block's input as W_Q reads it
    q: Tensor  # (H, T, Dh) after rotary
    k: Tensor  # (Hkv, S, Dh) after rotary
    v: Tensor  # (Hkv, S, Dh)
    q_unrotated: Tensor | None  # (H, T, Dh), rotary models only
    k_unrotated: Tensor | None  # (Hkv, S, Dh), rotary models only
    z: Tensor  # (H, T, Dh) the heads' weighted sums, before the head mask
    gate: Tensor  # (H,) the block's head mask (1 = on)
    allowed: Tensor  # (T, S) bool, the mask the block applied (all True when it had none)
    bias: Tensor | None  # (H, T, S) the score bias the block added (T5's relative positions), else None
    key_real: Tensor | None  # (S,) bool, False = a padding key (padding mask on), else None
    causal: bool  # the look-ahead mask applied (decoder self-attention)
    custom: Tensor | None  # (T|1, S) bool, the given attn_mask (True = may attend), else None
    window: int | None  # the sliding window (decoder self-attention of Mistral-style models), else None
    out_weight: Tensor  # (D, H*Dh) the block's W_O: head h owns columns h*Dh:(h+1)*Dh

    @property
    def n_queries(self) -> int:
        return self.q.shape[1]

    @property
    def n_keys(self) -> int:
        return self.k.shape[1]

    def kv_head(self, head: int) -> int:
        return head // (self.n_heads // self.n_kv_heads)

    def check_head(self, head: Any) -> int:
        return _index(head, self.n_heads, "head", f"the {self.n_heads} heads of a {self.kind} layer")

    def check_query(self, query: Any) -> int:
        T = self.n_queries
        index = _integer(query)
        if index is None or not -T <= index < T:
            raise ValueError(f"query position {query!r} is outside the {T} query tokens: use 0..{T - 1} "
                             f"(or -{T}..-1 from the end)")
        return index % T

    def _rows(self, head: int, rows: Tensor) -> tuple[Tensor, Tensor, Tensor | None]:
        """Scores before the mask (r, S), the mask (r, S) and the bias (r, S) | None of `rows` of one head, and
        the weights, computed as the model does (attention._attend_block): (q * scale) @ k.T, + bias, blocked keys
        at the dtype's lowest value, softmax, rows without any key all 0."""
        q = self.q[head, rows]  # (r, Dh)
        k = self.k[self.kv_head(head)]  # (S, Dh)
        scores = (q * self.scale) @ k.T  # (r, S)
        bias = None if self.bias is None else self.bias[head, rows]  # (r, S)
        if bias is not None:
            scores = scores + bias
        allowed = self.allowed[rows]  # (r, S)
        weights = torch.softmax(scores.masked_fill(~allowed, torch.finfo(scores.dtype).min), dim=-1)
        weights = weights.masked_fill(~allowed.any(dim=-1, keepdim=True), 0.0)
        return scores, weights, bias

    def weights(self, head: int) -> Tensor:
        """(T, S) every query's weights of one head, as the model returns them."""
        head = self.check_head(head)
        return self._rows(head, torch.arange(self.n_queries))[1]

    def blocked_by(self, query: int) -> tuple[str, ...]:
        """(S,) why each key is blocked for `query`: "" if allowed, else its reasons joined by ", "."""
        S = self.n_keys
        keys = torch.arange(S)
        parts = {
            "padding": None if self.key_real is None else ~self.key_real,
            "causal": keys > query if self.causal else None,
            "custom": None if self.custom is None else ~self.custom[query if self.custom.shape[0] > 1 else 0],
            "window": query - keys >= self.window if self.window is not None else None,
        }
        named = [(name, part.tolist()) for name, part in parts.items() if part is not None]
        allowed = self.allowed[query].tolist()
        out = []
        for j in range(S):
            why = ", ".join(name for name, part in named if part[j])
            out.append("" if allowed[j] else why or "mask")  # "mask": blocked for a reason not listed here
        return tuple(out)

    def head(self, head: Any, query: Any) -> HeadComputation:
        """Head `head` at query position `query` (negative counts from the end)."""
        h, i = self.check_head(head), self.check_query(query)
        g = self.kv_head(h)
        Dh = self.head_dim
        scores, weights, bias = self._rows(h, torch.tensor([i]))
        q, k, v = self.q[h, i], self.k[g], self.v[g]  # (Dh,), (S, Dh), (S, Dh)
        W_o = self.out_weight[:, h * Dh:(h + 1) * Dh]  # (D, Dh): head h's columns of W_O
        gate = float(self.gate[h])
        z = self.z[h, i]  # (Dh,)
        written = (z @ W_o.T) * gate  # (D,)
        allowed = self.allowed[i]
        masked = scores[0].masked_fill(~allowed, float("-inf"))
        return HeadComputation(
            kind=self.kind, layer=self.layer, head=h, query=i, kv_head=g, n_heads=self.n_heads,
            n_kv_heads=self.n_kv_heads, scale=self.scale, rotary_dim=self.rotary_dim, pre_norm=self.pre_norm,
            query_id=int(self.query_ids[i]), key_ids=self.key_ids.numpy().copy(), x=_np(self.x[i]), q=_np(q),
            q_unrotated=None if self.q_unrotated is None else _np(self.q_unrotated[h, i]), keys=_np(k),
            keys_unrotated=None if self.k_unrotated is None else _np(self.k_unrotated[g]), products=_np(q * k),
            dots=_np(k @ q), position=None if bias is None else _np(bias[0]), scores=_np(scores[0]),
            allowed=allowed.numpy().copy(), blocked_by=self.blocked_by(i), masked_scores=_np(masked),
            weights=_np(weights[0]), values=_np(v), value_norms=_np((v @ W_o.T).norm(dim=-1)),
            weighted_sum=_np(z), head_on=gate != 0.0, gate=gate, written=_np(written),
            written_norm=float(written.double().norm()))


def _np(t: Tensor) -> np.ndarray:
    """A float32 numpy copy (its own memory: results outlive the capture)."""
    return t.detach().float().numpy().copy()


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _index(value: Any, count: int, name: str, what: str) -> int:
    index = _integer(value)
    if index is None or not 0 <= index < count:
        raise ValueError(f"{name} {value!r} is outside {what}: use 0..{count - 1}")
    return index


def _cpu(t: Tensor) -> Tensor:
    """On the CPU with storage of its own (a view of a larger tensor would pickle, and keep alive, all of it)."""
    t = t.detach().to("cpu")
    return t.clone() if t.untyped_storage().nbytes() > t.numel() * t.element_size() or not t.is_contiguous() else t


def _row_mask(mask: Tensor | None, name: str) -> Tensor | None:
    """A key mask of one sequence, (T,) or (1, T) -> (1, T) boolean."""
    if mask is None:
        return None
    mask = torch.as_tensor(mask)
    if mask.dim() == 1:
        mask = mask[None]
    if mask.dim() != 2 or mask.shape[0] != 1 or mask.dtype != torch.bool:
        raise ValueError(f"{name} must be a boolean mask of one sequence, (T,) or (1, T); got {tuple(mask.shape)} "
                         f"{mask.dtype}")
    return mask


def _block(model: Transformer, kind: str, layer: int):
    if kind == "encoder":
        return model.encoder.layers[layer].self_attn
    block = model.decoder.layers[layer]
    return block.cross_attn if kind == "cross" else block.self_attn


def check_block(model: Transformer, kind: Any, layer: Any) -> tuple[str, int]:
    """(kind, layer) of an attention block this model has, or a ValueError naming the valid ones."""
    kinds = model.config.attention_kinds()
    if kind not in kinds:
        raise ValueError(f"kind {kind!r} is not an attention of this model: it has {', '.join(kinds)}")
    n_layers = kinds[kind][0]
    return kind, _index(layer, n_layers, "layer", f"the {n_layers} {kind} layers")


BLOCK_SITES = ("x", "q", "k", "v", "mask", "bias")  # what capture_block records of the chosen block (with "z")


def block_sites(kind: str, layer: int) -> set[str]:
    """The Record sites a BlockCapture is made of (capture_from_record): one block's x, q, k, v, mask, bias and z."""
    return {f"{kind}.{layer}.{site}" for site in (*BLOCK_SITES, "z")}


def _checked(model: Transformer, ids: Tensor, kind: str, layer: int, tgt: Tensor | None, key_mask: Tensor | None,
             tgt_key_mask: Tensor | None, batch: bool = False):
    """Validated (kind, layer, ids, tgt, key_mask, tgt_key_mask) on the model's device."""
    if model.training:
        raise ValueError("a head's computation needs the model in eval mode (model.eval()): dropout would change "
                         "the weights at random")
    kind, layer = check_block(model, kind, layer)
    arch = model.config.arch
    if arch == "encoder-decoder" and kind != "encoder" and tgt is None:
        raise ValueError(f"an encoder-decoder's {kind!r} attention needs the decoder input tgt")
    if arch != "encoder-decoder" and tgt is not None:
        raise ValueError("only an encoder-decoder takes tgt; pass the one sequence as ids")
    device = model.device
    rows = (lambda t, name: torch.as_tensor(t)) if batch else as_row
    masks = (lambda m, name: None if m is None else torch.as_tensor(m)) if batch else _row_mask
    src = rows(ids, "ids").to(device)
    seq = None if tgt is None else rows(tgt, "tgt").to(device)
    key_mask, tgt_key_mask = masks(key_mask, "key_mask"), masks(tgt_key_mask, "tgt_key_mask")
    return (kind, layer, src, seq, None if key_mask is None else key_mask.to(device),
            None if tgt_key_mask is None else tgt_key_mask.to(device))


@torch.no_grad()
def capture_block(model: Transformer, ids: Tensor, kind: str, layer: int, *, tgt: Tensor | None = None,
                  padding: bool = True, causal: bool = True, attn_mask: Tensor | None = None,
                  key_mask: Tensor | None = None, tgt_key_mask: Tensor | None = None,
                  token_type_ids: Tensor | None = None, head_mask: Mapping[str, Any] | None = None) -> BlockCapture:
    """Run the model on one sequence up to block (kind, layer) and keep what that block read and computed.

    ids: the sequence (T,) or (1, T) (an encoder-decoder's source); tgt: an encoder-decoder's decoder input (needed for
    the "decoder" and "cross" kinds). padding, causal, attn_mask (custom, True = may attend), key_mask / tgt_key_mask
    (True = real token), token_type_ids and head_mask ({kind: (L, H)}, 1 = on) as the model's forward takes them."""
    kind, layer, src, seq, key_mask, tgt_key_mask = _checked(model, ids, kind, layer, tgt, key_mask, tgt_key_mask)
    masks = model.head_masks(head_mask)
    prefix = f"{kind}.{layer}"
    record = Record(only={f"{prefix}.{site}" for site in BLOCK_SITES})
    heads: dict[str, Tensor] = {}

    def stop(k: str, i: int, z: Tensor) -> Tensor:
        if (k, i) == (kind, layer):
            heads["z"] = z
            raise _Stop
        return z

    try:
        if kind == "encoder":  # what forward runs for the encoder (an encoder-decoder's too: no tgt needed)
            model.encode(src, padding=padding, attn_mask=attn_mask, head_mask=masks.get("encoder"),
                         token_type_ids=token_type_ids, need_weights=False, key_mask=key_mask, head_hook=stop,
                         record=record)
        else:
            model(src, seq, padding=padding, causal=causal, attn_mask=attn_mask, head_mask=head_mask,
                  token_type_ids=token_type_ids, need_weights=False, key_mask=key_mask, tgt_key_mask=tgt_key_mask,
                  head_hook=stop, record=record)
    except _Stop:
        pass
    if "z" not in heads:  # the hook is called on both attention paths: this means the model changed
        raise RuntimeError(f"the run never reached block {prefix}")
    return _assemble(model, kind, layer, record, heads["z"], 0, masks, src, seq, padding, causal, attn_mask,
                     key_mask, tgt_key_mask)


@torch.no_grad()
def capture_from_record(model: Transformer, record: Record, ids: Tensor, kind: str, layer: int, *, row: int = 0,
                        tgt: Tensor | None = None, padding: bool = True, causal: bool = True,
                        attn_mask: Tensor | None = None, key_mask: Tensor | None = None,
                        tgt_key_mask: Tensor | None = None,
                        head_mask: Mapping[str, Any] | None = None) -> BlockCapture:
    """A BlockCapture of row `row` from a Record of a forward pass that has already run (a page's Run): no model run.

    The forward must have been given a Record keeping `block_sites(kind, layer)` (or the site names "x", "q", "k",
    "v", "mask", "bias", "z" for every block) and these same arguments: ids (B, S) (an encoder-decoder's source), tgt
    (B, T), padding, causal, attn_mask, key_mask / tgt_key_mask (B, ...) and head_mask. The recorded z is after the head
    mask: a head switched off gets its weighted sum back as weights @ v (computed here as the model does)."""
    kind, layer, src, seq, key_mask, tgt_key_mask = _checked(model, ids, kind, layer, tgt, key_mask, tgt_key_mask,
                                                            batch=True)
    prefix = f"{kind}.{layer}"
    missing = [site for site in ("x", "q", "k", "v", "z") if f"{prefix}.{site}" not in record]
    if missing:
        raise ValueError(f"the record lacks {', '.join(f'{prefix}.{m}' for m in missing)}: run the forward with "
                         f"Record(only=block_sites({kind!r}, {layer}))")
    B = record[f"{prefix}.q"].shape[0]
    row = _index(row, B, "row", f"the {B} sequences of the record")
    masks = model.head_masks(head_mask)
    capture = _assemble(model, kind, layer, record, record[f"{prefix}.z"], row, masks, src, seq, padding, causal,
                        attn_mask, key_mask, tgt_key_mask)
    for h in (capture.gate == 0).nonzero()[:, 0].tolist():  # switched off: z is 0; what it would have written
        capture.z[h] = capture.weights(h).to(capture.v.dtype) @ capture.v[capture.kv_head(h)]
    return capture


def _assemble(model: Transformer, kind: str, layer: int, record: Record, z: Tensor, row: int,
              masks: dict[str, Tensor], src: Tensor, seq: Tensor | None, padding: bool, causal: bool,
              attn_mask: Tensor | None, key_mask: Tensor | None, tgt_key_mask: Tensor | None) -> BlockCapture:
    """Row `row` of the recorded block as a BlockCapture."""
    prefix = f"{kind}.{layer}"
    block = _block(model, kind, layer)
    x, q, k, v = (record[f"{prefix}.{site}"][row] for site in ("x", "q", "k", "v"))
    T, S = q.shape[1], k.shape[1]
    mask, bias = record.get(f"{prefix}.mask"), record.get(f"{prefix}.bias")
    allowed = (torch.ones(T, S, dtype=torch.bool) if mask is None
               else mask[row if mask.shape[0] > 1 else 0, 0].expand(T, S))
    gate = masks.get(kind)
    gate = torch.ones(block.n_heads) if gate is None else gate[..., layer, :].reshape(-1, block.n_heads)
    gate = gate if gate.dim() == 1 else gate[row if gate.shape[0] > 1 else 0]
    query_seq = src if kind == "encoder" or seq is None else seq
    key_seq = src if kind != "decoder" or seq is None else seq
    rotary = model.config.rotary_dim if kind != "cross" else 0
    q_unrotated = k_unrotated = None
    if rotary:  # before the rotation: the block's input through the head's rows of W_Q / W_K
        H, Hkv, Dh = block.n_heads, block.n_kv_heads, block.head_dim
        weight, b = block.in_proj.weight, block.in_proj.bias
        q_rows, k_rows = slice(0, H * Dh), slice(H * Dh, (H + Hkv) * Dh)
        q_unrotated = F.linear(x, weight[q_rows], None if b is None else b[q_rows]).view(T, H, Dh).transpose(0, 1)
        k_unrotated = F.linear(x, weight[k_rows], None if b is None else b[k_rows]).view(S, Hkv, Dh).transpose(0, 1)
    real = _key_real(model, kind, src, seq, padding, key_mask, tgt_key_mask)
    return BlockCapture(
        kind=kind, layer=layer, n_heads=block.n_heads, n_kv_heads=block.n_kv_heads, head_dim=block.head_dim,
        scale=float(block.scale), rotary_dim=rotary, pre_norm=bool(model.config.norm_first),
        query_ids=_cpu(query_seq[row]), key_ids=_cpu(key_seq[row]), x=_cpu(x), q=_cpu(q), k=_cpu(k), v=_cpu(v),
        q_unrotated=None if q_unrotated is None else _cpu(q_unrotated),
        k_unrotated=None if k_unrotated is None else _cpu(k_unrotated), z=_cpu(z[row]).clone(),
        gate=_cpu(gate.float()), allowed=_cpu(allowed), bias=None if bias is None else _cpu(bias[0]),
        key_real=None if real is None else _cpu(real[row]), causal=kind == "decoder" and causal,
        custom=(_custom(attn_mask, row) if kind == "encoder" or (kind == "decoder" and model.config.arch == "decoder")
                else None),
        window=model.decoder.sliding_window if kind == "decoder" else None, out_weight=_cpu(block.out_proj.weight))


def _key_real(model: Transformer, kind: str, src: Tensor, seq: Tensor | None, padding: bool,
              key_mask: Tensor | None, tgt_key_mask: Tensor | None) -> Tensor | None:
    """(B, S) the keys' padding mask as the forward builds it (True = real), or None when nothing is padding."""
    if kind == "decoder" and seq is not None:  # an encoder-decoder's decoder input
        return model.key_mask(seq, padding, model.target_key_mask(seq, padding, tgt_key_mask))
    return model.key_mask(src, padding, key_mask)


def _custom(attn_mask: Tensor | None, row: int) -> Tensor | None:
    """(T|1, S) the given attn_mask of row `row` (a mask shared by the batch: its only row)."""
    mask = normalize_mask(attn_mask)
    return None if mask is None else _cpu(mask[row if mask.shape[0] > 1 else 0, 0])


def head_computation(model: Transformer, ids: Tensor, kind: str, layer: int, head: int, query: int, *,
                     tgt: Tensor | None = None, padding: bool = True, causal: bool = True,
                     attn_mask: Tensor | None = None, key_mask: Tensor | None = None,
                     tgt_key_mask: Tensor | None = None, token_type_ids: Tensor | None = None,
                     head_mask: Mapping[str, Any] | None = None) -> HeadComputation:
    """Head `head` of block (kind, layer) at query position `query` (negative: from the end), every number from one
    run of the model (see the module docstring; arguments as `capture_block`)."""
    capture = capture_block(model, ids, kind, layer, tgt=tgt, padding=padding, causal=causal, attn_mask=attn_mask,
                            key_mask=key_mask, tgt_key_mask=tgt_key_mask, token_type_ids=token_type_ids,
                            head_mask=head_mask)
    return capture.head(head, query)


def toggle_changes(model: Transformer, padding: bool, causal: bool, attn_mask: Tensor | None,
                   head_mask: Mapping[str, Any] | None) -> tuple[str, ...]:
    """What a run with these toggles changes from the baseline (masks at their defaults, every head on)."""
    changes = []
    if not padding:
        changes.append("padding mask off")
    if not causal and model.config.arch != "encoder":
        changes.append("causal mask off")
    if attn_mask is not None:
        changes.append("custom mask")
    for kind, mask in model.head_masks(head_mask).items():
        for layer, head in (mask.reshape(-1, *mask.shape[-2:]).amin(dim=0) == 0).nonzero().tolist():
            changes.append(f"{kind} L{layer} H{head} off")
    return tuple(changes)


def head_computation_pair(model: Transformer, ids: Tensor, kind: str, layer: int, head: int, query: int, *,
                          tgt: Tensor | None = None, padding: bool = True, causal: bool = True,
                          attn_mask: Tensor | None = None, key_mask: Tensor | None = None,
                          tgt_key_mask: Tensor | None = None, token_type_ids: Tensor | None = None,
                          head_mask: Mapping[str, Any] | None = None) -> HeadComputationPair:
    """The head's computation without toggles (padding and causal masks on, no custom mask, every head on) and with
    the toggles given, each from its own forward pass; `toggled` is None when the toggles change nothing."""
    common = dict(tgt=tgt, key_mask=key_mask, tgt_key_mask=tgt_key_mask, token_type_ids=token_type_ids)
    baseline = head_computation(model, ids, kind, layer, head, query, **common)
    changes = toggle_changes(model, padding, causal, attn_mask, head_mask)
    toggled = head_computation(model, ids, kind, layer, head, query, padding=padding, causal=causal,
                               attn_mask=attn_mask, head_mask=head_mask, **common) if changes else None
    return HeadComputationPair(baseline, toggled, changes)

"""Multi-head scaled dot-product attention that returns every head's weights, with grouped-query
attention (fewer key/value heads than query heads) and rotary positions as options.

Shapes: B batch, H (query) heads, Hkv key/value heads, T query length, S key length, D model width,
Dh head width, G = H / Hkv query heads per key/value head.

    query x (B, T, D), memory (B, S, D) or None (self-attention)
    mask        boolean, True = may attend, broadcastable to (B, H, T, S), usually (B|1, 1, T|1, S)
    head_mask   (H,) or (B, H), 1 = head on; multiplies each query head's output before W_o
    head_hook   per-call callable z (B, H, T, Dh) -> z of the same shape, applied to every query head's
                output before the head mask and W_o (read it, or replace some heads: activation patching)
    rotary      RotaryTables (cos, sin) of the positions, or None (self-attention only)
    bias        additive score bias broadcastable to (B, H, T, S) (T5's relative positions), or None
    cache       KVSlot of this call or None: self-attention appends the new keys and values (after rotary)
                to the tokens before, so S = tokens cached + T; cross-attention projects the memory once
    record      RecordSlot of this call or None: receives "v" (B, Hkv, S, Dh) and "z" (B, H, T, Dh), the head
                outputs as W_o reads them (after head_hook and the head mask); the same on both paths. Asked for
                by name, also what the block reads: "x" (its input), "q", "k" (after rotary), "mask", "bias"
    kv_inputs   per-call (keys' input, values' input) or None: what the key and value projections read instead of
                x (self-attention) or memory (cross-attention), each (B, S, D) shared by every head or (B, S, H, D)
                one row per query head; x may then be (B, T, H, D) too, one query input per head. Each query head h
                projects its own row with its rows of W_q, and its own key / value rows with those of its K/V head
                h // G (grouped-query attention ungrouped: k and v then have H heads, equal while the rows are). The
                circuits' per-receiver inputs (explorer.interpret.circuits); no cache with them
    returns     output (B, T, D), weights (B, H, T, S) or None on the fast path

Query head h reads key/value head h // G. Weights and head toggles are per query head: a key/value
head shared by G query heads is never switched off as a whole.
Two paths, one result: the hand-written softmax path returns the weights; when they are not
needed, `torch.nn.functional.scaled_dot_product_attention` computes the same output faster.
A query row whose keys are all masked gets weights 0 and output 0 on both paths.
Nothing is stored on the module during forward: one model serves many users at once.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .cache import KVSlot
from .record import RecordSlot
from .rotary import RotaryTables, apply_rotary

HeadHook = Callable[[Tensor], Tensor]  # z (B, H, T, Dh) -> z (B, H, T, Dh)
BLOCK_CELLS = 1 << 20  # score cells (B * H * rows * keys) per block of query rows: 4 MB of float32, cache-sized


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, head_dim: int, dropout: float = 0.0, *,
                 n_kv_heads: int | None = None, qkv_bias: bool = True, out_bias: bool = True,
                 scale: float | None = None):
        super().__init__()
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads or n_heads
        self.head_dim = head_dim
        self.scale = head_dim ** -0.5 if scale is None else scale
        # Packed [W_q; W_k; W_v] as in torch.nn.MultiheadAttention: query head h owns rows h*Dh:(h+1)*Dh
        # of the first H*Dh rows, key/value head j rows j*Dh:(j+1)*Dh of the next two Hkv*Dh blocks.
        self.in_proj = nn.Linear(d_model, (n_heads + 2 * self.n_kv_heads) * head_dim, bias=qkv_bias)
        self.out_proj = nn.Linear(n_heads * head_dim, d_model, bias=out_bias)  # W_o
        self.dropout = dropout

    def project(self, x: Tensor, memory: Tensor | None) -> tuple[Tensor, Tensor, Tensor]:
        """-> q (B, H, T, Dh), k and v (B, Hkv, S, Dh)."""
        B, T, _ = x.shape
        H, Hkv, Dh = self.n_heads, self.n_kv_heads, self.head_dim
        if memory is None:
            qkv = self.in_proj(x)  # (B, T, (H + 2 Hkv) Dh)
            q, k, v = qkv.split([H * Dh, Hkv * Dh, Hkv * Dh], dim=-1)
            q = q.view(B, T, H, Dh).transpose(1, 2)  # (B, H, T, Dh)
            S = T
        else:
            weight, bias = self.in_proj.weight, self.in_proj.bias
            q = self.project_query(x)
            k, v = F.linear(memory, weight[H * Dh:], None if bias is None else bias[H * Dh:]).chunk(2, dim=-1)
            S = memory.shape[1]
        k = k.view(B, S, Hkv, Dh).transpose(1, 2)  # (B, Hkv, S, Dh)
        v = v.view(B, S, Hkv, Dh).transpose(1, 2)  # (B, Hkv, S, Dh)
        return q, k, v

    def project_query(self, x: Tensor) -> Tensor:
        """-> q (B, H, T, Dh) alone (cross-attention whose memory keys are cached)."""
        B, T, _ = x.shape
        H, Dh = self.n_heads, self.head_dim
        bias = self.in_proj.bias
        q = F.linear(x, self.in_proj.weight[: H * Dh], None if bias is None else bias[: H * Dh])
        return q.view(B, T, H, Dh).transpose(1, 2)

    def project_inputs(self, xq: Tensor, xk: Tensor, xv: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Separate inputs, each (B, ., D) shared by every head or (B, ., H, D) one per query head -> q (B, H, T, Dh),
        k and v (B, Hkv or H, S, Dh): H as soon as either is given per query head (the other is repeated to match)."""
        H, Hkv, Dh = self.n_heads, self.n_kv_heads, self.head_dim
        weight, bias = self.in_proj.weight, self.in_proj.bias
        starts = (0, H * Dh, (H + Hkv) * Dh, (H + 2 * Hkv) * Dh)  # rows of W_q, W_k, W_v in the packed projection
        q, k, v = (head_projection(x, weight[a:b], None if bias is None else bias[a:b], n, H, Dh)
                   for x, a, b, n in zip((xq, xk, xv), starts, starts[1:], (H, Hkv, Hkv)))
        if k.shape[1] != v.shape[1]:  # one given per query head, the other shared: both per query head
            k, v = (t if t.shape[1] == H else t.repeat_interleave(H // Hkv, dim=1) for t in (k, v))
        return q, k, v

    def keys_and_query(self, x: Tensor, memory: Tensor | None, rotary: RotaryTables | None,
                       cache: KVSlot | None, kv_inputs: tuple[Tensor, Tensor] | None = None
                       ) -> tuple[Tensor, Tensor, Tensor]:
        """q (B, H, T, Dh), and k, v (B, Hkv, S, Dh) over every key this call may see (cached ones included)."""
        if kv_inputs is not None:
            if cache is not None:
                raise ValueError("per-receiver inputs (kv_inputs) do not decode with a cache")
            q, k, v = self.project_inputs(x, *kv_inputs)
            if rotary is not None:
                q, k = apply_rotary(q, rotary), apply_rotary(k, rotary)
            return q, k, v
        if memory is not None and cache is not None and cache.filled:
            return self.project_query(x), cache.keys, cache.values
        q, k, v = self.project(x, memory)
        if rotary is not None:
            q, k = apply_rotary(q, rotary), apply_rotary(k, rotary)
        if cache is not None:
            if memory is None:  # the new tokens' keys follow the cached ones
                k, v = cache.append(k, v)
            else:
                cache.keys, cache.values = k, v
        return q, k, v

    def forward(self, x: Tensor, memory: Tensor | None = None, *, mask: Tensor | None = None,
                head_mask: Tensor | None = None, rotary: RotaryTables | None = None,
                need_weights: bool = True, bias: Tensor | None = None,
                head_hook: HeadHook | None = None, cache: KVSlot | None = None,
                weights_dtype: torch.dtype | None = None,
                record: RecordSlot | None = None, plans: dict | None = None,
                kv_inputs: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor | None]:
        """`plans`: one run's block plans of its masks, shared by its layers (see attend_with_weights)."""
        q, k, v = self.keys_and_query(x, memory, rotary, cache, kv_inputs)
        if record is not None:  # what the block reads, before either path (x, q, k, mask, bias: when asked for)
            record["x"] = x if kv_inputs is None else None  # separate inputs: no one x to keep
            record["q"], record["k"], record["v"] = q, k, v
            record["mask"], record["bias"] = mask, bias
        dropout = self.dropout if self.training else 0.0
        if need_weights:
            heads, weights = attend_with_weights(q, k, v, mask, dropout, self.scale, bias, weights_dtype, plans)
        else:
            heads, weights = attend_fast(q, k, v, mask, dropout, self.scale, bias), None
        if head_hook is not None:
            hooked = head_hook(heads)
            if hooked.shape != heads.shape:
                raise ValueError(f"head_hook must return z shaped {tuple(heads.shape)}, got {tuple(hooked.shape)}")
            heads = hooked
        if head_mask is not None:
            heads = heads * head_gate(head_mask, heads)
        if record is not None:
            record["z"] = heads
        B, H, T, Dh = heads.shape
        merged = heads.transpose(1, 2).reshape(B, T, H * Dh)  # (B, T, H*Dh) concatenated heads
        return self.out_proj(merged), weights


def head_projection(x: Tensor, weight: Tensor, bias: Tensor | None, n: int, H: int, Dh: int) -> Tensor:
    """One projection of n heads (weight (n Dh, D)) -> (B, n, T, Dh) from x (B, T, D), or -> (B, H, T, Dh) from x
    (B, T, H, D), one input row per query head (a K/V head's weights serve each of its H / n query heads)."""
    if x.dim() == 3:
        B, T, _ = x.shape
        return F.linear(x, weight, bias).view(B, T, n, Dh).transpose(1, 2)  # (B, T, n Dh) -> (B, n, T, Dh)
    if x.dim() != 4 or x.shape[2] != H:
        raise ValueError(f"a per-head input must be (B, T, H={H}, D), got {tuple(x.shape)}")
    per_head = weight.view(n, Dh, -1).repeat_interleave(H // n, dim=0)  # (H, Dh, D)
    out = torch.einsum("bthd,hed->bhte", x, per_head)  # (B, H, T, Dh)
    if bias is not None:
        out = out + bias.view(n, 1, Dh).repeat_interleave(H // n, dim=0)  # (H, 1, Dh)
    return out


def head_gate(head_mask: Tensor, heads: Tensor) -> Tensor:
    """(H,) or (B, H) head mask -> (1|B, H, 1, 1) multiplier in the dtype of `heads`.

    Multiplying (rather than indexing) keeps the mask differentiable, which the gradient
    head-importance estimate needs; x * 1.0 == x exactly, so an all-ones mask changes nothing.
    """
    H = heads.shape[1]
    if head_mask.shape[-1] != H or head_mask.dim() not in (1, 2):
        raise ValueError(f"head mask for one layer must be (H,) or (B, H) with H={H}, got {tuple(head_mask.shape)}")
    gate = head_mask.to(device=heads.device, dtype=heads.dtype)
    return gate.view(-1, H, 1, 1) if gate.dim() == 2 else gate.view(1, H, 1, 1)


def attend_with_weights(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, dropout: float = 0.0,
                        scale: float | None = None, bias: Tensor | None = None,
                        weights_dtype: torch.dtype | None = None, plans: dict | None = None
                        ) -> tuple[Tensor, Tensor]:
    """Hand-written softmax(scale q k^T + bias) v, scale = 1/sqrt(Dh) unless given.

    q (B, H, T, Dh), k and v (B, Hkv, S, Dh) -> heads (B, H, T, Dh), weights (B, H, T, S) in `weights_dtype`
    (default: the scores' dtype; each block is cast as it is done, so a float16 result never exists in float32).
    The G query heads of one key/value group are stacked along the rows, so K and V are never copied.

    Query rows go in blocks of about BLOCK_CELLS scores, each against only the span of keys its mask allows
    anywhere in the block (a causal mask: the keys up to the block's last row): about half the products at long
    inputs, and no (B, H, T, S) float32 tensor whose fresh pages cost more than the softmax. The weights outside
    those spans are 0, as the softmax gives masked keys. `plans`: a dict one run gives all its layers, which reuse
    the first layer's plan of the same mask (`block_plan`: ~10 small ops, a fixed cost per layer that showed against
    transformers' forward at 128 tokens). A single block over every key is computed in the returned weights
    themselves (no copy).
    """
    B, H, T, Dh = q.shape
    S = k.shape[2]
    scale = Dh ** -0.5 if scale is None else scale
    weights = q.new_empty((B, H, T, S), dtype=weights_dtype or q.dtype)
    heads = q.new_empty((B, H, T, Dh))
    rows = max(1, BLOCK_CELLS // max(1, B * H * S))
    # Every block's scores go into one scratch tensor: blocks allocated one after another, between the returned
    # weights, left the allocator's heap fragmented (one 1,024-token request peaked ~150 MB higher).
    grad = q.requires_grad or k.requires_grad or (bias is not None and bias.requires_grad)
    key = (id(mask), T, S, rows)  # the mask is alive while the run that made `plans` is: its id is its own
    plan = None if plans is None else plans.get(key)
    if plan is None:
        plan = block_plan(mask, T, S, rows)
        if plans is not None:
            plans[key] = plan
    whole = len(plan) == 1 and plan[0][2:4] == (0, S) and weights.dtype == q.dtype and not grad
    scratch = weights.view(-1) if whole else None if grad else q.new_empty(B * H * min(rows, T) * S)
    for r0, r1, lo, hi, unmasked, rows_have_keys in plan:
        block_mask = None if mask is None else mask[..., r0:r1, :] if mask.shape[-2] > 1 else mask
        if hi == lo:  # every row fully masked: weights and output 0
            weights[:, :, r0:r1].zero_()
            heads[:, :, r0:r1].zero_()
            continue
        if block_mask is not None:
            block_mask = block_mask[..., lo:hi]
        block_bias = None if bias is None else bias[..., r0:r1, lo:hi] if bias.shape[-2] > 1 else bias[..., lo:hi]
        w, z = _attend_block(q[:, :, r0:r1], k[:, :, lo:hi], v[:, :, lo:hi], block_mask, unmasked, dropout, scale,
                             block_bias, scratch, rows_have_keys)
        if whole:  # the scores were computed in `weights` (B, H, T, S); w is them, or rows zeroed in a copy
            if w.data_ptr() != weights.data_ptr():
                weights.copy_(w)
            heads = z
            continue
        weights[:, :, r0:r1, :lo].zero_()
        weights[:, :, r0:r1, lo:hi] = w
        weights[:, :, r0:r1, hi:].zero_()
        heads[:, :, r0:r1] = z
    return heads, weights


def block_plan(mask: Tensor | None, T: int, S: int, rows: int) -> list[tuple[int, int, int, int, int, bool]]:
    """The blocks of `rows` query rows of a (B|1, 1, T|1, S) boolean mask: per block (r0, r1, lo, hi, unmasked,
    rows_have_keys): rows r0..r1-1 compute keys lo..hi-1 only (the span any of them may see; lo == hi: none), keys
    from lo + unmasked on are masked for some row, and whether every row may see a key. Found for all blocks at
    once with one read of the result (the checks block by block made ~8 small ops and 4 reads per block and layer:
    a fixed cost that showed at 128 tokens)."""
    starts = range(0, T, rows)
    if mask is None:
        return [(r0, min(T, r0 + rows), 0, S, S, True) for r0 in starts]
    seen = mask.reshape(-1, mask.shape[-2], S).expand(-1, T, S) if mask.shape[-2] == 1 else mask.reshape(-1, T, S)
    n = len(starts)
    pad = n * rows - T
    if pad:  # padded rows see every key: they change no block's span (a block has a real row) nor its checks
        seen = torch.cat([seen, seen.new_ones(seen.shape[0], pad, S)], dim=1)
    blocks = seen.reshape(seen.shape[0], n, rows, S)  # (B|1, n, rows, S)
    any_row = blocks.any(dim=2).any(dim=0)  # (n, S): some row of the block may see the key
    all_rows = blocks.all(dim=2).all(dim=0)  # (n, S): every row may
    keys = torch.arange(S, device=mask.device)
    has_span = any_row.any(dim=1)  # (n,)
    lo = torch.where(any_row, keys, S).amin(dim=1)  # first key seen (S if none)
    hi = torch.where(any_row, keys + 1, 0).amax(dim=1)  # one past the last
    partly = ~all_rows & (keys >= lo[:, None]) & (keys < hi[:, None])
    first_partly = torch.where(partly, keys, S).amin(dim=1)
    unmasked = torch.minimum(first_partly, hi) - lo
    have_keys = blocks.any(dim=3).all(dim=2).all(dim=0)  # (n,): every row sees some key
    plan = torch.stack([has_span.long(), lo, hi, unmasked, have_keys.long()], dim=1).tolist()
    return [(r0, min(T, r0 + rows), lo_, hi_, um, bool(hk)) if span else (r0, min(T, r0 + rows), 0, 0, 0, False)
            for r0, (span, lo_, hi_, um, hk) in zip(starts, plan)]


def _attend_block(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, unmasked: int, dropout: float, scale: float,
                  bias: Tensor | None, scratch: Tensor | None = None,
                  rows_have_keys: bool = False) -> tuple[Tensor, Tensor]:
    """One block of query rows: q (B, H, R, Dh), k and v (B, Hkv, K, Dh) -> weights (B, H, R, K), heads (B, H, R, Dh).

    mask (B|1, 1, R|1, K) or None; every row may see keys 0..unmasked-1, so only the keys after are masked.
    scratch: a flat tensor of at least B*H*R*K that holds the scores (and the weights returned); None: a new one.
    rows_have_keys: every row may see some key (block_plan), so no row needs zeroing."""
    B, H, R, Dh = q.shape
    Hkv, K = k.shape[1], k.shape[2]
    grouped = (q * scale).reshape(B, Hkv, (H // Hkv) * R, Dh)  # (B, Hkv, G*R, Dh): query head h = j*G + g
    out = None if scratch is None else scratch[:B * H * R * K].view(B, Hkv, (H // Hkv) * R, K)
    scores = torch.matmul(grouped, k.transpose(-2, -1), out=out).view(B, H, R, K)  # (B, H, R, K)
    if bias is not None:
        scores.add_(bias)  # in place, as the mask below: scores is this call's own tensor
    if mask is not None and unmasked < K:
        scores[..., unmasked:].masked_fill_(~mask[..., unmasked:], torch.finfo(scores.dtype).min)
    # Masked keys get exp(min - max) = exactly 0; in place unless a gradient flows through.
    weights = scores.softmax(dim=-1) if scores.requires_grad else torch.softmax(scores, dim=-1, out=scores)
    if mask is not None and not rows_have_keys:  # a fully masked row (softmax of equal values) -> all 0
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)  # (B|1, 1, R|1, 1)
    used = F.dropout(weights, dropout) if dropout else weights
    heads = used.reshape(B, Hkv, (H // Hkv) * R, K) @ v  # (B, Hkv, G*R, Dh)
    return weights, heads.view(B, H, R, Dh)


def attend_fast(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, dropout: float = 0.0,
                scale: float | None = None, bias: Tensor | None = None) -> Tensor:
    """Same output as `attend_with_weights` via torch's fused kernel. -> (B, H, T, Dh)."""
    gqa = k.shape[1] != q.shape[1]
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout, scale=scale, enable_gqa=gqa)
    # Rows with no allowed key: let the kernel see all keys (no NaN in forward or backward on any
    # backend), then zero their output, matching the weights path.
    has_key = mask.any(dim=-1, keepdim=True)  # (B|1, 1, T|1, 1)
    allowed = mask | ~has_key
    if bias is not None:  # a float mask is added to the scores: the bias where allowed, the lowest value elsewhere
        allowed = bias.masked_fill(~allowed, torch.finfo(bias.dtype).min)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=dropout, scale=scale, enable_gqa=gqa)
    return out.masked_fill(~has_key, 0.0)

"""Value-weighted attention (Kobayashi et al. 2020, "Attention is not only a weight"): a_ij * || v_j W_o^h ||,
the attention weight times the length of the vector key j adds to the residual stream through head h (its
value vector times that head's slice of the output projection; W_o's bias is added once per block, by no
key, so it is left out). Under grouped-query attention query head h reads the values of K/V head
h // (H / Hkv). Like the returned weights, a head switched off keeps its value-weighted attention (what it
would have added), so a view can grey it out the same way.

Cheap: per layer the norms are (B, H, S), from each head's Gram matrix W_o^h.T W_o^h (Dh, Dh):
||v W_o^h.T||^2 = v (W_o^h.T W_o^h) v. Nothing of shape (B, H, S, D) or (B, H, T, S, D) is built; the result
has the shapes of the returned attention, so it goes on the same heatmaps.

Shapes: B batch, L layers, H query heads, Hkv key/value heads, G = H / Hkv, T query length, S key length,
D model width, Dh head width.

    value_norms(model, record, kind)          -> L x (B, H, S)     from a Record of a forward pass
    value_weighted(attentions, norms)         -> L x (B, H, T, S)  attentions L x (B, H, T, S)
    value_weighted_attention(model, ids, tgt, kind=...) -> L x (B, H, T, S)   one forward pass
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor

from ..model import Record, Transformer


def _attention_blocks(model: Transformer, kind: str) -> list:
    """The attention modules of `kind` ("encoder", "decoder" or "cross"), one per layer."""
    kinds = model.config.attention_kinds()
    if kind not in kinds:
        raise ValueError(f"this model has no {kind!r} attention; it has {', '.join(kinds)}")
    if kind == "encoder":
        return [layer.self_attn for layer in model.encoder.layers]
    return [layer.cross_attn if kind == "cross" else layer.self_attn for layer in model.decoder.layers]


def head_value_norms(attention, v: Tensor) -> Tensor:
    """v (B, Hkv, S, Dh) of one block -> (B, H, S): || v_j W_o^h.T || for each query head h and key j."""
    H, Hkv, Dh = attention.n_heads, attention.n_kv_heads, attention.head_dim
    weight = attention.out_proj.weight.to(v.dtype)  # (D, H*Dh)
    per_head = weight.view(-1, H, Dh)  # (D, H*Dh) -> (D, H, Dh)
    gram = torch.einsum("dhi,dhj->hij", per_head, per_head)  # (H, Dh, Dh)
    B, _, S, _ = v.shape
    grouped = gram.view(Hkv, H // Hkv, Dh, Dh)  # (H, Dh, Dh) -> (Hkv, G, Dh, Dh): query head h = j*G + g
    squared = torch.einsum("bjsi,jgik,bjsk->bjgs", v, grouped, v)  # (B, Hkv, G, S)
    return squared.clamp(min=0).sqrt().reshape(B, H, S)  # (B, Hkv, G, S) -> (B, H, S)


@torch.no_grad()
def value_norms(model: Transformer, record: Record, kind: str) -> tuple[Tensor, ...]:
    """Per layer (B, H, S): the norm of what each key adds through each head, from a forward pass's Record."""
    return tuple(head_value_norms(block, record[f"{kind}.{i}.v"])
                 for i, block in enumerate(_attention_blocks(model, kind)))


def value_weighted(attentions: Sequence[Tensor], norms: Sequence[Tensor]) -> tuple[Tensor, ...]:
    """Per layer weights (B, H, T, S) times norms (B, H, S) -> (B, H, T, S), in the weights' dtype."""
    if len(attentions) != len(norms):
        raise ValueError(f"{len(attentions)} layers of attention but {len(norms)} of value norms")
    out = []
    for weights, n in zip(attentions, norms):
        if weights.shape[:2] != n.shape[:2] or weights.shape[-1] != n.shape[-1]:
            raise ValueError(f"attention {tuple(weights.shape)} and value norms {tuple(n.shape)} do not match: "
                             "want (B, H, T, S) and (B, H, S)")
        out.append(weights * n[:, :, None, :].to(weights.dtype))  # (B, H, S) -> (B, H, 1, S)
    return tuple(out)


@torch.no_grad()
def value_weighted_attention(model: Transformer, ids: Tensor, tgt: Tensor | None = None, *, kind: str | None = None,
                             head_mask: Mapping[str, Any] | None = None, **forward: Any) -> tuple[Tensor, ...]:
    """One forward pass with weights and a Record -> per layer (B, H, T, S) value-weighted attention of `kind`
    (default: "decoder" when the model has a decoder, else "encoder"). `forward` goes to the model (padding,
    causal, attn_mask, key_mask, tgt_key_mask, token_type_ids, weights_dtype)."""
    if kind is None:
        kind = "encoder" if model.config.arch == "encoder" else "decoder"
    _attention_blocks(model, kind)  # an unknown kind fails before the forward pass
    record = Record()
    out = model(ids, tgt, head_mask=head_mask, need_weights=True, record=record, **forward)
    return value_weighted(getattr(out.attentions, kind), value_norms(model, record, kind))

"""Value-weighted attention (Kobayashi et al. 2020): a_ij * || v_j W_o^h || equals a hand computation that loops
over query heads with explicit weight slices (grouped-query attention: the values of K/V head h // G), for
decoder self-attention, encoder self-attention with padding and cross-attention; shapes are the attention's."""

from __future__ import annotations

import pytest
import torch

from explorer.interpret import value_norms, value_weighted, value_weighted_attention
from explorer.model import Record, Transformer, TransformerConfig


def model_of(**options) -> Transformer:
    config = TransformerConfig(**{**dict(vocab_size=40, d_model=48, n_heads=6, n_layers=2, d_ff=64, dropout=0.0,
                                         max_len=24), **options})
    model = Transformer(config).eval()
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.15)
    return model


def by_hand(model: Transformer, kind: str, ids, tgt=None, head_mask=None) -> list[torch.Tensor]:
    """Capture each block's values (a forward hook on its input projection), then loop over query heads."""
    c = model.config
    H, Hkv, Dh = c.n_heads, c.resolved_kv_heads, c.resolved_head_dim
    stack = model.encoder if kind == "encoder" else model.decoder
    blocks = [layer.cross_attn if kind == "cross" else layer.self_attn for layer in stack.layers]
    values, handles = {}, []
    if kind != "cross":  # self-attention: the last Hkv*Dh outputs of in_proj(x) are the values
        for i, block in enumerate(blocks):
            handles.append(block.in_proj.register_forward_hook(
                lambda module, args, output, i=i: values.__setitem__(i, output[..., -Hkv * Dh:])))
    try:
        with torch.no_grad():
            out = model(ids, tgt, head_mask=head_mask)
    finally:
        for h in handles:
            h.remove()
    if kind == "cross":  # the memory's values, through the last Hkv*Dh rows of in_proj
        memory = out.encoder_last_hidden_state
        for i, block in enumerate(blocks):
            values[i] = memory @ block.in_proj.weight[-Hkv * Dh:].T + block.in_proj.bias[-Hkv * Dh:]
    attentions = getattr(out.attentions, kind)
    result = []
    for i, block in enumerate(blocks):
        W = block.out_proj.weight  # (D, H*Dh)
        w = attentions[i]
        got = torch.empty_like(w)
        for h in range(H):
            g = h // (H // Hkv)
            v = values[i][..., g * Dh:(g + 1) * Dh]  # (B, S, Dh)
            vectors = v @ W[:, h * Dh:(h + 1) * Dh].T  # (B, S, D): what each key adds through head h
            got[:, h] = w[:, h] * torch.linalg.vector_norm(vectors, dim=-1)[:, None, :]
        result.append(got)
    return result


@pytest.mark.parametrize("options", [dict(arch="decoder", n_kv_heads=2, positional="rotary", pad_id=None),
                                     dict(arch="decoder", norm_first=True, n_kv_heads=3, qkv_bias=True)])
def test_decoder_by_hand(options):
    model = model_of(**options)
    ids = torch.randint(1, 40, (2, 9), generator=torch.Generator().manual_seed(1))
    got = value_weighted_attention(model, ids)
    want = by_hand(model, "decoder", ids)
    assert len(got) == 2
    for a, b in zip(got, want):
        assert a.shape == (2, 6, 9, 9)
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-6)


def test_encoder_with_padding_and_cross_attention_by_hand():
    model = model_of(arch="encoder-decoder", n_kv_heads=2)
    src = torch.randint(1, 40, (2, 7), generator=torch.Generator().manual_seed(2))
    src[1, 4:] = 0  # padding keys: weight 0, so 0 here too
    tgt = torch.randint(1, 40, (2, 5), generator=torch.Generator().manual_seed(3))
    for kind, shape in (("encoder", (2, 6, 7, 7)), ("decoder", (2, 6, 5, 5)), ("cross", (2, 6, 5, 7))):
        got = value_weighted_attention(model, src, tgt, kind=kind)
        for a, b in zip(got, by_hand(model, kind, src, tgt)):
            assert a.shape == shape
            assert torch.allclose(a, b, rtol=1e-4, atol=1e-6), kind
            if kind != "decoder":
                assert torch.all(a[1, ..., 4:] == 0)


def test_from_a_recorded_run_and_float16_weights():
    """The app's way: one forward with weights (float16) and a record, then the norms; a head switched off keeps
    its value-weighted attention, as it keeps its weights."""
    model = model_of(arch="decoder", n_kv_heads=2, pad_id=None)
    ids = torch.randint(1, 40, (1, 8), generator=torch.Generator().manual_seed(4))
    record = Record()
    off = {"decoder": torch.tensor([[1, 0, 1, 1, 1, 1], [1] * 6], dtype=torch.float32)}
    with torch.no_grad():
        out = model(ids, record=record, weights_dtype=torch.float16, head_mask=off)
    norms = value_norms(model, record, "decoder")
    assert norms[0].shape == (1, 6, 8)
    got = value_weighted(out.attentions.decoder, norms)
    assert got[0].dtype == torch.float16
    want = by_hand(model, "decoder", ids, head_mask=off)
    for a, b in zip(got, want):
        assert torch.allclose(a.float(), b, rtol=2e-3, atol=1e-3)
    assert want[0][:, 1].abs().max() > 0  # the head switched off (layer 0, head 1) keeps its own


def test_errors():
    model = model_of(arch="decoder")
    with pytest.raises(ValueError, match="no 'cross' attention; it has decoder"):
        value_weighted_attention(model, torch.tensor([[1, 2, 3]]), kind="cross")
    with pytest.raises(ValueError, match="do not match"):
        value_weighted([torch.ones(1, 6, 3, 3)], [torch.ones(1, 6, 4)])
    with pytest.raises(ValueError, match="1 layers of attention but 2"):
        value_weighted([torch.ones(1, 6, 3, 3)], [torch.ones(1, 6, 3)] * 2)

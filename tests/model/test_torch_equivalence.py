"""Stacks imported from torch.nn give torch's outputs (eval, float32, max abs diff <= 1e-5)."""

import itertools

import pytest
import torch

from explorer.model import Decoder, Encoder, EncoderDecoderStacks, causal_mask

TOL = 1e-5
CONFIGS = [  # d_model, heads, d_ff, layers
    (16, 2, 32, 1), (32, 4, 64, 2), (24, 3, 40, 3),
]


def right_padded_key_mask(batch, length, lengths):
    return torch.arange(length)[None, :] < torch.tensor(lengths)[:, None]  # True = real token


@pytest.mark.parametrize("norm_first, activation", list(itertools.product([False, True], ["relu", "gelu"])))
@pytest.mark.parametrize("d_model, heads, d_ff, layers", CONFIGS)
def test_encoder_matches_torch(norm_first, activation, d_model, heads, d_ff, layers):
    layer = torch.nn.TransformerEncoderLayer(d_model, heads, d_ff, dropout=0.1, activation=activation,
                                             batch_first=True, norm_first=norm_first)
    norm = torch.nn.LayerNorm(d_model) if norm_first else None
    reference = torch.nn.TransformerEncoder(layer, layers, norm=norm, enable_nested_tensor=False).eval()
    ours = Encoder.from_torch(reference).eval()
    assert not ours.training
    x = torch.randn(3, 7, d_model)
    key_mask = right_padded_key_mask(3, 7, [7, 4, 2])
    with torch.no_grad():
        expected = reference(x, src_key_padding_mask=~key_mask)
        got, attentions = ours(x, key_mask=key_mask)
        fast, _ = ours(x, key_mask=key_mask, need_weights=False)
        assert (got - expected).abs().max() <= TOL
        assert (fast - expected).abs().max() <= TOL
        # with a causal mask too
        expected = reference(x, mask=~causal_mask(7), src_key_padding_mask=~key_mask)
        got, _ = ours(x, key_mask=key_mask, attn_mask=causal_mask(7))
        assert (got - expected).abs().max() <= TOL
    assert len(attentions.self_attn) == layers and attentions.cross == ()
    assert attentions.self_attn[0].shape == (3, heads, 7, 7)


def test_encoder_attention_weights_match_torch_per_head_weights():
    reference = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(16, 4, 32, batch_first=True), 2, enable_nested_tensor=False).eval()
    ours = Encoder.from_torch(reference).eval()
    x = torch.randn(2, 5, 16)
    key_mask = right_padded_key_mask(2, 5, [5, 3])
    with torch.no_grad():
        _, attentions = ours(x, key_mask=key_mask)
        h = x
        for i, layer in enumerate(reference.layers):
            _, w = layer.self_attn(h, h, h, key_padding_mask=~key_mask, need_weights=True, average_attn_weights=False)
            assert (attentions.self_attn[i] - w).abs().max() <= TOL
            h = layer(h, src_key_padding_mask=~key_mask)


@pytest.mark.parametrize("norm_first, activation", list(itertools.product([False, True], ["relu", "gelu"])))
@pytest.mark.parametrize("d_model, heads, d_ff, layers", CONFIGS)
def test_decoder_matches_torch(norm_first, activation, d_model, heads, d_ff, layers):
    layer = torch.nn.TransformerDecoderLayer(d_model, heads, d_ff, dropout=0.1, activation=activation,
                                             batch_first=True, norm_first=norm_first)
    reference = torch.nn.TransformerDecoder(layer, layers, norm=torch.nn.LayerNorm(d_model)).eval()
    ours = Decoder.from_torch(reference).eval()
    tgt, memory = torch.randn(3, 6, d_model), torch.randn(3, 8, d_model)
    tgt_mask, mem_mask = right_padded_key_mask(3, 6, [6, 5, 3]), right_padded_key_mask(3, 8, [8, 2, 5])
    with torch.no_grad():
        expected = reference(tgt, memory, tgt_mask=~causal_mask(6), tgt_key_padding_mask=~tgt_mask,
                             memory_key_padding_mask=~mem_mask)
        got, attentions = ours(tgt, memory, key_mask=tgt_mask, memory_key_mask=mem_mask, attn_mask=causal_mask(6))
        fast, _ = ours(tgt, memory, key_mask=tgt_mask, memory_key_mask=mem_mask, attn_mask=causal_mask(6),
                       need_weights=False)
    assert (got - expected).abs().max() <= TOL
    assert (fast - expected).abs().max() <= TOL
    assert len(attentions.self_attn) == len(attentions.cross) == layers
    assert attentions.cross[0].shape == (3, heads, 6, 8)
    assert (attentions.self_attn[0].triu(1) == 0).all()
    assert (attentions.cross[0][1, :, :, 2:] == 0).all()  # source padding masked in cross-attention


@pytest.mark.parametrize("norm_first", [False, True])
def test_whole_torch_transformer(norm_first):
    reference = torch.nn.Transformer(d_model=16, nhead=2, num_encoder_layers=2, num_decoder_layers=1,
                                     dim_feedforward=32, batch_first=True, norm_first=norm_first).eval()
    ours = EncoderDecoderStacks.from_torch(reference).eval()
    src, tgt = torch.randn(2, 7, 16), torch.randn(2, 5, 16)
    src_mask = right_padded_key_mask(2, 7, [7, 4])
    with torch.no_grad():
        expected = reference(src, tgt, tgt_mask=~causal_mask(5), src_key_padding_mask=~src_mask,
                             memory_key_padding_mask=~src_mask)
        got, attentions = ours(src, tgt, src_key_mask=src_mask, tgt_attn_mask=causal_mask(5))
    assert (got - expected).abs().max() <= TOL
    assert [len(attentions.encoder), len(attentions.decoder), len(attentions.cross)] == [2, 1, 1]


def test_unsupported_torch_layers_are_refused_with_a_reason():
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, activation=torch.tanh, batch_first=True)
    with pytest.raises(ValueError, match="relu and gelu"):
        Encoder.from_torch(torch.nn.TransformerEncoder(layer, 1, enable_nested_tensor=False))


def test_imported_stack_keeps_torchs_dropout_placement():
    """torch drops attention weights, the feed-forward hidden layer and sublayer outputs; an import keeps
    all three rates (they matter when the imported model is trained further)."""
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.2, batch_first=True)
    layer.self_attn.dropout = 0.3
    layer.dropout.p = 0.4  # inside the feed-forward block
    ours = Encoder.from_torch(torch.nn.TransformerEncoder(layer, 1, enable_nested_tensor=False))
    c = ours.config
    assert (c.dropout, c.resolved_attention_dropout, c.resolved_ffn_dropout) == (0.2, 0.3, 0.4)
    assert ours.layers[0].self_attn.dropout == 0.3 and ours.layers[0].feed_forward.dropout.p == 0.4

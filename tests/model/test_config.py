import pytest
import torch

from explorer.model import PRESETS, Transformer, TransformerConfig


@pytest.mark.parametrize("changes, field", [
    (dict(d_model=100, n_heads=8), "d_model"),
    (dict(arch="rnn"), "arch"),
    (dict(vocab_size=0), "vocab_size"),
    (dict(n_heads=-2), "n_heads"),
    (dict(dropout=1.5), "dropout"),
    (dict(embedding_dropout=-0.1), "embedding_dropout"),
    (dict(attention_dropout=1.0), "attention_dropout"),
    (dict(ffn_dropout=True), "ffn_dropout"),
    (dict(positional="alibi"), "positional"),
    (dict(activation="tanh"), "activation"),
    (dict(pos_base=0.5), "pos_base"),
    (dict(num_classes=3), "num_classes"),  # classifier on an encoder-decoder
    (dict(pad_id=5000), "pad_id"),
    (dict(n_layers=2.5), "n_layers"),
    (dict(norm_first="yes"), "norm_first"),
])
def test_invalid_values_raise_value_error_naming_the_field(changes, field):
    with pytest.raises(ValueError, match=rf"TransformerConfig\.{field}="):
        TransformerConfig(**changes)


def test_head_dim_makes_indivisible_widths_valid():
    config = TransformerConfig(d_model=100, n_heads=8, head_dim=16)
    assert config.resolved_head_dim == 16


def test_defaults_derive_from_other_fields():
    config = TransformerConfig(vocab_size=50, n_layers=3, norm_first=True)
    assert config.resolved_tgt_vocab_size == 50
    assert (config.encoder_layers, config.decoder_layers) == (3, 3)
    assert config.resolved_final_norm is True
    assert TransformerConfig(arch="decoder").encoder_layers == 0
    assert TransformerConfig(arch="encoder").decoder_layers == 0


def test_round_trip_through_dict_and_unknown_fields_rejected():
    config = TransformerConfig.preset("annotated")
    assert TransformerConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="unknown field"):
        TransformerConfig.from_dict({**config.to_dict(), "n_hidden": 3})


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(ValueError, match="seed001-classifier"):
        TransformerConfig.preset("gpt-5")


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_builds(name):
    config = TransformerConfig.preset(name)
    assert config.to_dict()  # validated on construction
    assert PRESETS[name]["description"]


def test_seed001_classifier_has_410117_parameters_like_torch_built_one():
    model = Transformer(TransformerConfig.preset("seed001-classifier"))
    assert model.num_parameters() == 410_117

    # The same classifier built on torch.nn.TransformerEncoder, as in the seed 001 post.
    torch_encoder = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(128, 8, 256, 0.1, batch_first=True), num_layers=2,
        enable_nested_tensor=False)
    parts = [torch.nn.Embedding(1000, 128, padding_idx=0), torch_encoder, torch.nn.Linear(128, 128),
             torch.nn.Linear(128, 5)]
    assert sum(p.numel() for part in parts for p in part.parameters()) == 410_117


class Seed001EncoderLayer(torch.nn.Module):
    """Seed 001's hand-written EncoderLayer, as its text describes it (the reference for the preset)."""

    def __init__(self, embed_dim=128, n_heads=8, dim_feedforward=256, dropout=0.1):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(embed_dim, n_heads, batch_first=True, bias=True)  # dropout 0
        self.layer_norm1 = torch.nn.LayerNorm(embed_dim)
        self.layer_norm2 = torch.nn.LayerNorm(embed_dim)
        self.dropout1 = torch.nn.Dropout(dropout)
        self.dropout2 = torch.nn.Dropout(dropout)
        self.position_wise_ff = torch.nn.Sequential(torch.nn.Linear(embed_dim, dim_feedforward), torch.nn.ReLU(),
                                                    torch.nn.Linear(dim_feedforward, embed_dim))

    def forward(self, x, src_key_padding_mask=None):
        attn_output, _ = self.mha(x, x, x, key_padding_mask=src_key_padding_mask)
        # .contiguous() changes no value: batch_first MHA returns a transposed view, and dropout draws its
        # mask in memory order, so without it the same random numbers would land on other elements.
        x = self.layer_norm1(x + self.dropout1(attn_output.contiguous()))
        return self.layer_norm2(x + self.dropout2(self.position_wise_ff(x)))


def test_seed001_preset_trains_like_the_seeds_encoder_layer():
    """Same weights, same random state, training mode: the preset's layer drops exactly what the seed's
    layer drops (the two sublayer outputs; not the attention weights, not inside the feed-forward)."""
    torch.manual_seed(0)
    seed_layer = Seed001EncoderLayer()
    ours = Transformer(TransformerConfig.preset("seed001-classifier")).encoder.layers[0]
    ours.self_attn.in_proj.weight.data.copy_(seed_layer.mha.in_proj_weight)
    ours.self_attn.in_proj.bias.data.copy_(seed_layer.mha.in_proj_bias)
    ours.self_attn.out_proj.load_state_dict(seed_layer.mha.out_proj.state_dict())
    ours.attn_sublayer.norm.load_state_dict(seed_layer.layer_norm1.state_dict())
    ours.ff_sublayer.norm.load_state_dict(seed_layer.layer_norm2.state_dict())
    ours.feed_forward.linear1.load_state_dict(seed_layer.position_wise_ff[0].state_dict())
    ours.feed_forward.linear2.load_state_dict(seed_layer.position_wise_ff[2].state_dict())
    seed_layer.train(), ours.train()
    x = torch.randn(3, 10, 128)
    pad = torch.zeros(3, 10, dtype=torch.bool)
    pad[1, 7:] = True
    torch.manual_seed(123)
    expected = seed_layer(x, src_key_padding_mask=pad)
    torch.manual_seed(123)
    got, _ = ours(x, mask=~pad[:, None, None, :], need_weights=False)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    torch.manual_seed(124)
    assert not torch.allclose(seed_layer(x, src_key_padding_mask=pad), expected)  # dropout is really on


def test_dropout_fields_default_to_dropout():
    config = TransformerConfig(dropout=0.2)
    assert (config.resolved_embedding_dropout, config.resolved_attention_dropout, config.resolved_ffn_dropout) == \
        (0.2, 0.2, 0.2)
    seed = TransformerConfig.preset("seed001-classifier")
    assert (seed.dropout, seed.resolved_attention_dropout, seed.resolved_ffn_dropout) == (0.1, 0.0, 0.0)


def test_annotated_preset_is_the_base_model():
    config = TransformerConfig.preset("annotated")
    assert (config.encoder_layers, config.decoder_layers, config.d_model, config.n_heads, config.d_ff) == \
        (6, 6, 512, 8, 2048)
    assert config.norm_first and config.scale_embeddings and config.positional == "sinusoidal"


def test_attention_kinds_follow_the_architecture():
    assert TransformerConfig(arch="encoder", n_layers=3, n_heads=2, d_model=8).attention_kinds() == {"encoder": (3, 2)}
    assert TransformerConfig(arch="decoder", n_layers=3, n_heads=2, d_model=8).attention_kinds() == {"decoder": (3, 2)}
    assert TransformerConfig(arch="encoder-decoder", n_encoder_layers=1, n_decoder_layers=2, n_heads=2,
                             d_model=8).attention_kinds() == {"encoder": (1, 2), "decoder": (2, 2), "cross": (2, 2)}

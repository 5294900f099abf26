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
    (dict(positional="rotary"), "positional"),
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

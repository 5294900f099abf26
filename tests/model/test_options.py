"""The options the Hub families combine, each checked on its own: the weights path and the
scaled_dot_product_attention path agree with masks and head toggles for every option; rotary
positions, llama3 frequencies, RMSNorm, the tanh GELU and the sliding window equal transformers'
own functions; the parameter estimate is exact over a grid of combinations; old configs migrate."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import torch

from explorer.checkpoints import estimate_parameters
from explorer.model import Transformer, TransformerConfig
from explorer.model.masks import sliding_window_mask
from explorer.model.rotary import apply_rotary, inverse_frequencies, rotary_tables

BASE = dict(arch="decoder", vocab_size=50, d_model=24, n_heads=6, n_layers=2, d_ff=40, dropout=0.0, max_len=32,
            norm_first=True, pad_id=0)
OPTIONS = {
    "rmsnorm": dict(norm="rmsnorm"),
    "rotary": dict(positional="rotary"),
    "partial rotary": dict(positional="rotary", rotary_fraction=0.5),
    "linear scaling": dict(positional="rotary", rope_scaling={"rope_type": "linear", "factor": 2.0}),
    "llama3 scaling": dict(positional="rotary", rope_scaling={"rope_type": "llama3", "factor": 8.0,
                           "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8}),
    "gated silu": dict(mlp="gated", activation="silu"),
    "gelu_tanh": dict(activation="gelu_tanh"),
    "gqa": dict(n_kv_heads=2),
    "mqa": dict(n_kv_heads=1),
    "no biases": dict(qkv_bias=False, out_bias=False, mlp_bias=False, lm_head_bias=False),
    "attn scale 1": dict(attn_scale=1.0),
    "parallel residual": dict(parallel_residual=True),
    "sliding window": dict(sliding_window=3),
    "tied": dict(tie_embeddings=True),
    "llama-like": dict(norm="rmsnorm", positional="rotary", mlp="gated", activation="silu", n_kv_heads=3,
                       qkv_bias=True, out_bias=False, sliding_window=4),
    "relative bias": dict(positional="relative", relative_buckets=8, relative_max_distance=6, attn_scale=1.0),
    "relative + gqa": dict(positional="relative", relative_buckets=6, n_kv_heads=2),
    "learned offset": dict(positional="learned", position_offset=2),
    "split sinusoid": dict(positional="sinusoidal", sinusoid_layout="split"),
    "output scale": dict(output_scale=0.25, tie_embeddings=True),
}


def perturbed(config: TransformerConfig) -> Transformer:
    torch.manual_seed(0)
    model = Transformer(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.3)
    return model


@pytest.mark.parametrize("name", list(OPTIONS))
def test_fast_path_equals_weights_path_with_masks_and_toggles(name):
    model = perturbed(TransformerConfig(**BASE, **OPTIONS[name]))
    ids = torch.tensor([[5, 6, 7, 8, 9, 10, 11, 12, 13], [0, 0, 7, 3, 9, 4, 0, 0, 0]])  # left and right padding
    custom = torch.ones(9, 9, dtype=torch.bool)
    custom[:, 4] = False
    head_mask = {"decoder": torch.tensor([[1.0, 0, 1, 1, 0, 1], [1, 1, 1, 0, 1, 1]])}
    for kwargs in (dict(), dict(attn_mask=custom), dict(head_mask=head_mask), dict(causal=False, padding=False)):
        with torch.no_grad():
            slow = model(ids, **kwargs)
            fast = model(ids, need_weights=False, **kwargs)
        assert torch.allclose(slow.logits, fast.logits, atol=1e-5), (name, kwargs)
        for w in slow.attentions.decoder:
            rows = w.sum(-1)
            assert torch.all(((rows - 1).abs() < 1e-5) | (rows == 0))  # rows sum to 1, or 0 when all keys masked


@pytest.mark.parametrize("name", list(OPTIONS))
def test_left_padding_computes_what_the_unpadded_row_does(name):
    model = perturbed(TransformerConfig(**BASE, **OPTIONS[name]))
    alone = torch.tensor([[5, 6, 7, 8]])
    padded = torch.tensor([[0, 0, 5, 6, 7, 8]])
    with torch.no_grad():
        a, b = model(alone), model(padded)
    assert torch.allclose(a.logits[0], b.logits[0, 2:], atol=1e-5)
    for x, y in zip(a.attentions.decoder, b.attentions.decoder):
        assert torch.allclose(x[0], y[0, :, 2:, 2:], atol=1e-6) and torch.all(y[0, :, :2] == 0)


def test_grouped_query_heads_share_their_key_value_head():
    """With 6 query heads on 2 key/value heads, heads 0-2 read K/V head 0 and heads 3-5 K/V head 1: giving
    every query head the same W_q makes the weights of a group equal, and different across groups."""
    model = perturbed(TransformerConfig(**BASE, n_kv_heads=2))
    attn = model.decoder.layers[0].self_attn
    Dh = attn.head_dim
    with torch.no_grad():
        for h in range(1, 6):
            attn.in_proj.weight[h * Dh:(h + 1) * Dh] = attn.in_proj.weight[:Dh]
            attn.in_proj.bias[h * Dh:(h + 1) * Dh] = attn.in_proj.bias[:Dh]
        w = model(torch.tensor([[5, 6, 7, 8, 9]])).attentions.decoder[0][0]
    assert torch.equal(w[0], w[1]) and torch.equal(w[0], w[2]) and torch.equal(w[3], w[5])
    assert not torch.allclose(w[0], w[3])


transformers = pytest.importorskip("transformers")


def test_rotary_equals_transformers_apply_rotary_pos_emb():
    from transformers.models.gpt_neox.modeling_gpt_neox import apply_rotary_pos_emb

    config = TransformerConfig(**{**BASE, "d_model": 48, "n_heads": 3}, positional="rotary", rotary_fraction=0.25)
    q, k = torch.randn(2, 3, 7, 16), torch.randn(2, 3, 7, 16)
    positions = torch.tensor([[0, 1, 2, 3, 4, 5, 6], [0, 0, 0, 1, 2, 3, 4]])
    tables = rotary_tables(positions, config)
    theirs = apply_rotary_pos_emb(q, k, tables.cos[:, 0], tables.sin[:, 0])
    assert torch.equal(apply_rotary(q, tables), theirs[0]) and torch.equal(apply_rotary(k, tables), theirs[1])
    assert torch.equal(apply_rotary(q, tables)[..., 4:], q[..., 4:])  # the non-rotating part passes


@pytest.mark.parametrize("scaling", [None, {"rope_type": "linear", "factor": 4.0},
                                     {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                      "high_freq_factor": 4.0, "original_max_position_embeddings": 64}])
def test_frequencies_equal_transformers(scaling):
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    config = TransformerConfig(**{**BASE, "d_model": 128, "n_heads": 2}, positional="rotary", pos_base=500000.0,
                               rope_scaling=scaling)
    hf = transformers.LlamaConfig(hidden_size=128, num_attention_heads=2, max_position_embeddings=256,
                                  rope_parameters={"rope_theta": 500000.0, **(scaling or {"rope_type": "default"})})
    if scaling is None:
        theirs = transformers.models.llama.modeling_llama.LlamaRotaryEmbedding(hf).inv_freq
    else:
        theirs, _ = ROPE_INIT_FUNCTIONS[scaling["rope_type"]](hf)
    assert torch.allclose(inverse_frequencies(config), theirs, rtol=1e-6, atol=0)


def test_rmsnorm_and_gelu_tanh_equal_transformers():
    from transformers.activations import ACT2FN
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    from explorer.model.layers import ACTIVATION_FUNCTIONS
    from explorer.model.norms import make_norm

    x = torch.randn(3, 5, 16) * 3
    ours, theirs = make_norm("rmsnorm", 16, 1e-6), LlamaRMSNorm(16, eps=1e-6)
    with torch.no_grad():
        ours.weight.normal_()
        theirs.weight.copy_(ours.weight)
    assert torch.allclose(ours(x), theirs(x), atol=1e-6)
    for name in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast"):
        assert torch.allclose(ACTIVATION_FUNCTIONS["gelu_tanh"](x), ACT2FN[name](x), atol=1e-6)
    assert torch.allclose(ACTIVATION_FUNCTIONS["silu"](x), ACT2FN["silu"](x))


def test_sliding_window_mask_equals_transformers_overlay():
    from transformers.masking_utils import sliding_window_causal_mask_function

    window, T = 3, 8
    rule = sliding_window_causal_mask_function(window)
    q, k = torch.arange(T)[:, None], torch.arange(T)[None, :]
    theirs = rule(torch.tensor(0), torch.tensor(0), q, k)  # broadcast over (T, T)
    ours = sliding_window_mask(T, window) & torch.ones(T, T, dtype=torch.bool).tril()
    assert torch.equal(ours, theirs)
    assert ours[5, 5 - window] == False and ours[5, 5 - window + 1]  # noqa: E712 (distance == window: hidden)


GRID = list(itertools.product(["layernorm", "rmsnorm"], ["standard", "gated"], [None, 2], [True, False],
                              [True, False], ["learned", "rotary"]))


@pytest.mark.parametrize("norm, mlp, kv, biases, tied, positional", GRID)
def test_parameter_estimate_is_exact_for_every_combination(norm, mlp, kv, biases, tied, positional):
    for arch in ("decoder", "encoder-decoder", "encoder"):
        config = TransformerConfig(
            **{**BASE, "arch": arch}, norm=norm, mlp=mlp, n_kv_heads=kv, qkv_bias=biases, out_bias=not biases,
            mlp_bias=biases, lm_head_bias=not biases, tie_embeddings=tied and arch != "encoder",
            positional=positional, embedding_norm=biases, final_norm=not biases,
            parallel_residual=biases and arch != "encoder-decoder", head_dim=6 if kv else None)
        with torch.device("meta"):
            model = Transformer(config)
        assert estimate_parameters(config) == model.num_parameters(), config


SEQ2SEQ_GRID = list(itertools.product(["learned", "relative", "sinusoidal"], [0, 2], [True, False], [True, False]))


@pytest.mark.parametrize("positional, offset, shared, tied", SEQ2SEQ_GRID)
def test_parameter_estimate_is_exact_for_the_seq2seq_options(positional, offset, shared, tied):
    """Relative bias tables, position offsets, shared embeddings and MLM heads counted exactly."""
    if offset and positional != "learned":
        return
    for arch in ("encoder-decoder", "encoder", "decoder"):
        config = TransformerConfig(
            **{**BASE, "arch": arch}, positional=positional, position_offset=offset, relative_buckets=5,
            share_embeddings=shared and arch == "encoder-decoder", tie_embeddings=tied,
            mlm_head=tied and arch == "encoder" or (arch == "encoder" and not shared), output_scale=0.5)
        with torch.device("meta"):
            model = Transformer(config)
        assert estimate_parameters(config) == model.num_parameters(), config
        if config.share_embeddings:
            assert model.tgt_embed.token.weight is model.src_embed.token.weight


ENC_DEC = dict(BASE, arch="encoder-decoder", norm="rmsnorm", positional="relative", relative_buckets=8,
               relative_max_distance=10, attn_scale=1.0, share_embeddings=True, tie_embeddings=True, output_scale=0.3,
               head_dim=3)


def test_encoder_decoder_relative_bias_fast_path_equals_weights_path():
    """T5-like model: bias in encoder and decoder self-attention, none in cross-attention; both paths agree
    with source padding, target padding and every kind of head toggle."""
    model = perturbed(TransformerConfig(**ENC_DEC))
    src = torch.tensor([[5, 6, 7, 8, 9, 0, 0], [3, 4, 5, 6, 7, 8, 9]])
    tgt = torch.tensor([[1, 5, 6, 0], [1, 7, 8, 9]])
    heads = {"encoder": torch.tensor([[1.0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 0, 1]]),
             "cross": torch.tensor([[1.0, 1, 0, 1, 1, 1], [0, 1, 1, 1, 1, 1]])}
    for kwargs in (dict(), dict(head_mask=heads), dict(padding=False)):
        with torch.no_grad():
            slow = model(src, tgt, **kwargs)
            fast = model(src, tgt, need_weights=False, **kwargs)
        assert torch.allclose(slow.logits, fast.logits, atol=1e-5), kwargs
    assert model.encoder.relative_bias.bidirectional and not model.decoder.relative_bias.bidirectional
    assert all(layer.cross_attn is not None for layer in model.decoder.layers)


def test_relative_bias_is_added_to_every_layers_scores():
    """With q = k = 0 every score is the bias: each layer's weights are softmax(bias) over the allowed keys."""
    model = perturbed(TransformerConfig(**{**ENC_DEC, "arch": "encoder", "share_embeddings": False,
                                           "tie_embeddings": False, "output_scale": 1.0}))
    with torch.no_grad():
        for layer in model.encoder.layers:
            layer.self_attn.in_proj.weight[: 2 * 6 * 3].zero_()  # W_q and W_k rows
        out = model(torch.tensor([[5, 6, 7, 8, 9]]))
        expected = model.encoder.relative_bias(5, 5).softmax(-1)  # (1, H, T, T)
    for weights in out.attentions.encoder:
        assert torch.allclose(weights, expected, atol=1e-6)


def test_mlm_head_and_split_sinusoid():
    model = perturbed(TransformerConfig(**{**BASE, "arch": "encoder"}, mlm_head=True, tie_embeddings=True,
                                        mlm_activation="gelu", positional="sinusoidal", sinusoid_layout="split"))
    ids = torch.tensor([[5, 6, 7, 0]])
    with torch.no_grad():
        out = model(ids)
        head = model.mlm
        expected = head.norm(torch.nn.functional.gelu(head.dense(out.last_hidden_state))) @ \
            model.src_embed.token.weight.T + head.proj.bias
    assert out.logits.shape == (1, 4, 50) and torch.allclose(out.logits, expected, atol=1e-5)
    table = model.src_embed.position_matrix()
    assert torch.allclose(table[:, :12], torch.sin(torch.arange(32.0)[:, None] / 10000 ** (torch.arange(0, 24, 2) / 24)),
                          atol=1e-6)


def test_old_config_dicts_migrate():
    """Configs saved before `bias` was split (the shipped checkpoints) load with the same meaning."""
    root = Path(__file__).resolve().parents[2] / "checkpoints"
    for name in ("date-translator", "date-gpt"):
        saved = json.loads((root / name / "config.json").read_text())["model"]
        assert saved["bias"] is True and "qkv_bias" not in saved
        config = TransformerConfig.from_dict(saved)
        assert config.qkv_bias and config.out_bias and config.mlp_bias and config.lm_head_bias
    old = {**TransformerConfig().to_dict(), "bias": False}
    del old["qkv_bias"], old["out_bias"]
    config = TransformerConfig.from_dict(old)
    assert (config.qkv_bias, config.out_bias, config.mlp_bias) == (False, False, True)


@pytest.mark.parametrize("changes, field", [
    (dict(norm="batchnorm"), "norm"), (dict(mlp="moe"), "mlp"), (dict(activation="quick_gelu"), "activation"),
    (dict(n_kv_heads=4), "n_kv_heads"), (dict(positional="rotary", rotary_fraction=0.0), "rotary_fraction"),
    (dict(positional="rotary", rope_scaling={"rope_type": "yarn", "factor": 2.0}), "rope_scaling"),
    (dict(positional="rotary", rope_scaling={"rope_type": "linear"}), "rope_scaling"),
    (dict(rope_scaling={"rope_type": "linear", "factor": 2.0}), "rope_scaling"),
    (dict(norm_first=False, parallel_residual=True), "parallel_residual"), (dict(sliding_window=0), "sliding_window"),
    (dict(attn_scale=-1.0), "attn_scale"), (dict(qkv_bias=1), "qkv_bias"),
    (dict(positional="relative", relative_buckets=2), "relative_buckets"), (dict(sinusoid_layout="zigzag"),
                                                                           "sinusoid_layout"),
    (dict(positional="sinusoidal", position_offset=2), "position_offset"), (dict(share_embeddings=True),
                                                                            "share_embeddings"),
    (dict(output_scale=0.0), "output_scale"), (dict(mlm_head=True), "mlm_head"),
    (dict(mlm_activation="tanh"), "mlm_activation"),
])
def test_invalid_options_name_the_field(changes, field):
    with pytest.raises(ValueError, match=rf"TransformerConfig\.{field}="):
        TransformerConfig(**{**BASE, **changes})


def test_yarn_is_refused_by_name():
    with pytest.raises(ValueError, match="rope_type 'yarn' is not supported"):
        TransformerConfig(**BASE, positional="rotary", rope_scaling={"rope_type": "yarn", "factor": 2.0})

"""T5 import: tiny random T5s (ReLU as t5-small, gated-GELU with an untied head as flan-t5, heads narrower than
d_model / H) equal transformers' eager T5ForConditionalGeneration: encoder, decoder and cross attention and the
logits with source padding and heads switched off; greedy generation equals transformers' generate; the
relative position bias buckets and T5's norm equal transformers' functions."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from explorer.checkpoints import estimate_parameters
from explorer.model import relative_buckets
from explorer.model.norms import make_norm

from tests.importers.harness import VOCAB
from tests.importers.seq2seq_harness import (check_greedy_generation, check_seq2seq, make_seq2seq_case,
                                             unigram_metaspace_tokenizer)


def out_proj(hf, kind: str, layer: int):
    stack = hf.encoder if kind == "encoder" else hf.decoder
    block = stack.block[layer].layer
    return block[1].EncDecAttention.o if kind == "cross" else block[0].SelfAttention.o


def t5_case(folder, untied: bool = False, **overrides):
    fields = dict(vocab_size=VOCAB, d_model=48, d_kv=8, d_ff=96, num_layers=2, num_decoder_layers=2, num_heads=4,
                  relative_attention_num_buckets=8, relative_attention_max_distance=20, pad_token_id=0,
                  eos_token_id=1, decoder_start_token_id=0)
    config = transformers.T5Config(**{**fields, **overrides})

    def model_class(cfg):
        model = transformers.T5ForConditionalGeneration(cfg)
        if untied:  # flan-t5: its own lm_head, no d_model ** -0.5 scaling (what transformers does on loading one)
            model.lm_head.weight = torch.nn.Parameter(model.shared.weight.detach().clone())
            model.config.scale_decoder_outputs = False
        return model
    return make_seq2seq_case(model_class, config, folder,
                             lambda f: unigram_metaspace_tokenizer().save(str(f / "tokenizer.json")), out_proj)


@pytest.fixture(scope="module")
def t5_small(tmp_path_factory):
    return t5_case(tmp_path_factory.mktemp("t5"))


@pytest.fixture(scope="module")
def flan(tmp_path_factory):
    return t5_case(tmp_path_factory.mktemp("flan"), untied=True, feed_forward_proj="gated-gelu", num_heads=6)


def test_config_and_task(t5_small, flan):
    c = t5_small.loaded.config
    assert (c.norm, c.positional, c.attn_scale, c.mlp, c.activation, c.head_dim, c.relative_buckets) == \
        ("rmsnorm", "relative", 1.0, "standard", "relu", 8, 8)
    assert c.share_embeddings and c.tie_embeddings and c.output_scale == 48 ** -0.5
    assert not (c.qkv_bias or c.out_bias or c.mlp_bias or c.lm_head_bias)
    f = flan.loaded.config
    assert (f.mlp, f.activation, f.tie_embeddings, f.output_scale, f.decoder_layers) == \
        ("gated", "gelu_tanh", False, 1.0, 2)
    for case in (t5_small, flan):
        theirs = sum(p.numel() for p in case.hf.parameters())
        assert case.loaded.model.num_parameters() == estimate_parameters(case.loaded.config) == theirs
    task = t5_small.loaded.task
    assert task["name"] == "seq2seq" and task["bos_id"] == 0 and task["eos_id"] == 1
    assert any(e.startswith("translate English to German:") for e in task["examples"])


@pytest.mark.parametrize("name", ["t5_small", "flan"])
def test_equals_transformers(name, request):
    check_seq2seq(request.getfixturevalue(name), start=0)


@pytest.mark.parametrize("name", ["t5_small", "flan"])
def test_greedy_generation_equals_transformers(name, request):
    check_greedy_generation(request.getfixturevalue(name))


@pytest.mark.parametrize("bidirectional", [True, False])
def test_buckets_equal_transformers(bidirectional):
    from transformers.models.t5.modeling_t5 import T5Attention

    distance = torch.arange(-300, 300)[None, :] - torch.arange(0, 40)[:, None]
    for buckets, max_distance in ((32, 128), (8, 20), (6, 7)):
        theirs = T5Attention._relative_position_bucket(distance, bidirectional, buckets, max_distance)
        assert torch.equal(relative_buckets(distance, bidirectional, buckets, max_distance), theirs)


def test_rmsnorm_equals_t5_layer_norm():
    from transformers.models.t5.modeling_t5 import T5LayerNorm

    x = torch.randn(3, 5, 16) * 4 + 1  # a mean away from 0: T5's norm must not subtract it
    ours, theirs = make_norm("rmsnorm", 16, 1e-6), T5LayerNorm(16, eps=1e-6)
    with torch.no_grad():
        ours.weight.normal_()
        theirs.weight.copy_(ours.weight)
    assert torch.allclose(ours(x), theirs(x), atol=1e-6)
    assert [name for name, _ in ours.named_parameters()] == ["weight"]  # a gain, no bias


def test_untied_head_is_read_from_the_checkpoint(flan):
    model = flan.loaded.model
    assert model.generator.proj.weight is not model.tgt_embed.token.weight
    assert torch.equal(model.generator.proj.weight, flan.hf.lm_head.weight)
    assert model.tgt_embed.token.weight is model.src_embed.token.weight


def test_explorer_checkpoint_round_trip(tmp_path, flan):
    """Saved in the explorer's format: the shared embedding is stored once and re-shared on load."""
    from safetensors import safe_open

    from explorer.checkpoints import load_checkpoint, save_checkpoint

    loaded = flan.loaded
    save_checkpoint(tmp_path, loaded.model, loaded.tokenizer, task=loaded.task)
    with safe_open(str(tmp_path / "model.safetensors"), "pt") as f:
        names = set(f.keys())
    assert "src_embed.token.weight" in names and "tgt_embed.token.weight" not in names
    again = load_checkpoint(tmp_path, "cpu")
    assert again.model.tgt_embed.token.weight is again.model.src_embed.token.weight
    src, tgt = torch.tensor([[5, 6, 7, 1]]), torch.tensor([[0, 8, 9]])
    with torch.no_grad():
        assert torch.equal(again.model(src, tgt).logits, loaded.model(src, tgt).logits)
    assert again.task["bos_id"] == 0

"""Decoding with a key/value cache equals rerunning the whole prefix, for every positional scheme and
family shape the core builds: each generated token, its log-probability and every layer's self- and
cross-attention row equal a full forward pass over the prefix (no cache), with padding, custom masks,
head toggles, sliding windows, grouped-query attention and T5's relative bias at growing distances."""

from __future__ import annotations

import pytest
import torch

from explorer.outputs.generate import generate, grow_mask
from explorer.model import Transformer, TransformerConfig
from explorer.model.cache import DecoderCache

BASE = dict(vocab_size=40, d_model=32, n_heads=4, n_layers=2, d_ff=48, dropout=0.0, max_len=40)
FAMILIES = {
    "gpt2": dict(arch="decoder", positional="learned", norm_first=True, activation="gelu_tanh", tie_embeddings=True),
    "llama-gqa-window": dict(arch="decoder", positional="rotary", norm="rmsnorm", norm_first=True, mlp="gated",
                             activation="silu", n_kv_heads=2, qkv_bias=False, out_bias=False, mlp_bias=False,
                             lm_head_bias=False, sliding_window=3,
                             rope_scaling={"rope_type": "linear", "factor": 2.0}),
    "neox": dict(arch="decoder", positional="rotary", rotary_fraction=0.25, parallel_residual=True, norm_first=True,
                 activation="gelu"),
    "t5": dict(arch="encoder-decoder", positional="relative", relative_buckets=8, relative_max_distance=6,
               norm="rmsnorm", norm_first=True, attn_scale=1.0, qkv_bias=False, out_bias=False, mlp_bias=False,
               lm_head_bias=False, share_embeddings=True),
    "bart": dict(arch="encoder-decoder", positional="learned", position_offset=2, embedding_norm=True,
                 activation="gelu", share_embeddings=True),
    "marian": dict(arch="encoder-decoder", positional="sinusoidal", sinusoid_layout="split", scale_embeddings=True,
                   activation="silu"),
    "built": dict(arch="encoder-decoder"),  # the seeds' sinusoidal post-norm Transformer
}


def build(name: str, seed: int = 0) -> Transformer:
    torch.manual_seed(seed)
    model = Transformer(TransformerConfig(**{**BASE, **FAMILIES[name]})).eval()
    with torch.no_grad():  # off the default init (zero biases, unit norms would hide mistakes)
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)
    return model


def full_forward(model: Transformer, src, prefix, *, key_mask=None, attn_mask=None, head_mask=None):
    """One forward pass over the whole prefix, no cache: what every step must reproduce row by row."""
    if model.config.arch == "decoder":
        return model(prefix, key_mask=key_mask, attn_mask=grow_mask(attn_mask, prefix.shape[1]), head_mask=head_mask)
    return model(src, prefix, key_mask=key_mask, head_mask=head_mask,
                 tgt_key_mask=torch.ones_like(prefix, dtype=torch.bool))


def assert_steps_equal_full_forward(model, src, gen, *, key_mask=None, attn_mask=None, head_mask=None,
                                    atol=1e-5):
    if model.config.arch == "decoder" and key_mask is not None:  # generated tokens are real tokens
        key_mask = torch.cat([key_mask, torch.ones_like(gen.tokens, dtype=torch.bool)], 1)
    full = full_forward(model, src, gen.prefix, key_mask=key_mask, attn_mask=attn_mask, head_mask=head_mask)
    start = gen.prefix.shape[1] - gen.tokens.shape[1] - 1  # row of the prompt's last token (the first step)
    log_probs = full.logits.log_softmax(-1)
    for n, step in enumerate(gen.steps):
        row, width = start + n, start + n + 1
        for layer, weights in enumerate(step.decoder):
            expected = full.attentions.decoder[layer][:, :, row, :width]
            torch.testing.assert_close(weights.float(), expected, atol=atol, rtol=0)
            assert (full.attentions.decoder[layer][:, :, row, width:] == 0).all()  # later keys never seen
        for layer, weights in enumerate(step.cross):
            torch.testing.assert_close(weights.float(), full.attentions.cross[layer][:, :, row], atol=atol, rtol=0)
        assert torch.equal(gen.tokens[:, n], log_probs[:, row].argmax(-1))
        torch.testing.assert_close(gen.log_probs[:, n], log_probs[:, row].max(-1).values, atol=1e-4, rtol=0)


@pytest.mark.parametrize("name", FAMILIES)
def test_cached_steps_equal_a_full_forward_over_the_prefix(name):
    model = build(name)
    head_mask = {"decoder": torch.tensor([[1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0]])}
    if model.config.arch == "decoder":
        prompt = torch.tensor([[5, 9, 13, 7, 21, 8, 30]])
        for kwargs in ({}, {"head_mask": head_mask}):
            gen = generate(model, prompt, max_new_tokens=12, **kwargs)
            assert gen.tokens.shape == (1, 12)
            assert_steps_equal_full_forward(model, prompt, gen, **kwargs)
    else:
        src = torch.tensor([[5, 9, 13, 7, 21, 0], [8, 30, 11, 12, 14, 15]])  # row 0 padded
        head_mask = {**head_mask, "cross": torch.tensor([[0.0, 1.0, 1.0, 1.0], [1.0, 1.0, 0.0, 1.0]])}
        for kwargs in ({}, {"head_mask": head_mask}):
            gen = generate(model, src, bos_id=1, max_new_tokens=12, **kwargs)  # decoder distances past 6 (T5)
            assert gen.tokens.shape == (2, 12)
            assert_steps_equal_full_forward(model, src, gen, **kwargs)


@pytest.mark.parametrize("name", ["gpt2", "llama-gqa-window", "neox"])
def test_left_padded_prompts_and_a_custom_mask(name):
    """Left-padded prompts of different lengths share one cached batch; a custom mask blocks a prompt key."""
    model = build(name, seed=1)
    prompts = torch.tensor([[0, 0, 0, 5, 9, 13], [4, 6, 8, 10, 12, 14]])
    key_mask = prompts != 0
    blocked = torch.ones(6, 6, dtype=torch.bool)
    blocked[:, 4] = False  # no query sees prompt key 4
    gen = generate(model, prompts, max_new_tokens=8, key_mask=key_mask, attn_mask=blocked)
    assert_steps_equal_full_forward(model, prompts, gen, key_mask=key_mask, attn_mask=blocked)
    assert (gen.steps[0].decoder[0][:, :, 4] == 0).all()  # the prompt's last row keeps the mask (new rows see all)
    # the padded row continues exactly as its unpadded prompt alone (positions count from the first real token)
    alone = generate(model, prompts[:1, 3:], max_new_tokens=8, attn_mask=blocked[3:, 3:])
    assert torch.equal(alone.tokens[0], gen.tokens[0])


def test_float16_weights_are_the_rows_cast():
    model = build("gpt2")
    prompt = torch.tensor([[5, 9, 13, 7]])
    exact = generate(model, prompt, max_new_tokens=5)
    half = generate(model, prompt, max_new_tokens=5, weights_dtype=torch.float16)
    assert torch.equal(exact.tokens, half.tokens)
    for a, b in zip(exact.steps, half.steps):
        assert b.decoder[0].dtype == torch.float16
        assert torch.equal(a.decoder[0].to(torch.float16), b.decoder[0])


def tokens_run(model: Transformer, **kwargs) -> list[int]:
    """How many token positions the decoder's first layer processes in each call of one generation."""
    seen = []
    handle = model.decoder.layers[0].register_forward_pre_hook(lambda module, args: seen.append(args[0].shape[1]))
    try:
        generate(model, **kwargs)
    finally:
        handle.remove()
    return seen


def test_each_step_runs_one_token_and_non_causal_decoding_reruns_the_prefix():
    model = build("gpt2")
    prompt = torch.tensor([[5, 9, 13, 7, 21, 8]])
    assert tokens_run(model, src=prompt, max_new_tokens=4) == [5, 1, 1, 1, 1]  # prompt but its last, then 1 each
    # without the causal mask earlier tokens see later ones: nothing can be cached
    assert tokens_run(model, src=prompt, max_new_tokens=3, causal=False) == [6, 7, 8]
    t5 = build("t5")
    src = torch.tensor([[5, 9, 13, 7]])
    assert tokens_run(t5, src=src, bos_id=1, max_new_tokens=3) == [1, 1, 1]


def test_cross_attention_keys_are_projected_once():
    model = build("bart")
    calls = []
    cross = model.decoder.layers[1].cross_attn
    original = cross.project
    cross.project = lambda x, memory: calls.append(memory is not None) or original(x, memory)
    try:
        generate(model, torch.tensor([[5, 9, 13, 7]]), bos_id=1, max_new_tokens=4)
    finally:
        del cross.project
    assert calls == [True]  # the memory once; later steps project the query alone


def test_a_cache_refuses_what_it_cannot_do():
    model = build("gpt2")
    cache = DecoderCache(2)
    model.decode(torch.tensor([[5, 9, 13]]), cache=cache)
    assert cache.length == 3 and cache.self_attn[0].keys.shape == (1, 4, 3, 8)
    with pytest.raises(ValueError, match="already holds 3 tokens"):
        model.decode(torch.tensor([[5, 9, 13]]), cache=cache)
    enc = build("built")
    with pytest.raises(ValueError, match="only a decoder stack"):
        enc.encoder.run(torch.zeros(1, 3, 32), cache=DecoderCache(2))


def test_a_generated_padding_id_is_a_real_token():
    """A prompt without padding may still continue with the padding id: it stays visible to later steps."""
    model = build("gpt2")
    with torch.no_grad():
        model.generator.proj.bias[0] = 50.0  # the padding id (0) always wins
    gen = generate(model, torch.tensor([[5, 9, 13]]), max_new_tokens=3)
    assert gen.tokens.tolist() == [[0, 0, 0]]
    assert (gen.steps[-1].decoder[0][:, :, 3:] > 0).all()  # the generated zeros are attended to
    assert_steps_equal_full_forward(model, None, gen, key_mask=torch.ones(1, 3, dtype=torch.bool))


@pytest.mark.parametrize("name", ["gpt2", "llama-gqa-window"])
def test_a_batch_run_once_with_weights_continues_each_prompt_as_if_alone(name):
    """The app's language-model Run: one forward with every attention over right-padded sentences fills a cache;
    each sentence then continues from its row of it (nothing of the prompt runs again), exactly as on its own."""
    model = build(name)
    rows = [[5, 9, 13, 7, 21, 8, 30], [4, 6, 8]]
    batch = torch.tensor([rows[0], rows[1] + [0] * 4])
    key_mask = batch != 0
    head_mask = {"decoder": torch.tensor([[1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]])}
    cache = DecoderCache(2)
    with torch.no_grad():
        out = model(batch, key_mask=key_mask, head_mask=head_mask, cache=cache)
    assert cache.length == 7
    for b, row in enumerate(rows):
        prompt = torch.tensor([row])
        alone = generate(model, prompt, max_new_tokens=6, head_mask=head_mask)
        reused = generate(model, prompt, max_new_tokens=6, head_mask=head_mask, cache=cache.select(b, len(row) - 1))
        assert torch.equal(alone.tokens, reused.tokens)
        for a, r in zip(alone.steps, reused.steps):
            for layer in range(2):
                torch.testing.assert_close(a.decoder[layer], r.decoder[layer], atol=1e-5, rtol=0)
        # the first step's row is the batch run's own row at the prompt's last token
        torch.testing.assert_close(reused.steps[0].decoder[1][0], out.attentions.decoder[1][b, :, len(row) - 1,
                                                                                             : len(row)], atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="prompt but its last token"):
        generate(model, torch.tensor([rows[0]]), max_new_tokens=2, cache=cache.select(0, 7))
    with pytest.raises(ValueError, match="empty cache"):
        model(batch, cache=cache)
    with pytest.raises(ValueError, match="empty cache"):
        model(batch, causal=False, cache=DecoderCache(2))


def test_a_slot_appends_in_place_and_leaves_earlier_views_alone():
    """A decoding step writes its one new row into the slot's buffer instead of copying the whole prefix; keys
    handed out before keep their values."""
    from explorer.model.cache import KVSlot

    slot, torch_ = KVSlot(), torch
    prompt = torch_.randn(1, 2, 5, 4)
    slot.append(prompt, -prompt)  # the prompt's run: kept as it is
    first, _ = slot.append(torch_.ones(1, 2, 1, 4), torch_.ones(1, 2, 1, 4))  # the first step: a buffer with room
    buffer = first.untyped_storage().data_ptr()
    before = first.clone()
    rows = [first]
    for step in range(3):
        keys, values = slot.append(torch_.full((1, 2, 1, 4), float(step)), torch_.full((1, 2, 1, 4), -float(step)))
        rows.append(keys)
        assert keys.untyped_storage().data_ptr() == buffer  # no copy: the buffer (room for 12) has room
    assert torch_.equal(rows[0], before) and keys.shape == (1, 2, 9, 4)
    assert torch_.equal(keys[:, :, :5], prompt) and torch_.equal(values[:, :, 5], torch_.ones(1, 2, 4))
    assert torch_.equal(keys[:, :, 8], torch_.full((1, 2, 4), 2.0))
    for step in range(4):  # past its room the buffer doubles, once
        keys, _ = slot.append(torch_.zeros(1, 2, 1, 4), torch_.zeros(1, 2, 1, 4))
    assert keys.shape[2] == 13 and keys.untyped_storage().data_ptr() != buffer
    assert torch_.equal(keys[:, :, :5], prompt) and torch_.equal(rows[-1], keys[:, :, :9])

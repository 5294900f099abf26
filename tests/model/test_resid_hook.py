"""The per-call residual-stream hook (resid_hook): it sees the residual stream at TransformerLens's sites
(resid_pre / resid_mid / resid_mid_cross / resid_post) of every layer in order; returning x unchanged changes
nothing; the sites hold what TransformerLens's blocks hook (checked against the record's head outputs and MLP
outputs, pre-norm and post-norm); replacing x acts like running the later layers on the replaced x; generation
with a cache applies it at every step as a full forward does."""

import pytest
import torch

from explorer.outputs.generate import generate
from explorer.model import Record, Transformer, TransformerConfig


def model_of(arch: str, **options) -> Transformer:
    config = TransformerConfig(arch=arch, vocab_size=30, d_model=32, n_heads=4, n_layers=2, d_ff=48, dropout=0.0,
                               max_len=24, **options)
    torch.manual_seed(0)
    model = Transformer(config).eval()
    with torch.no_grad():  # norms and biases off their init, so a misplaced site shows
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    return model


def run(model, src, tgt, **kw):
    return model(src, tgt if model.config.arch == "encoder-decoder" else None, **kw)


CASES = {
    "decoder": dict(arch="decoder", norm_first=True),
    "decoder-parallel": dict(arch="decoder", norm_first=True, parallel_residual=True),
    "encoder-post-norm": dict(arch="encoder", norm_first=False),
    "encoder-decoder": dict(arch="encoder-decoder", norm_first=True),
}


@pytest.mark.parametrize("case", CASES)
def test_the_hook_sees_every_site_in_order_and_identity_changes_nothing(case):
    model = model_of(**CASES[case])
    src, tgt = torch.randint(4, 30, (2, 7)), torch.randint(4, 30, (2, 5))
    seen = []

    def hook(site, x):
        seen.append((site, tuple(x.shape)))
        return x

    base = run(model, src, tgt)
    hooked = run(model, src, tgt, resid_hook=hook)
    assert torch.equal(base.logits if base.logits is not None else base.last_hidden_state,
                       hooked.logits if hooked.logits is not None else hooked.last_hidden_state)
    mid = [] if case == "decoder-parallel" else ["resid_mid"]
    stacks = {"decoder": [("decoder", 7)], "decoder-parallel": [("decoder", 7)], "encoder-post-norm": [("encoder", 7)],
              "encoder-decoder": [("encoder", 7), ("decoder", 5)]}[case]
    want = []
    for kind, T in stacks:
        cross = ["resid_mid_cross"] if case == "encoder-decoder" and kind == "decoder" else []
        for layer in range(2):
            want += [(f"{kind}.{layer}.{p}", (2, T, 32)) for p in ["resid_pre", *mid, *cross, "resid_post"]]
    assert seen == want


def capture(model, src, tgt=None, **kw):
    sites = {}

    def keep(site, x):
        sites[site] = x.clone()
        return x

    record = Record()
    out = run(model, src, tgt, resid_hook=keep, record=record, **kw)
    return sites, record, out


def attention_output(layer_attn, z):
    """z (B, H, T, Dh) -> what the attention block adds, (B, T, D)."""
    B, H, T, Dh = z.shape
    return layer_attn.out_proj(z.transpose(1, 2).reshape(B, T, H * Dh))  # (B, H, T, Dh) -> (B, T, H*Dh)


def test_pre_norm_sites_are_the_residual_stream_as_transformerlens_hooks_it():
    model = model_of(**CASES["decoder"])
    ids = torch.randint(4, 30, (2, 7))
    sites, record, out = capture(model, ids)
    hidden = out.hidden_states.decoder
    for layer, block in enumerate(model.decoder.layers):
        pre, mid, post = (sites[f"decoder.{layer}.{p}"] for p in ("resid_pre", "resid_mid", "resid_post"))
        torch.testing.assert_close(pre, hidden[layer], rtol=0, atol=0)
        torch.testing.assert_close(post, hidden[layer + 1], rtol=0, atol=0)
        torch.testing.assert_close(mid - pre, attention_output(block.self_attn, record[f"decoder.{layer}.z"]),
                                   rtol=0, atol=1e-5)
        torch.testing.assert_close(post - mid, record[f"decoder.{layer}.mlp"], rtol=0, atol=1e-5)


def test_post_norm_sites_are_the_sums_before_each_norm():
    """TransformerLens's BERT block: resid_mid = resid_pre + attn_out, resid_post = ln1(resid_mid) + mlp_out,
    and the block's output (the next resid_pre) = ln2(resid_post)."""
    model = model_of("encoder", norm_first=False)
    ids = torch.randint(4, 30, (2, 7))
    sites, record, out = capture(model, ids)
    hidden = out.hidden_states.encoder
    for layer, block in enumerate(model.encoder.layers):
        pre, mid, post = (sites[f"encoder.{layer}.{p}"] for p in ("resid_pre", "resid_mid", "resid_post"))
        torch.testing.assert_close(pre, hidden[layer], rtol=0, atol=0)
        torch.testing.assert_close(mid - pre, attention_output(block.self_attn, record[f"encoder.{layer}.z"]),
                                   rtol=0, atol=1e-5)
        normed_mid = block.attn_sublayer.norm(mid)
        torch.testing.assert_close(post - normed_mid, record[f"encoder.{layer}.mlp"], rtol=0, atol=1e-5)
        torch.testing.assert_close(block.ff_sublayer.norm(post), hidden[layer + 1], rtol=0, atol=1e-6)


def test_cross_site_adds_the_cross_attention_output():
    model = model_of(**CASES["encoder-decoder"])
    src, tgt = torch.randint(4, 30, (2, 7)), torch.randint(4, 30, (2, 5))
    sites, record, _ = capture(model, src, tgt)
    for layer, block in enumerate(model.decoder.layers):
        mid, cross = sites[f"decoder.{layer}.resid_mid"], sites[f"decoder.{layer}.resid_mid_cross"]
        torch.testing.assert_close(cross - mid, attention_output(block.cross_attn, record[f"cross.{layer}.z"]),
                                   rtol=0, atol=1e-5)


@pytest.mark.parametrize("case", ["decoder", "decoder-parallel"])
def test_replacing_resid_pre_is_running_the_later_layers_on_the_replaced_stream(case):
    model = model_of(**CASES[case])
    ids = torch.randint(4, 30, (1, 7))
    push = torch.randn(32)

    def steer(site, x):
        return x + push if site == "decoder.1.resid_pre" else x

    hooked = model(ids, resid_hook=steer).logits
    base = model(ids)
    x = base.hidden_states.decoder[1] + push
    ref = model.decoder.run(x, key_mask=model.key_mask(ids, True),
                            attn_mask=torch.ones(7, 7, dtype=torch.bool).tril(), first_layer=1)
    torch.testing.assert_close(hooked, model.generator.logits(ref.output), rtol=0, atol=1e-5)
    assert not torch.allclose(hooked, base.logits, atol=1e-3)


def test_replacing_resid_post_of_a_layer_is_replacing_resid_pre_of_the_next():
    model = model_of(**CASES["decoder"])
    ids = torch.randint(4, 30, (1, 7))
    push = torch.randn(32)
    a = model(ids, resid_hook=lambda site, x: x + push if site == "decoder.0.resid_post" else x)
    b = model(ids, resid_hook=lambda site, x: x + push if site == "decoder.1.resid_pre" else x)
    torch.testing.assert_close(a.logits, b.logits, rtol=0, atol=0)
    assert torch.equal(a.hidden_states.decoder[1], b.hidden_states.decoder[1])  # what layer 1 read, hooked


@pytest.mark.parametrize("arch", ["decoder", "encoder-decoder"])
def test_generation_with_a_cache_applies_the_hook_at_every_step_as_a_full_forward_does(arch):
    model = model_of(**CASES[arch])
    src = torch.randint(4, 30, (1, 6))
    push = torch.randn(32) * 0.5

    def steer(site, x):
        return x + push if site in ("decoder.1.resid_mid", "encoder.0.resid_post") else x

    gen = generate(model, src, bos_id=1, max_new_tokens=6, resid_hook=steer)
    prefix = src if arch == "decoder" else torch.tensor([[1]])
    for step in range(6):  # greedy by hand, every step a full forward with the hook
        out = run(model, src, prefix, resid_hook=steer) if arch == "encoder-decoder" else model(prefix, resid_hook=steer)
        prefix = torch.cat([prefix, out.logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert gen.prefix.tolist() == prefix.tolist()
    plain = generate(model, src, bos_id=1, max_new_tokens=6)
    assert plain.prefix.tolist() != gen.prefix.tolist() or not torch.allclose(plain.log_probs, gen.log_probs)


def test_a_hook_returning_the_wrong_shape_is_refused():
    model = model_of("decoder")
    with pytest.raises(ValueError, match=r"resid_hook must return x shaped \(1, 5, 32\) at decoder.0.resid_pre"):
        model(torch.randint(4, 30, (1, 5)), resid_hook=lambda site, x: x[:, :2])

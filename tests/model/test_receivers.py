"""The per-call receivers (each reader of the residual stream gets its own input): unused or returning the stream it
is given, the model is unchanged (exactly for the stream itself, to float precision when each head gets its own copy),
on both attention paths, in every layout (pre-norm, parallel residual, grouped-query attention with rotary positions,
encoder-decoder, post-norm); the sites come in forward order; a head's own input drives that head only (under
grouped-query attention too: the K/V head's weights, the query head's input); the final site is what the LM head
reads; a wrong shape or a cache is refused in words."""

import pytest
import torch

from explorer.model import Record, Transformer, TransformerConfig
from explorer.model.cache import DecoderCache

CASES = {
    "decoder": dict(arch="decoder", norm_first=True),
    "parallel": dict(arch="decoder", norm_first=True, parallel_residual=True, positional="rotary",
                     rotary_fraction=0.5),
    "gqa": dict(arch="decoder", norm_first=True, n_kv_heads=2, positional="rotary", norm="rmsnorm", mlp="gated",
                activation="silu"),
    "encoder-decoder": dict(arch="encoder-decoder", norm_first=True),
    "post-norm": dict(arch="decoder", norm_first=False),
}


def model_of(**options) -> Transformer:
    config = TransformerConfig(vocab_size=30, d_model=32, n_heads=4, n_layers=2, d_ff=48, dropout=0.0, max_len=24,
                               **options)
    torch.manual_seed(0)
    model = Transformer(config).eval()
    with torch.no_grad():  # norms and biases off their init, so a misplaced input shows
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    return model


def run(model, **kw):
    torch.manual_seed(1)
    src, tgt = torch.randint(4, 30, (2, 7)), torch.randint(4, 30, (2, 5))
    return model(src, tgt if model.config.arch == "encoder-decoder" else None, **kw)


def per_head(H):
    def receivers(site, x):
        if site.endswith((".q", ".k", ".v")):
            return x.unsqueeze(2).expand(-1, -1, H, -1)  # (B, T, D) -> (B, T, H, D): one copy per query head
        return x
    return receivers


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("case", CASES)
def test_receivers_giving_the_stream_back_change_nothing(case, need_weights):
    model = model_of(**CASES[case])
    base = run(model, need_weights=need_weights).logits
    same = run(model, need_weights=need_weights, receivers=lambda site, x: x).logits
    assert torch.equal(base, same)
    split = run(model, need_weights=need_weights, receivers=per_head(4)).logits
    assert torch.allclose(base, split, atol=1e-5, rtol=0)
    assert not torch.equal(base, run(model, need_weights=need_weights,
                                     receivers=lambda site, x: x * 1.5 if site.endswith(".k") else x).logits)


def test_the_sites_come_in_forward_order():
    model = model_of(**CASES["encoder-decoder"])
    seen = []

    def receivers(site, x):
        seen.append((site, tuple(x.shape)))
        return x

    run(model, receivers=receivers)
    enc = [(f"encoder.{l}.{r}", (2, 7, 32)) for l in range(2) for r in ("q", "k", "v", "mlp.in")]
    dec = [s for l in range(2) for s in [(f"decoder.{l}.q", (2, 5, 32)), (f"decoder.{l}.k", (2, 5, 32)),
                                          (f"decoder.{l}.v", (2, 5, 32)), (f"cross.{l}.q", (2, 5, 32)),
                                          (f"cross.{l}.k", (2, 7, 32)), (f"cross.{l}.v", (2, 7, 32)),
                                          (f"decoder.{l}.mlp.in", (2, 5, 32))]]
    assert seen == enc + [("encoder.final", (2, 7, 32))] + dec + [("decoder.final", (2, 5, 32))]


@pytest.mark.parametrize("role", ["q", "k", "v"])
@pytest.mark.parametrize("case", ["decoder", "gqa", "encoder-decoder"])
def test_one_heads_own_input_changes_that_head_only(case, role):
    model = model_of(**CASES[case])
    kind = "cross" if case == "encoder-decoder" else "decoder"
    H, head = 4, 1

    def receivers(site, x):
        if site == f"{kind}.1.{role}":
            x = x.unsqueeze(2).expand(-1, -1, H, -1).clone()
            # head 1 alone reads a changed input: different at each position (the same shift of every key would
            # leave the softmax as it is) and not a multiple (the norm would take it back)
            x[:, :, head] += torch.randn(x.shape[1], x.shape[-1], generator=torch.Generator().manual_seed(2))
        return x

    base, changed = Record(), Record()
    run(model, record=base)
    run(model, record=changed, receivers=receivers)
    z, z2 = base[f"{kind}.1.z"], changed[f"{kind}.1.z"]  # (B, H, T, Dh)
    others = [h for h in range(H) if h != head]
    assert torch.allclose(z[:, others], z2[:, others], atol=1e-5)
    assert not torch.allclose(z[:, head], z2[:, head], atol=1e-3)


def test_under_grouped_query_attention_a_query_head_reads_its_kv_heads_weights():
    model = model_of(**CASES["gqa"])
    base = run(model).logits
    # every query head of K/V head 0 (query heads 0 and 1) given its own (equal) key input: the same model
    split = run(model, receivers=lambda s, x: x.unsqueeze(2).expand(-1, -1, 4, -1) if s.endswith(".k") else x).logits
    assert torch.allclose(base, split, atol=1e-5, rtol=0)


def test_the_final_site_is_what_the_lm_head_reads():
    model = model_of(**CASES["decoder"])
    shift = torch.randn(32)
    out = run(model, receivers=lambda s, x: x + shift if s == "decoder.final" else x)
    base = run(model)
    stream = base.hidden_states.decoder[-1]  # the last layer's output, before the final norm
    want = model.generator.logits(model.decoder.norm(stream + shift))
    assert torch.allclose(out.logits, want, atol=1e-5)


def test_a_wrong_shape_or_a_cache_is_refused_in_words():
    model = model_of(**CASES["decoder"])
    with pytest.raises(ValueError, match="receivers must return the k input"):
        run(model, receivers=lambda s, x: x[:, :3] if s.endswith(".k") else x)
    with pytest.raises(ValueError, match=r"per-head input must be \(B, T, H=4, D\)"):
        run(model, receivers=lambda s, x: x.unsqueeze(2).expand(-1, -1, 3, -1) if s.endswith(".q") else x)
    with pytest.raises(ValueError, match="mlp.in"):
        run(model, receivers=lambda s, x: x[..., :5] if s.endswith("mlp.in") else x)
    with pytest.raises(ValueError, match="receivers must return x shaped"):
        run(model, receivers=lambda s, x: x[:, :2] if s.endswith("final") else x)
    with pytest.raises(ValueError, match="do not decode with a cache"):
        model(torch.randint(4, 30, (1, 5)), cache=DecoderCache(2), receivers=lambda s, x: x)

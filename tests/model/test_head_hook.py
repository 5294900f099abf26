"""The per-call head hook: it sees every attention block's z (B, H, T, Dh) before the head mask and W_o,
on both attention paths; returning z unchanged changes nothing, replacing it acts like editing z by hand."""

import pytest
import torch

from explorer.model import Transformer, TransformerConfig


def model_of(arch: str, **options) -> Transformer:
    config = TransformerConfig(arch=arch, vocab_size=30, d_model=32, n_heads=4, n_layers=2, d_ff=48, dropout=0.0,
                               max_len=16, **options)
    return Transformer(config).eval()


def run(model, src, tgt, **kw):
    return model(src, tgt if model.config.arch == "encoder-decoder" else None, **kw)


@pytest.mark.parametrize("arch", ["decoder", "encoder-decoder", "encoder"])
def test_hook_sees_every_block_and_identity_changes_nothing(arch):
    model = model_of(arch)
    src, tgt = torch.randint(4, 30, (2, 7)), torch.randint(4, 30, (2, 5))
    seen = []

    def hook(kind, layer, z):
        seen.append((kind, layer, tuple(z.shape)))
        return z

    base = run(model, src, tgt)
    hooked = run(model, src, tgt, head_hook=hook)
    assert torch.equal(base.last_hidden_state, hooked.last_hidden_state)
    want = {"decoder": [("decoder", 0, (2, 4, 7, 8)), ("decoder", 1, (2, 4, 7, 8))],
            "encoder": [("encoder", 0, (2, 4, 7, 8)), ("encoder", 1, (2, 4, 7, 8))],
            "encoder-decoder": [("encoder", 0, (2, 4, 7, 8)), ("encoder", 1, (2, 4, 7, 8)),
                                ("decoder", 0, (2, 4, 5, 8)), ("cross", 0, (2, 4, 5, 8)),
                                ("decoder", 1, (2, 4, 5, 8)), ("cross", 1, (2, 4, 5, 8))]}[arch]
    assert seen == want


@pytest.mark.parametrize("options", [{}, {"n_kv_heads": 2, "positional": "rotary"}], ids=["mha", "gqa-rotary"])
def test_zero_through_the_hook_is_the_head_toggle_on_both_paths(options):
    model = model_of("decoder", **options)
    ids = torch.randint(4, 30, (2, 9))
    mask = torch.ones(2, 2, 4)  # (B, L, H)
    mask[1, 1, 2] = 0.0  # row 1, layer 1, head 2 off

    def zero(kind, layer, z):
        if layer == 1:
            z = z.clone()
            z[1, 2] = 0.0
        return z

    toggled = model(ids, head_mask={"decoder": mask}).logits
    for need_weights in (True, False):
        hooked = model(ids, head_hook=zero, need_weights=need_weights).logits
        torch.testing.assert_close(hooked, toggled, rtol=0, atol=1e-6)


def test_a_hook_returning_the_wrong_shape_is_refused():
    model = model_of("decoder")
    with pytest.raises(ValueError, match="head_hook must return z shaped"):
        model(torch.randint(4, 30, (1, 5)), head_hook=lambda kind, layer, z: z[:, :2])

"""Activation patching equals a manual loop (one full forward per head, z replaced by hand through the
model's head_hook); patching everything that differs restores the clean metric exactly; residual patches
of identical values change nothing; decoder-only (MHA, GQA + rotary), a GPT-2 import and an
encoder-decoder (self- and cross-attention heads)."""

from __future__ import annotations

import pytest
import torch

from explorer.interpret.patching import Patching, activation_patching
from explorer.model import Transformer, TransformerConfig

V = 40


def built(arch: str = "decoder", **options) -> Transformer:
    torch.manual_seed(0)
    config = TransformerConfig(arch=arch, vocab_size=V, d_model=32, n_heads=4, n_layers=3, d_ff=64, dropout=0.0,
                               max_len=16, norm_first=True, **options)
    model = Transformer(config).eval()
    with torch.no_grad():  # matrices larger than their init: earlier tokens change the prediction
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.9 * p.shape[-1] ** -0.5)
    return model.double()  # float64: the batched and the manual runs agree to 1e-9, so 1e-6 is a real check


CLEAN = torch.tensor([5, 9, 12, 7, 20, 11, 8])
CORRUPTED = torch.tensor([5, 9, 30, 7, 20, 11, 8])  # differs at position 2 only; same last token


def differing(model, clean=CLEAN, position=2):
    """The corrupted run: clean with another token at `position`, the first one whose top prediction differs."""
    top = int(last_logits(model, clean).argmax())
    for token in range(4, V):
        corrupted = clean.clone()
        corrupted[position] = token
        if int(last_logits(model, corrupted).argmax()) != top:
            return corrupted
    raise AssertionError("no corruption changes the prediction")


@torch.no_grad()
def last_logits(model, tokens, src=None, hook=None):
    if src is None:
        return model(tokens[None], head_hook=hook).logits[0, -1]
    return model(src[None], tokens[None], head_hook=hook).logits[0, -1]


def clean_z(model, tokens, src=None) -> dict:
    z = {}

    def keep(kind, layer, heads):
        z[(kind, layer)] = heads
        return heads

    last_logits(model, tokens, src, keep)
    return z


def replacing(z_clean: dict, which: set):
    """A head hook putting the clean z of the (kind, layer, head) in `which` into the run."""
    def hook(kind, layer, z):
        heads = [h for k, l, h in which if (k, l) == (kind, layer)]
        if heads:
            z = z.clone()
            z[:, heads] = z_clean[(kind, layer)][:, heads]
        return z
    return hook


def manual_share(model, p: Patching, which: set, clean=CLEAN, corrupted=CORRUPTED, src=None) -> float:
    z = clean_z(model, clean, None if src is None else src[0])
    logits = last_logits(model, corrupted, None if src is None else src[1], replacing(z, which))
    metric = float(logits[p.answers[0]] - logits[p.answers[1]])
    return (metric - p.corrupted) / (p.clean - p.corrupted)


def check_against_manual_loop(model, p: Patching, kind: str, table: torch.Tensor, clean=CLEAN, corrupted=CORRUPTED,
                              src=None):
    L, H = table.shape
    want = torch.tensor([[manual_share(model, p, {(kind, layer, head)}, clean, corrupted, src) for head in range(H)]
                         for layer in range(L)])
    torch.testing.assert_close(table, want, rtol=0, atol=1e-6)


@pytest.mark.parametrize("options", [{}, {"n_kv_heads": 2, "positional": "rotary"}], ids=["mha", "gqa-rotary"])
def test_decoder_only_equals_a_manual_loop_and_restores_exactly(options):
    model = built(**options)
    corrupted = differing(model)
    p = activation_patching(model, CLEAN, corrupted)
    assert p.heads.shape == (3, 4) and p.residual.shape == (4, 7) and p.cross is None and p.stack == "decoder"
    clean_logits, corrupted_logits = last_logits(model, CLEAN), last_logits(model, corrupted)
    assert p.answers == (int(clean_logits.argmax()), int(corrupted_logits.argmax())) and p.answers[0] != p.answers[1]
    assert p.clean == pytest.approx(float(clean_logits[p.answers[0]] - clean_logits[p.answers[1]]), abs=1e-6)
    corrupted_metric = float(corrupted_logits[p.answers[0]] - corrupted_logits[p.answers[1]])
    assert p.corrupted == pytest.approx(corrupted_metric, abs=1e-6)
    check_against_manual_loop(model, p, "decoder", p.heads, CLEAN, corrupted)
    assert (p.heads.abs() > 0.01).sum() > 3  # not a degenerate case
    # every head's z at every layer from the clean run: the last position sees only clean values
    everything = {("decoder", layer, head) for layer in range(3) for head in range(4)}
    assert manual_share(model, p, everything, CLEAN, corrupted) == pytest.approx(1.0, abs=1e-6)
    # residual: the embeddings differ at position 2 only; the last position of the output is the answer
    torch.testing.assert_close(p.residual[0], torch.eye(7)[2], rtol=0, atol=1e-6)
    torch.testing.assert_close(p.residual[-1], torch.eye(7)[6], rtol=0, atol=1e-6)
    torch.testing.assert_close(p.residual[:, :2], torch.zeros(4, 2), rtol=0, atol=1e-6)  # before the change: same


def test_batch_size_does_not_change_the_result():
    model = built()
    corrupted = differing(model)
    a = activation_patching(model, CLEAN, corrupted, batch_size=64)
    b = activation_patching(model, CLEAN[None], corrupted[None], batch_size=1)  # (1, T) accepted too
    torch.testing.assert_close(a.heads, b.heads, rtol=0, atol=1e-6)
    torch.testing.assert_close(a.residual, b.residual, rtol=0, atol=1e-6)


def test_given_answers_and_the_messages():
    model = built()
    p = activation_patching(model, CLEAN, CORRUPTED, answers=(3, 4))
    assert p.answers == (3, 4)
    check_against_manual_loop(model, p, "decoder", p.heads)
    with pytest.raises(ValueError, match="clean has 7, corrupted has 6"):
        activation_patching(model, CLEAN, CORRUPTED[:6])
    with pytest.raises(ValueError, match="same next token"):
        activation_patching(model, CLEAN, CLEAN.clone())
    with pytest.raises(ValueError, match="outside the vocabulary"):
        activation_patching(model, CLEAN, CORRUPTED, answers=(3, V))
    with pytest.raises(ValueError, match="nothing to restore"):
        activation_patching(model, CLEAN, CLEAN.clone(), answers=(3, 4))
    with pytest.raises(ValueError, match="src"):
        activation_patching(model, CLEAN, CORRUPTED, src=(CLEAN, CORRUPTED))


def test_encoder_decoder_self_and_cross_heads():
    model = built("encoder-decoder")
    tgt = torch.tensor([2, 14, 15, 16])  # the same decoder input in both runs
    src = (torch.tensor([6, 7, 8, 9, 10]), torch.tensor([6, 7, 30, 9, 10]))  # the sources differ
    first, second = last_logits(model, tgt, src[0]).topk(2).indices.tolist()
    p = activation_patching(model, tgt, tgt.clone(), src=src, answers=(first, second))  # both runs predict `first`
    assert p.heads.shape == p.cross.shape == (3, 4) and p.residual.shape == (4, 4)
    check_against_manual_loop(model, p, "decoder", p.heads, tgt, tgt, src)
    check_against_manual_loop(model, p, "cross", p.cross, tgt, tgt, src)
    everything = {("cross", layer, head) for layer in range(3) for head in range(4)}
    assert manual_share(model, p, everything, tgt, tgt, src) == pytest.approx(1.0, abs=1e-6)
    # layer 0's self-attention reads only the (identical) decoder input: nothing to restore there
    torch.testing.assert_close(p.heads[0], torch.zeros(4), rtol=0, atol=1e-6)
    torch.testing.assert_close(p.residual[0], torch.zeros(4), rtol=0, atol=1e-6)
    torch.testing.assert_close(p.residual[-1], torch.eye(4)[3], rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="src"):
        activation_patching(model, tgt, tgt)


def test_gpt2_import(tmp_path):
    pytest.importorskip("transformers")
    from tests.importers.test_gpt2 import gpt2_case

    model = gpt2_case(tmp_path).loaded.model.double()
    clean, corrupted = torch.tensor([40, 41, 42, 43, 44, 45]), torch.tensor([40, 99, 42, 43, 44, 45])
    answers = (int(last_logits(model, clean).argmax()), int(last_logits(model, corrupted).argsort()[-2]))
    p = activation_patching(model, clean, corrupted, answers=answers)
    assert p.heads.shape == (2, 6)
    check_against_manual_loop(model, p, "decoder", p.heads, clean, corrupted)
    torch.testing.assert_close(p.residual[0], torch.eye(6)[1], rtol=0, atol=1e-4)
    torch.testing.assert_close(p.residual[-1], torch.eye(6)[5], rtol=0, atol=1e-4)

"""Tiny models built in the test for the circuit tests (a from-scratch decoder, a GPT-NeoX-like parallel-residual
one, a grouped-query one with rotary positions and RMSNorm, an encoder-decoder), and a task of prompt pairs for each:
the corrupted prompt is the clean one with one token changed."""

from __future__ import annotations

import torch

from explorer.interpret.circuits import make_task
from explorer.model import Transformer, TransformerConfig

CASES = {
    "decoder": dict(arch="decoder", activation="gelu"),
    "neox": dict(arch="decoder", parallel_residual=True, positional="rotary", rotary_fraction=0.5, activation="gelu"),
    "gqa": dict(arch="decoder", n_kv_heads=2, positional="rotary", norm="rmsnorm", mlp="gated", activation="silu"),
    "encoder-decoder": dict(arch="encoder-decoder", activation="gelu"),
}


def tiny_model(case: str, seed: int = 0, scale: float = 0.1) -> Transformer:
    config = TransformerConfig(vocab_size=30, d_model=32, n_heads=4, n_layers=2, d_ff=48, dropout=0.0, max_len=24,
                               norm_first=True, **CASES[case])
    torch.manual_seed(seed)
    model = Transformer(config).eval()
    with torch.no_grad():  # norms and biases off their init, so a misplaced edge shows
        for p in model.parameters():
            p.add_(torch.randn_like(p) * scale)
    return model


def linear_regime(model: Transformer, shrink: float = 0.02) -> Transformer:
    """The token embeddings drawn in towards their mean: a changed token moves the embeddings a little, so every
    node's change is small and EAP's first-order estimate is near the exact effect."""
    tables = {id(e.token.weight): e.token.weight for e in (model.src_embed, model.tgt_embed) if e is not None}
    with torch.no_grad():
        for weight in tables.values():
            weight.copy_(weight.mean(0) + shrink * (weight - weight.mean(0)))
    return model


def tiny_task(model: Transformer, n: int = 6, seed: int = 1, changed: int = 2):
    """n pairs of 6-7 tokens; the corrupted prompt differs at position `changed`; answers 5, wrong answers 6."""
    g = torch.Generator().manual_seed(seed)
    clean = torch.randint(7, 30, (n, 7), generator=g)
    corrupted = clean.clone()
    corrupted[:, changed] = torch.randint(7, 30, (n,), generator=g)
    lengths = [6 + i % 2 for i in range(n)]
    tgt = torch.randint(7, 30, (n, 4), generator=g) if model.config.arch == "encoder-decoder" else None
    return make_task([c[:k].tolist() for c, k in zip(clean, lengths)],
                     [c[:k].tolist() for c, k in zip(corrupted, lengths)], [5] * n, [6] * n, tgt)

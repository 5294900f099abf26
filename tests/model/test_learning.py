"""A small encoder-decoder learns to reverse digit strings, exactly, on sequences it never saw."""

import torch

from explorer.outputs.generate import generate
from explorer.model import Transformer, TransformerConfig

PAD, BOS, EOS, FIRST_DIGIT = 0, 1, 2, 3


def batch(generator, size, min_len=3, max_len=7):
    """src: digits EOS PAD..., tgt: BOS reversed-digits EOS PAD... (right-padded)."""
    lengths = torch.randint(min_len, max_len + 1, (size, 1), generator=generator)
    digits = torch.randint(FIRST_DIGIT, FIRST_DIGIT + 10, (size, max_len), generator=generator)
    pos = torch.arange(max_len + 1)[None, :]
    padded = torch.cat([digits, torch.zeros(size, 1, dtype=torch.long)], 1)
    src = torch.where(pos < lengths, padded, torch.where(pos == lengths, EOS, PAD))
    # reversed: position j holds digit (n - 1 - j)
    rev_index = (lengths - 1 - pos).clamp(min=0)
    reversed_digits = padded.gather(1, rev_index)
    body = torch.where(pos < lengths, reversed_digits, torch.where(pos == lengths, EOS, PAD))
    tgt = torch.cat([torch.full((size, 1), BOS), body], 1)
    return src, tgt


def test_reverse_task_is_learned_to_100_percent_on_held_out_sequences():
    torch.manual_seed(0)
    config = TransformerConfig(arch="encoder-decoder", vocab_size=13, d_model=32, n_heads=4, n_layers=2,
                               d_ff=64, dropout=0.0, max_len=16, norm_first=True, positional="sinusoidal")
    model = Transformer(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=3e-3, total_steps=500, pct_start=0.1)
    train_gen = torch.Generator().manual_seed(1)
    seen = set()
    model.train()
    for _ in range(500):
        src, tgt = batch(train_gen, 64)
        seen.update(tuple(row.tolist()) for row in src)
        logits = model(src, tgt[:, :-1], need_weights=False).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 13), tgt[:, 1:].reshape(-1), ignore_index=PAD)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
    model.eval()
    src, tgt = batch(torch.Generator().manual_seed(999), 300)
    held_out = [i for i, row in enumerate(src) if tuple(row.tolist()) not in seen]
    assert len(held_out) >= 200  # short sequences are often seen in training
    out = generate(model, src[held_out], bos_id=BOS, eos_id=EOS, max_new_tokens=9)
    expected = tgt[held_out, 1:]
    produced = torch.nn.functional.pad(out.tokens, (0, expected.shape[1] - out.tokens.shape[1]), value=PAD)
    accuracy = (produced == expected).all(dim=1).float().mean().item()
    assert accuracy == 1.0, f"exact-match accuracy {accuracy:.3f}"

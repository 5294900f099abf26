"""The repeated-token probe: seeded, distinct, no special tokens, induction defined exactly on the copies;
copy losses read the right positions."""

import pytest
import torch
import torch.nn.functional as F

from explorer.interpret.probe import copy_losses, probe_vocabulary, repeated_tokens
from explorer.interpret.roles import role_patterns
from explorer.model import Transformer, TransformerConfig
from explorer.tokenizer import train_tokenizer


@pytest.fixture(scope="module")
def word_tokenizer():
    words = [f"w{i}" for i in range(40)]
    return train_tokenizer([" ".join(words)], kind="wordlevel", vocab_size=100,
                           special_tokens=("[PAD]", "[UNK]", "[BOS]", "[EOS]"))


def test_probe_is_seeded_distinct_and_free_of_special_tokens(word_tokenizer):
    vocab = probe_vocabulary(word_tokenizer)
    assert len(vocab) == 40 and not {0, 1, 2, 3} & set(vocab.tolist())
    probe = repeated_tokens(word_tokenizer, span=10, repeats=3, batch=4, seed=7)
    assert probe.ids.shape == (4, 1 + 30) and (probe.ids[:, 0] == word_tokenizer.bos_id).all()
    assert torch.equal(probe.ids, repeated_tokens(word_tokenizer, span=10, repeats=3, batch=4, seed=7).ids)
    assert not torch.equal(probe.ids, repeated_tokens(word_tokenizer, span=10, repeats=3, batch=4, seed=8).ids)
    for row in probe.ids:
        span = row[1:11]
        assert len(set(span.tolist())) == 10 and torch.equal(row[11:21], span) and torch.equal(row[21:], span)
    assert probe.induction_positions.tolist() == list(range(11, 31))
    assert probe.first_copy_positions.tolist() == list(range(1, 11))
    # induction is defined exactly at the probe's induction positions
    defined = role_patterns(probe.ids)["induction"].any(-1)
    assert defined[:, 11:].all() and not defined[:, :11].any()
    assert repeated_tokens(word_tokenizer, span=3, prefix=[]).ids.shape == (1, 6)
    assert probe_vocabulary(word_tokenizer, vocab_size=10).tolist() == list(range(4, 10))
    with pytest.raises(ValueError, match="do not fit"):
        repeated_tokens(word_tokenizer, span=41)


def test_copy_losses_average_the_next_token_loss_over_each_copy(word_tokenizer):
    config = TransformerConfig(arch="decoder", vocab_size=44, d_model=32, n_heads=4, n_layers=2, d_ff=64,
                               dropout=0.0, max_len=32)
    model = Transformer(config).eval()
    probe = repeated_tokens(word_tokenizer, span=6, batch=3, seed=1)  # [BOS] + 6 + 6 tokens
    off = {"decoder": torch.tensor([[1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0]])}
    for head_mask in (None, off):
        got = copy_losses(model, probe, head_mask=head_mask)
        logits = model(probe.ids, head_mask=head_mask).logits
        loss = [[F.cross_entropy(logits[b, t], probe.ids[b, t + 1]).item() for t in range(12)] for b in range(3)]
        per_position = torch.tensor(loss).mean(0)  # query t predicts token t+1
        torch.testing.assert_close(got.per_position, per_position, rtol=0, atol=1e-5)
        assert got.first == pytest.approx(per_position[1:7].mean().item(), abs=1e-5)  # queries on the first copy
        assert got.repeated == pytest.approx(per_position[7:12].mean().item(), abs=1e-5)  # second copy, not the last
    assert copy_losses(model, probe, head_mask=off).repeated != copy_losses(model, probe).repeated
    encoder_decoder = Transformer(TransformerConfig(arch="encoder-decoder", vocab_size=44, d_model=32, n_heads=4,
                                                    d_ff=64, max_len=32)).eval()
    with pytest.raises(ValueError, match="decoder-only"):
        copy_losses(encoder_decoder, probe)

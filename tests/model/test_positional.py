import math

import pytest
import torch

from explorer.model import Transformer, TransformerConfig, sinusoidal_table


@pytest.mark.parametrize("d_model", [8, 7, 1, 33])
@pytest.mark.parametrize("base", [10000.0, 100.0])
def test_sinusoidal_table_matches_the_formula(d_model, base):
    table = sinusoidal_table(50, d_model, base)
    assert table.shape == (50, d_model)
    for pos in (0, 1, 7, 49):
        for dim in range(d_model):
            two_i = dim - dim % 2
            angle = pos / base ** (two_i / d_model)
            expected = math.sin(angle) if dim % 2 == 0 else math.cos(angle)
            assert table[pos, dim].item() == pytest.approx(expected, abs=1e-6)


def test_embeddings_add_positions_and_scale():
    config = TransformerConfig(arch="encoder", vocab_size=20, d_model=8, n_heads=2, dropout=0.0,
                               scale_embeddings=True, max_len=16)
    model = Transformer(config)
    ids = torch.tensor([[3, 4, 5]])
    x = model.src_embed(ids)
    expected = model.src_embed.token.weight[ids] * math.sqrt(8) + torch.from_numpy(sinusoidal_table(16, 8)[:3]).float()
    assert torch.allclose(x, expected)


def test_learned_and_none_positions():
    learned = Transformer(TransformerConfig(arch="encoder", vocab_size=20, d_model=8, n_heads=2,
                                            positional="learned", max_len=16, dropout=0.0))
    assert learned.src_embed.position_matrix().shape == (16, 8)
    none = Transformer(TransformerConfig(arch="encoder", vocab_size=20, d_model=8, n_heads=2,
                                         positional="none", dropout=0.0))
    ids = torch.tensor([[3, 3]])
    x = none.src_embed(ids)
    assert torch.equal(x[0, 0], x[0, 1])  # without positions, equal tokens embed equally


def test_too_long_input_is_refused_with_a_clear_message():
    model = Transformer(TransformerConfig(arch="encoder", vocab_size=20, d_model=8, n_heads=2, max_len=4))
    with pytest.raises(ValueError, match="longer than max_len=4"):
        model(torch.ones(1, 5, dtype=torch.long))

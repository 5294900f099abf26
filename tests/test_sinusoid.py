"""explorer.sinusoid: the one sinusoidal table, its layouts and bad arguments; the model's buffer and the
figures' table are this function's values."""

import numpy as np
import pytest
import torch

from explorer import viz
from explorer.model import Transformer, TransformerConfig
from explorer.sinusoid import sinusoidal_table


@pytest.mark.parametrize("d_model", [8, 7, 1])
def test_split_layout_holds_the_interleaved_columns(d_model):
    interleaved, split = sinusoidal_table(40, d_model), sinusoidal_table(40, d_model, layout="split")
    sines = (d_model + 1) // 2
    assert interleaved.dtype == split.dtype == np.float64 and split.shape == (40, d_model)
    assert np.array_equal(split[:, :sines], interleaved[:, 0::2])
    assert np.array_equal(split[:, sines:], interleaved[:, 1::2])


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="d_model"):
        sinusoidal_table(4, 0)
    with pytest.raises(ValueError, match="layout"):
        sinusoidal_table(4, 4, layout="spiral")
    assert sinusoidal_table(0, 4).shape == (0, 4)


@pytest.mark.parametrize("layout", ["interleaved", "split"])
def test_model_buffer_and_figures_use_this_table(layout):
    config = TransformerConfig(arch="encoder", vocab_size=20, d_model=12, n_heads=2, max_len=32, pos_base=500.0,
                               sinusoid_layout=layout)
    buffer = Transformer(config).src_embed.position_table
    assert buffer.dtype == torch.float32
    assert torch.equal(buffer, torch.from_numpy(sinusoidal_table(32, 12, 500.0, layout)).float())
    assert viz.sinusoidal_table is sinusoidal_table

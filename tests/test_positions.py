"""explorer.positions: each scheme's numbers come from the model's own position code and weights (learned tables
from position 0 past BART's / RoBERTa's offset rows, Marian's split sinusoid, rotary frequencies after scaling and
the score of a fixed query and key by distance, T5's bias per head and distance), and positional_figures names the
scheme and returns its figures."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.checkpoints import LoadedModel
from explorer.model import Transformer, TransformerConfig
from explorer.model.rotary import inverse_frequencies
from explorer.positions import (EXPLANATIONS, position_tables, positional_figures, relative_bias, rotary_frequencies,
                                rotary_scores, scheme_of)
from explorer.tokenizer import train_tokenizer

BASE = dict(vocab_size=20, d_model=32, n_heads=4, n_layers=1, d_ff=32, dropout=0.0, max_len=40)


def loaded(**kw) -> LoadedModel:
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(**{**BASE, **kw})).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.5)
    return LoadedModel(model, train_tokenizer(["a b"], "wordlevel"), None, {}, "test")


def test_learned_tables_skip_the_offset_rows():
    bart = loaded(arch="encoder-decoder", positional="learned", position_offset=2)
    tables = position_tables(bart.model, 30)
    assert set(tables) == {"encoder", "decoder"}
    assert np.array_equal(tables["encoder"], bart.model.src_embed.position.weight[2:32].detach().numpy())
    assert np.array_equal(tables["decoder"], bart.model.tgt_embed.position.weight[2:32].detach().numpy())
    figs = positional_figures(bart, 30)
    assert figs.scheme == "learned" and figs.explanation == EXPLANATIONS["learned"]
    assert list(figs.figures) == ["encoder similarity", "encoder table", "decoder similarity", "decoder table"]


def test_sinusoid_in_the_models_layout():
    marian = loaded(arch="encoder-decoder", positional="sinusoidal", sinusoid_layout="split")
    table = position_tables(marian.model, 40)["encoder"]
    angles = np.arange(40)[:, None] / 10000 ** (np.arange(0, 32, 2) / 32)
    assert np.allclose(table, np.concatenate([np.sin(angles), np.cos(angles)], axis=1), atol=1e-6)
    assert list(positional_figures(marian).figures) == ["encoder similarity", "encoder table"]


@pytest.mark.parametrize("scaling", [None, {"rope_type": "linear", "factor": 4.0}])
def test_rotary_numbers(scaling):
    config = TransformerConfig(**BASE, arch="decoder", positional="rotary", rotary_fraction=0.5, pos_base=500.0,
                               rope_scaling=scaling)
    freq = rotary_frequencies(config)
    assert np.allclose(freq, inverse_frequencies(config).numpy())
    distances, scores = rotary_scores(config, 30)
    assert distances.tolist() == list(range(31)) and scores[0] == pytest.approx(1.0)
    # q = k = ones on the R rotating dimensions: q.R(d)k = sum over pairs of 2 cos(d * angle), divided by R
    assert np.allclose(scores, np.cos(distances[:, None] * freq[None]).mean(-1), atol=1e-5)
    figs = positional_figures(LoadedModel(Transformer(config), None, None, {}, "test"), 30)
    assert figs.scheme == "rotary" and "4 of 8 dimensions per head rotate, base (rope_theta) 500" in figs.explanation
    assert list(figs.figures) == ["frequencies", "distance"]


def test_relative_bias_is_the_models_own_bias():
    t5 = loaded(arch="encoder-decoder", positional="relative", relative_buckets=8, relative_max_distance=12,
                norm_first=True)
    assert scheme_of(t5.config) == "relative"
    for stack, bidirectional in (("encoder", True), ("decoder", False)):
        distances, bias = relative_bias(t5.model, stack, 15)
        assert distances[0] == -15 and distances[-1] == (15 if bidirectional else 0)
        full = getattr(t5.model, stack).relative_bias(40, 40)[0].detach()  # (H, T, T) what the model adds
        query = 20
        for j, d in enumerate(distances):
            assert torch.equal(torch.from_numpy(bias[:, j]), full[:, query, query + d])
    figs = positional_figures(t5, 64)
    assert list(figs.figures) == ["encoder bias", "decoder bias"]
    assert "8 buckets" in figs.figures["encoder bias"].layout.title.text


def test_no_positions():
    figs = positional_figures(loaded(arch="encoder", positional="none"))
    assert figs.scheme == "none" and figs.figures == {}

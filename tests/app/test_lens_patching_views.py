"""The logit-lens and activation-patching tabs (explorer.app.run.view.lens / .patching): what they read, their
summaries, and the messages (never a traceback) when a model or the sentences do not fit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from explorer.app.serving.errors import AppError
from explorer.app.tabs.lens import first_layer_on_top, lens_markdown, lens_view
from explorer.app.tabs.patching import patching_view
from explorer.interpret import LogitLens


def hand_lens(ranks: list[int]) -> LogitLens:
    n = len(ranks)  # L + 1 rows, one position
    rank = torch.tensor(ranks).view(n, 1, 1)
    return LogitLens(torch.zeros(n, 1, 1, dtype=torch.long), torch.ones(n, 1, 1), torch.zeros(1, 1, dtype=torch.long),
                     torch.full((n, 1, 1), 0.25), rank, torch.zeros(1, 1, 5))


def test_first_layer_on_top_and_summary():
    assert first_layer_on_top(hand_lens([5, 0, 3, 0, 0])) == 3  # on top from row 3 (layer 2's output) on
    assert first_layer_on_top(hand_lens([0, 0, 0])) == 0  # already the embeddings' top token
    assert first_layer_on_top(hand_lens([4, 1, 0])) == 2
    md = lens_markdown(hand_lens([5, 0, 3, 0, 0]), ["a", "<b>"], "x*")
    assert "the output of layer 2 on" in md and "5, 0, 3, 0, 0" in md and "p = 0.250" in md
    assert "&lt;b&gt;" in md and "x\\*" in md  # token text escaped


def test_lens_refuses_an_encoder(app):
    _, loaded = app.build("encoder")
    with pytest.raises(AppError, match="encoder without a next-token output"):
        lens_view(loaded, app.DATE1, 1024)


def test_patching_messages(app):
    _, encoder = app.build("encoder")
    with pytest.raises(AppError, match="this is an encoder"):
        patching_view(encoder, app.DATE1, app.DATE2, "", "", 1024)
    _, gpt = app.load("date-gpt")
    with pytest.raises(AppError, match="second box"):
        patching_view(gpt, app.DATE1, "  ", "", "", 1024)
    # prompt + the answers' common prefix: 24 + 3 against 12 + 3 tokens (the messages count what the model reads)
    with pytest.raises(AppError, match=r"Sentence 1 has 28 tokens and sentence 2 has 15: .* same number"):
        patching_view(gpt, app.DATE1, app.DATE2, "", "", 1024)
    with pytest.raises(AppError, match="clean answer: 'May' is 3 tokens"):
        patching_view(gpt, "3 May 2024", "4 May 2024", "May", "", 1024)


def test_patching_a_sequence_model_where_its_answers_part(app):
    """date-gpt on two dates of the same length: both read prompt + the answers' common prefix "2024-05-0", and
    the default answers are the two runs' next tokens, "3" and "4"."""
    _, gpt = app.load("date-gpt")
    fig, md = patching_view(gpt, "3 May 2024", "4 May 2024", "", "", 1024)
    assert "logit(3) − logit(4)" in md and "clean **" in md
    heads, residual = fig.data[0], fig.data[-1]
    assert np.asarray(heads.z).shape == (4, 4) and np.asarray(residual.z).shape[0] == 5
    assert np.asarray(residual.z).shape[1] == len(residual.x) == 1 + 10 + 1 + 9  # [BOS] 3 May 2024 [SEP] 2024-05-0
    fig2, md2 = patching_view(gpt, "3 May 2024", "4 May 2024", "#19", "", 1024)  # a typed id for the clean answer
    assert "logit(" in md2 and md2 != md


def test_lens_on_a_sequence_model_and_an_encoder_decoder(app):
    for name in ("date-gpt", "date-translator"):
        _, loaded = app.load(name)
        fig, md = lens_view(loaded, app.DATE1, 1024)
        assert "the model predicts **\\[EOS\\]**" in md  # after the whole answer: the end
        grid = fig.data[0]
        assert np.asarray(grid.z).shape == (loaded.config.decoder_layers + 1, len(grid.x))
        assert grid.text[-1][-1].startswith("[EO")  # the output row's top token


def test_the_patching_headline_names_the_best_head_of_every_kind():
    """On date-translator the head that restores most is a cross-attention head: the headline names it (it once named
    the best self-attention head, with 0.00 of the difference, and the cross head on a line of its own)."""
    import explorer

    loaded = explorer.load("date-translator", "cpu")
    _, md = patching_view(loaded, "lundi 3 mars 2025", "lundi 3 juin 2025", "", "", 1024)
    headline = md.split("\n\n")[1]
    assert "**cross-attention L1 H1** (0.23 of the difference)" in headline, md
    assert "Cross-attention:" not in md

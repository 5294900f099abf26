"""Typed text as the interpretation tabs read it (explorer.app.run.readings): the sentence as typed for encoders,
the model's own greedy answer for sequence models, the answers' common prefix for patching; answer tokens."""

from __future__ import annotations

import pytest

from explorer.app.run.inputs import codec_for, encode_inputs
from explorer.app.run.readings import common_prefix, read_texts, token_id
from explorer.app.serving.errors import AppError


def test_encoder_reads_the_sentence_as_typed(app):
    _, loaded = app.build("encoder")
    (reading,) = read_texts(loaded, app.DATE1, None, 1024)
    inputs = encode_inputs(loaded, codec_for(loaded), app.DATE1, None, 1024)
    assert reading.src == inputs.rows[0] and reading.tgt is None
    assert reading.decoder_ids == reading.src and len(reading.src_labels) == len(reading.src)


def test_encoder_decoder_reads_its_answer_and_patching_the_common_prefix(app):
    _, loaded = app.load("date-translator")
    (own,) = read_texts(loaded, app.DATE1, None, 1024)
    assert "".join(own.tgt_labels) == "[BOS]2026-11-21"  # the answer without its end token
    clean, corrupted = read_texts(loaded, app.DATE1, app.DATE2, 1024, common_answer=True)
    assert clean.tgt == corrupted.tgt and clean.tgt_labels == ["[BOS]", "2", "0", "2"]  # 2026-11-21 vs 2024-05-03
    assert clean.src != corrupted.src
    src, tgt = clean.tensors("cpu")
    assert tuple(src.shape) == (1, len(clean.src)) and tuple(tgt.shape) == (1, 4)


def test_decoder_only_sequence_model_reads_prompt_and_answer(app):
    _, loaded = app.load("date-gpt")
    clean, corrupted = read_texts(loaded, app.DATE1, app.DATE2, 1024, common_answer=True)
    assert clean.tgt is None and clean.src_labels[-4:] == ["[SEP]", "2", "0", "2"]
    assert corrupted.src_labels[-4:] == ["[SEP]", "2", "0", "2"]


def test_common_prefix():
    assert common_prefix([1, 2, 3], [1, 2, 4, 5]) == [1, 2] and common_prefix([1], [2]) == [] \
        and common_prefix([1, 2], [1, 2]) == [1, 2]


def test_answer_tokens(app):
    _, loaded = app.load("date-gpt")
    assert token_id(loaded, "", "clean answer") is None and token_id(loaded, "  ", "x") is None
    seven = token_id(loaded, "7", "clean answer")  # a digit alone is the digit's token; "#7" is id 7
    codec = codec_for(loaded)
    assert codec.labels([seven]) == ["7"] and token_id(loaded, "#7", "x") == 7
    assert codec.labels([token_id(loaded, "M", "clean answer")]) == ["M"]
    assert codec.labels([token_id(loaded, "␣", "x")]) == ["␣"]  # the token table's label of a space
    with pytest.raises(AppError, match="clean answer: 'May' is 3 tokens"):
        token_id(loaded, "May", "clean answer")
    with pytest.raises(AppError, match="outside the vocabulary"):
        token_id(loaded, "#99999", "corrupted answer")

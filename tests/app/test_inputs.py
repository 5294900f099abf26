"""Text -> model input (explorer.app.run.inputs): cleaning, caps with notices, readable labels, the token table."""

from __future__ import annotations

import pytest

from explorer.app.run.inputs import DateCodec, TokenizerCodec, clean_texts, codec_for, encode_inputs, token_table
from explorer.app.serving.errors import AppError
from explorer.app.serving.limits import MAX_CHARS
from explorer.app.serving.session import MINILM


def test_clean_texts():
    assert clean_texts("  a  ", "  ") == (["a"], [])
    texts, notices = clean_texts("x" * (MAX_CHARS + 5), "b\ud800")
    assert len(texts[0]) == MAX_CHARS and texts[1] == "b\ufffd"  # lone surrogates become U+FFFD
    assert notices == [f"Sentence 1 has {MAX_CHARS + 5:,} characters; only the first {MAX_CHARS:,} are used."]
    with pytest.raises(AppError, match="empty"):
        clean_texts(" \n", "second")


def test_date_models_use_their_task(app):
    _, loaded = app.build()
    codec = codec_for(loaded)
    assert isinstance(codec, DateCodec)
    inputs = encode_inputs(loaded, codec, "3 May", None, 128)
    assert inputs.labels[0] == ["3", "␣", "M", "a", "y", "[EOS]"]
    padded = inputs.padded(loaded.config.pad_id)
    assert padded.shape == (1, 6)


def test_tokenizer_models_get_readable_labels_not_raw_tokens(app):
    """MiniLM's WordPiece: labels come from the text through the offsets (case and accents kept)."""
    _, loaded = app.load(MINILM)
    codec = codec_for(loaded)
    assert isinstance(codec, TokenizerCodec)
    inputs = encode_inputs(loaded, codec, "Déjà vu, Émile!", "short", 128)
    raw = loaded.tokenizer.encode("Déjà vu, Émile!").tokens
    assert raw[1:3] == ["de", "##ja"] and raw[5] == "emile"  # the raw tokens are lowercased and unaccented
    assert inputs.labels[0][1:3] == ["Dé", "##jà"] and inputs.labels[0][5] == "Émile"
    assert inputs.padded_labels()[1][-1] == "[PAD]" and len(set(map(len, inputs.padded_labels()))) == 1
    headers, rows = token_table(inputs)
    assert headers == ["sentence", "position", "token", "id"] and rows[0] == [1, 0, "[CLS]", 101]


def test_token_cap_and_notice_name_both_numbers(app):
    """The input reaches the model up to its context (MiniLM: 512), or the app's cap if that is smaller."""
    _, loaded = app.load(MINILM)
    paragraph = "word " * 600
    inputs = encode_inputs(loaded, codec_for(loaded), paragraph, None, 1024)
    assert len(inputs.rows[0]) == 512
    assert inputs.notices == ["Sentence 1 has 602 tokens; only the first 512 are used (this model's context is 512 "
                              "tokens), so the rest was cut off."]
    capped = encode_inputs(loaded, codec_for(loaded), paragraph, None, 128)
    assert len(capped.rows[0]) == 128
    assert capped.notices == ["Sentence 1 has 602 tokens; only the first 128 are used (the app reads at most 128; the "
                              "model's context is 512), so the rest was cut off."]


def test_a_450_word_paragraph_reaches_the_model_whole(app):
    _, loaded = app.load(MINILM)
    paragraph = " ".join(["the cat sat on the mat and saw the birds"] * 45)  # 450 words
    inputs = encode_inputs(loaded, codec_for(loaded), paragraph, None, 1024)
    assert inputs.notices == [] and len(inputs.rows[0]) == 452  # every word one token, plus [CLS] and [SEP]


def test_decoder_prompts_leave_room_for_the_answer(app):
    from explorer.app.run.inputs import token_limit

    _, gpt = app.build("decoder", positional="learned")
    inputs = encode_inputs(gpt, codec_for(gpt), "1 " * 400, None, 128)
    assert len(inputs.rows[0]) <= 48  # the date task's own source limit
    assert "cut off" in inputs.notices[0]
    limit = token_limit(gpt, 1024)  # context 512, minus the task's 12-token answer
    assert limit.tokens == 500 and "12 are kept for the answer" in limit.why

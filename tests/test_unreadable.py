"""Words a model cannot read (explorer.unreadable), on every kind of tokenizer the repo has: the shipped models'
(induction-gpt's word-level t0..t299, the date models' characters), byte-level BPE (GPT-2 style), SentencePiece BPE
with byte fallback (Llama style), WordPiece (BERT style), SentencePiece Unigram without byte fallback (T5 style),
with odd Unicode: emoji, combining marks, right-to-left text, a lone surrogate, control characters. Each reported span
is checked against the text and against the token ids the model gets."""

from __future__ import annotations

import pytest

import explorer
from explorer.tokenizer import Tokenizer
from explorer.unreadable import Unread, check_text, reads_instead, unit_of, unreadable

from tests.importers.harness import byte_level_tokenizer, sentencepiece_tokenizer
from tests.importers.seq2seq_harness import unigram_metaspace_tokenizer, wordpiece_tokenizer

ODD = ["The cat sat 🚀 here", "naïve café e\u0301te", "שלום עולם", "\ud800 cat\x00dog", "日本 cat", "👍🏽 ok",
       "مرحبا بالعالم"]


@pytest.fixture(scope="module")
def induction():
    return explorer.load("induction-gpt", "cpu")


@pytest.fixture(scope="module")
def dates():
    return explorer.load("date-translator", "cpu")


@pytest.fixture(scope="module")
def hub_style() -> dict[str, Tokenizer]:
    return {"byte-level": Tokenizer(byte_level_tokenizer()), "byte fallback": Tokenizer(sentencepiece_tokenizer()),
            "wordpiece": Tokenizer(wordpiece_tokenizer()), "unigram": Tokenizer(unigram_metaspace_tokenizer())}


def spans_agree(tokenizer: Tokenizer, text: str, pieces: list[Unread]) -> None:
    """Each piece is the text at its span; an unknown piece is exactly where the tokenizer put its unknown token."""
    typed = text.replace("\ud800", "\ufffd")
    enc = tokenizer.encode(typed, add_special_tokens=False)
    unknown_chars = {i for (s, e), t in zip(enc.offsets, enc.ids) if t == tokenizer.unk_id for i in range(s, e)}
    for p in pieces:
        assert typed[p.start:p.end] == p.text and p.text.strip()
        inside = set(range(p.start, p.end))
        if p.kind == "unknown":
            assert inside <= unknown_chars
        else:  # dropped: no token covers it
            assert not any(s < p.end and p.start < e for s, e in enc.offsets if e > s)
    assert unknown_chars - {i for p in pieces for i in range(p.start, p.end)} <= {
        i for i, c in enumerate(typed) if c.isspace() or c == "\u00a0"}


def test_induction_gpt_names_every_word_and_what_it_reads(induction):
    text = "the cat sat on the mat the cat sat on the"
    check = check_text(induction.tokenizer, text, induction.task)
    assert [p.text for p in check.pieces] == text.split() and all(p.kind == "unknown" for p in check.pieces)
    assert [(p.start, p.end) for p in check.pieces][:2] == [(0, 3), (4, 7)]
    spans_agree(induction.tokenizer, text, check.pieces)
    assert check.unknown_token == "[UNK]" and check.unit == "word"
    assert check.reads == "the words t0 … t299 (300 words, separated by spaces)"
    assert check.notice(1) == ("Sentence 1: 11 words are not in this model's vocabulary and are read as [UNK]: “the”, "
                               "“cat”, “sat”, “on”, “mat”. This model reads the words t0 … t299 (300 words, separated "
                               "by spaces).")
    assert check_text(induction.tokenizer, "T5 t9 t299 t0", induction.task).notice() is None  # lowercased: read
    mixed = check_text(induction.tokenizer, "t1 t300 🙂 t2 [UNK]", induction.task)
    assert [p.text for p in mixed.pieces] == ["t300", "🙂"]  # "[UNK]" typed is the token itself, read


def test_induction_gpt_truncated_encoding_checks_only_what_is_kept(induction):
    text = "t1 cat t2 dog"
    enc = induction.tokenizer.encode(text, max_length=3)  # [BOS] t1 cat: "t2 dog" cut off
    pieces, _ = unreadable(induction.tokenizer, text, enc)
    assert [p.text for p in pieces] == ["cat"]


def test_date_models_name_characters_outside_their_alphabet(dates):
    tok, task = dates.tokenizer, dates.task
    assert check_text(tok, "lundi 3 mars 2025", task).pieces == []
    assert check_text(tok, "samedi 21\u00a0novembre\t2026", task).pieces == []  # space-like: read as a space
    assert check_text(tok, "e\u0301te\u0301 1999", task).pieces == []  # NFC composes é, which it has
    for text, expected in [("3 марта 2025", ["марта"]), ("🙂 3 mars 2025", ["🙂"]), ("٣ مارس", ["٣", "مارس"]),
                           ("\ud800 3 mars", ["\ufffd"]), ("3 mars 2025 👍🏽", ["👍🏽"])]:
        check = check_text(tok, text, task)
        assert [p.text for p in check.pieces] == expected, text
        spans_agree(tok, text, check.pieces)
    check = check_text(tok, "3 марта 2025", task)
    assert check.unit == "character" and check.notice().startswith(
        "5 characters are not in this model's vocabulary and are read as [UNK]: “марта”.")
    reads = reads_instead(tok, task)
    assert reads.startswith("dates in English, French, German, Spanish, Italian, Portuguese or Dutch, character by "
                            "character; its 130 characters: space ")
    assert "0–9 A–Z a–z" in reads and ",–" not in reads
    assert reads_instead(tok).startswith("its 130 characters")  # without the task: the characters alone


@pytest.mark.parametrize("text", ODD)
def test_byte_level_bpe_reads_everything(hub_style, text):
    tok = hub_style["byte-level"]
    check = check_text(tok, text)
    assert check.pieces == [] and check.spelled_in_bytes == [] and check.notice() is None
    assert check.reads == "any text: a character outside its vocabulary is spelled byte by byte"


@pytest.mark.parametrize("text", ODD)
def test_byte_fallback_reads_everything_and_tells_the_bytes(hub_style, text):
    tok = hub_style["byte fallback"]
    check = check_text(tok, text)
    assert check.pieces == [] and check.notice() is None
    typed = text.replace("\ud800", "\ufffd")
    enc = tok.encode(typed, add_special_tokens=False)
    byte_chars = {i for (s, e), t in zip(enc.offsets, enc.tokens) if t.startswith("<0x") for i in range(s, e)}
    assert {i for p in check.spelled_in_bytes for i in range(p.start, p.end)} == byte_chars
    for p in check.spelled_in_bytes:
        assert typed[p.start:p.end] == p.text and p.kind == "bytes"
    if "🚀" in text:
        assert "🚀" in [p.text for p in check.spelled_in_bytes]


@pytest.mark.parametrize("kind", ["wordpiece", "unigram"])
@pytest.mark.parametrize("text", ODD)
def test_subword_tokenizers_name_unknown_and_dropped_text(hub_style, kind, text):
    tok = hub_style[kind]
    check = check_text(tok, text)
    spans_agree(tok, text, check.pieces)
    assert check.unknown_token == ("[UNK]" if kind == "wordpiece" else "<unk>")
    assert check.unit == ("word" if kind == "wordpiece" else "character")
    if "🚀" in text or "日本" in text or "שלום" in text:
        assert any(p.kind == "unknown" for p in check.pieces) and check.notice() is not None


def test_wordpiece_drops_what_its_normaliser_removes(hub_style):
    """BERT's normaliser removes control characters and U+FFFD (the app's stand-in for a lone surrogate): dropped;
    a combining mark alone is stripped with the accents (uncased BERT) and shown on a dotted circle."""
    tok = hub_style["wordpiece"]
    check = check_text(tok, "\ud800 cat\x00dog a \u0301")
    assert [(p.text, p.start, p.kind) for p in check.pieces] == [("\ufffd", 0, "dropped"), ("\x00", 5, "dropped"),
                                                                ("\u0301", 12, "dropped")]
    assert "its tokenizer drops “�”, “<0x00>”, “◌́”, so the model never sees them" in check.notice().lower()
    assert check.reads == "words spelled with its 222 WordPiece pieces, lowercased"
    assert check_text(tok, "the cat [MASK] sat").pieces == []  # a special token typed in the text is read
    nothing = check_text(tok, "\x00\x01 \x02")  # no token at all
    assert [(p.text, p.start, p.kind) for p in nothing.pieces] == [("\x00\x01", 0, "dropped"), ("\x02", 3, "dropped")]
    assert check_text(hub_style["unigram"], "x").reads == "text spelled with its 181 SentencePiece pieces"


def test_a_notice_lists_at_most_eight_distinct_pieces(induction):
    text = " ".join(f"w{i}" for i in range(12)) + " w0"
    notice = check_text(induction.tokenizer, text, induction.task).notice(2)
    assert notice.startswith("Sentence 2: 13 words are not") and "“w7” and 4 more." in notice


def test_units(induction, dates, hub_style):
    assert unit_of(induction.tokenizer) == "word" and unit_of(dates.tokenizer) == "character"
    assert unit_of(hub_style["wordpiece"]) == "word" and unit_of(hub_style["unigram"]) == "character"

"""Readable token labels (explorer.labels): one path for encoded text and for bare ids, so a token
reads the same on the heatmap axes and in a list of generated tokens."""

from __future__ import annotations

import pytest

from explorer.labels import label_scheme, label_token, token_labels
from explorer.tokenizer import Tokenizer, train_tokenizer

from tests.importers.harness import byte_level_tokenizer, sentencepiece_tokenizer


@pytest.fixture(scope="module")
def gpt2_style() -> Tokenizer:
    return Tokenizer(byte_level_tokenizer())


@pytest.fixture(scope="module")
def llama_style() -> Tokenizer:
    return Tokenizer(sentencepiece_tokenizer()).with_bos("<s>")


def test_schemes_are_read_from_the_tokenizer(gpt2_style, llama_style):
    assert gpt2_style.scheme == "byte-level" and llama_style.scheme == "metaspace"
    assert train_tokenizer(["a b"], kind="wordpiece").scheme == "text"
    assert label_scheme(train_tokenizer(["a b"], kind="bpe").backend) == "byte-level"


@pytest.mark.parametrize("token, scheme, label", [
    ("Ġcat", "byte-level", "␣cat"), ("Ċ", "byte-level", "↵"), ("ĊĊ", "byte-level", "↵↵"), ("ĉ", "byte-level", "⇥"),
    ("cafÃ©", "byte-level", "café"), ("ðŁ", "byte-level", "<0xF0><0x9F>"), ("jÃ", "byte-level", "j<0xC3>"), ("▁cat", "metaspace", "␣cat"),
    ("<0x0A>", "metaspace", "↵"), ("<0xE2>", "metaspace", "<0xE2>"), ("##ing", "text", "##ing"),
])
def test_label_token(token, scheme, label):
    assert label_token(token, scheme) == label


def test_special_tokens_keep_their_string():
    assert label_token("<|endoftext|>", "byte-level", special=True) == "<|endoftext|>"


@pytest.mark.parametrize("text", ["The cat sat.\nA dog ran!", "  two spaces", "Déjà vu: naïve café", "tab\there"])
@pytest.mark.parametrize("style", ["gpt2_style", "llama_style"])
def test_same_label_for_encoded_text_and_bare_ids(text, style, request):
    tok = request.getfixturevalue(style)
    enc = tok.encode(text)
    labels, by_id = token_labels(enc, text), tok.labels(enc.ids)
    whole = ["<0x" not in label for label in by_id]  # tokens holding whole characters only
    assert [a for a, w in zip(labels, whole) if w] == [b for b, w in zip(by_id, whole) if w]
    assert all("<0x" not in a for a in labels)  # in text, a split character shows as itself
    assert not any(c in label for label in labels for c in " \n\t")  # whitespace is always visible
    assert "".join(labels).replace("␣", " ").replace("↵", "\n").replace("⇥", "\t").endswith(text[-3:])


def test_partial_characters_show_the_character_in_text_and_bytes_as_ids(gpt2_style):
    text = "🙂"  # four bytes; a small byte-level vocabulary splits it
    enc = gpt2_style.encode(text)
    if len(enc.ids) > 1:
        assert set(token_labels(enc, text)) == {"🙂"}
        assert all(label.startswith("<0x") for label in gpt2_style.labels(enc.ids))


def test_llama_newline_and_bos(llama_style):
    enc = llama_style.encode("a\nb\t")  # "\n" is in the small vocabulary, a tab only as a byte
    assert enc.tokens[0] == "<s>" and enc.special[0]
    assert enc.tokens == ["<s>", "▁", "a", "\n", "<0x62>", "<0x09>"]
    assert llama_style.labels(enc.ids) == ["<s>", "␣", "a", "↵", "b", "⇥"]


def test_with_bos_does_not_add_a_second_one(llama_style):
    again = llama_style.with_bos("<s>")
    assert again is llama_style and again.encode("a").ids.count(llama_style.bos_id) == 1
    with pytest.raises(ValueError, match="not in the vocabulary"):
        llama_style.with_bos("<bos>")


def test_control_characters_are_never_blank_labels():
    from explorer.labels import visible

    assert visible("a\x0bb\x0c\x1f\x7f\x85\r \n\t") == "a<0x0B>b<0x0C><0x1F><0x7F><0x85><0x0D>␣↵⇥"
    assert all(visible(chr(c)).strip() and visible(chr(c)).isprintable() for c in range(0x00, 0xA0))


def test_running_text_keeps_spaces():
    from explorer.labels import printable

    assert printable("a b\nc\td\x01") == "a b↵c⇥d<0x01>"


def test_occurrence_suffix_is_told_and_explained():
    from explorer.labels import OCCURRENCE_NOTE, has_occurrence_suffix, unique_labels

    assert has_occurrence_suffix(unique_labels(["the", "cat", "the"]))  # ["the", "cat", "the·2"]
    assert not has_occurrence_suffix(unique_labels(["the", "cat", "sat"]))
    assert not has_occurrence_suffix(["col·legi", "l·2"])  # a middle dot inside a token is not a suffix
    assert has_occurrence_suffix(unique_labels(["a", "a", "a·2"]))  # ["a", "a·3", "a·2"]
    assert has_occurrence_suffix(unique_labels(["", ""]))  # ["∅", "∅·2"]
    assert not has_occurrence_suffix([])
    assert "the·2" in OCCURRENCE_NOTE and "second" in OCCURRENCE_NOTE and "\n" not in OCCURRENCE_NOTE

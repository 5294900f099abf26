"""Marian's tokenizers (Helsinki-NLP/opus-mt-*): two SentencePiece models, `source.spm` for the text
to translate and `target.spm` for the translation, and one `vocab.json` giving every piece its model id.
Each side is converted once into a `tokenizers` Unigram tokenizer, so it encodes with offsets and
labels its tokens through the explorer's one labelling path (SentencePiece's "▁" shown as "␣").

What transformers' MarianTokenizer does, and this conversion reproduces:
- the side's SentencePiece model segments the text (its pieces, scores, normalisation rules: the
  precompiled character map, extra whitespace removed, "▁" prepended), then each piece gets its id
  from vocab.json (pieces missing from vocab.json become <unk>); "</s>" is appended.
- decoding maps ids to pieces through vocab.json and joins them ("▁" -> space).
The Unigram vocabulary is laid out in vocab.json's id order. A vocab.json piece the side's model does
not have (the other language's pieces of a shared vocabulary) must never be chosen when encoding:
- source side: such a piece is renamed with a trailing plain space, which no pre-tokenized word
  contains (Metaspace turns every space into "▁"), so the segmentation is exactly source.spm's; the
  source side never labels or decodes those ids. One difference remains: a character source.spm
  cannot segment is <unk> here, while MarianTokenizer looks its text up in vocab.json and finds it
  when the target model has it as a piece (a character of the other language);
- target side: the pieces keep their names, since decoding and labelling any generated id needs the
  true piece; they score far below every real piece, so they are chosen only where target.spm would
  emit <unk> (a character it cannot segment at all). Encoding target text differs from
  MarianTokenizer only there; decoding is the same for every id.

The .spm files are protobuf messages (sentencepiece_model.proto); the few fields needed are read
here with a small, bounds-checked wire-format reader, so loading needs neither protobuf nor
sentencepiece (the tests check the result against the sentencepiece library itself).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Iterator, NamedTuple

import tokenizers
from tokenizers import AddedToken, Regex, decoders, models, normalizers, pre_tokenizers, processors

from ..checkpoints import CheckpointError, describe
from ..tokenizer import Tokenizer
from .hf_config import HFConfig
from .model_files import ModelFiles


SPM_FILES = {"source": "source.spm", "target": "target.spm"}
VOCAB_FILE = "vocab.json"
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6  # SentencePiece.Type
FOREIGN_PENALTY = 100.0  # how far below the lowest real piece a piece of the other side's model scores


class Piece(NamedTuple):
    text: str
    score: float
    kind: int


class SpmModel(NamedTuple):
    pieces: list[Piece]
    charsmap: bytes  # NormalizerSpec.precompiled_charsmap (may be empty)
    add_dummy_prefix: bool
    remove_extra_whitespaces: bool
    split_by_whitespace: bool
    unsupported: list[str]  # trainer options this conversion does not reproduce


def fields(data: bytes, path: Path) -> Iterator[tuple[int, int, bytes | int]]:
    """(field number, wire type, value) of one protobuf message; value is an int (varint, fixed32) or bytes."""
    pos = 0

    def varint() -> int:
        nonlocal pos
        result = shift = 0
        while True:
            if pos >= len(data) or shift > 63:
                raise CheckpointError(f"{describe(path)} is not a SentencePiece model (bad protobuf varint)")
            byte = data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return result
    while pos < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            yield number, wire, varint()
        elif wire in (1, 5):  # fixed64 / fixed32
            size = 8 if wire == 1 else 4
            if pos + size > len(data):
                raise CheckpointError(f"{describe(path)} is truncated")
            yield number, wire, data[pos:pos + size]
            pos += size
        elif wire == 2:
            size = varint()
            if pos + size > len(data):
                raise CheckpointError(f"{describe(path)} is truncated")
            yield number, wire, data[pos:pos + size]
            pos += size
        else:
            raise CheckpointError(f"{describe(path)} is not a SentencePiece model (protobuf wire type {wire})")


def read_piece(data: bytes, path: Path) -> Piece:
    text, score, kind = "", 0.0, NORMAL
    for number, wire, value in fields(data, path):
        if number == 1 and wire == 2:
            text = value.decode("utf-8", errors="replace")
        elif number == 2 and wire == 5:
            score = struct.unpack("<f", value)[0]
        elif number == 3 and wire == 0:
            kind = value
    return Piece(text, score, kind)


def read_spm(data: bytes, path: Path) -> SpmModel:
    """The pieces and normalisation settings of a SentencePiece model file's bytes (`path` names it in messages)."""
    pieces, charsmap, flags, unsupported = [], b"", {3: True, 4: True, 22: True}, []
    for number, wire, value in fields(data, path):
        if number == 1 and wire == 2:
            pieces.append(read_piece(value, path))
        elif number == 2 and wire == 2:  # TrainerSpec
            for n, w, v in fields(value, path):
                if n == 3 and w == 0 and v != 1:
                    unsupported.append(f"model_type {v} (only unigram models are converted)")
                elif n == 22 and w == 0:
                    flags[22] = bool(v)
                elif n in (24, 25, 35) and w == 0 and v:
                    unsupported.append({24: "treat_whitespace_as_suffix", 25: "split_digits", 35: "byte_fallback"}[n])
        elif number == 3 and wire == 2:  # NormalizerSpec
            for n, w, v in fields(value, path):
                if n == 2 and w == 2:
                    charsmap = v
                elif n in (3, 4) and w == 0:
                    flags[n] = bool(v)
    if not pieces:
        raise CheckpointError(f"{describe(path)} is not a SentencePiece model (no pieces)")
    return SpmModel(pieces, charsmap, flags[3], flags[4], flags[22], unsupported)


def read_vocab(files: ModelFiles) -> dict[str, int]:
    path = files.path(VOCAB_FILE)
    vocab = files.json(VOCAB_FILE, "tokenizer")
    if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in vocab.values()):
        raise CheckpointError(f"{describe(path)} must map each piece to a non-negative integer id")
    if len(set(vocab.values())) != len(vocab):
        raise CheckpointError(f"{describe(path)} gives two pieces the same id")
    if "<unk>" not in vocab:
        raise CheckpointError(f"{describe(path)} has no <unk> piece")
    return vocab


def unigram_vocab(spm: SpmModel, vocab: dict[str, int], rename_foreign: bool) -> list[tuple[str, float]]:
    """(piece, score) in vocab.json's id order. Pieces `spm` lacks score far below its own; with
    `rename_foreign` they get a trailing space, which makes them unreachable (see the module docstring),
    as do the names of ids vocab.json skips."""
    scores = {p.text: p.score for p in spm.pieces if p.kind in (NORMAL, USER_DEFINED)}
    floor = min(scores.values(), default=0.0) - FOREIGN_PENALTY
    by_id = {i: piece for piece, i in vocab.items()}
    specials = {p for p in vocab if p.startswith("<") and p.endswith(">")}  # </s>, <unk>, <pad>: added tokens

    def entry(i: int) -> tuple[str, float]:
        if i not in by_id:
            return f"<unused id {i}> ", floor
        piece = by_id[i]
        if piece in scores or piece in specials or not rename_foreign:
            return piece, scores.get(piece, floor)
        return f"{piece} ", floor
    return [entry(i) for i in range(max(by_id) + 1)]


def marian_backend(spm: SpmModel, vocab: dict[str, int], eos: str, specials: list[str],
                   source: bool) -> tokenizers.Tokenizer:
    tk = tokenizers.Tokenizer(models.Unigram(unigram_vocab(spm, vocab, rename_foreign=source), unk_id=vocab["<unk>"],
                                             byte_fallback=False))
    steps = [normalizers.Precompiled(spm.charsmap)] if spm.charsmap else []
    if spm.remove_extra_whitespaces:
        steps += [normalizers.Strip(), normalizers.Replace(Regex(" {2,}"), " ")]
    if steps:
        tk.normalizer = normalizers.Sequence(steps)
    scheme = "always" if spm.add_dummy_prefix else "never"
    tk.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme=scheme, split=spm.split_by_whitespace)
    tk.decoder = decoders.Metaspace(replacement="▁", prepend_scheme=scheme)
    # language codes (>>de<<) are whole tokens, as MarianTokenizer keeps them out of SentencePiece
    codes = [p for p in vocab if p.startswith(">>") and p.endswith("<<")]
    tk.add_tokens([AddedToken(c, normalized=False) for c in codes])
    tk.add_special_tokens([AddedToken(s, normalized=False) for s in specials])
    tk.post_processor = processors.TemplateProcessing(single=f"$A {eos}", pair=f"$A $B {eos}",
                                                      special_tokens=[(eos, vocab[eos])])
    return tk


def load_marian_tokenizer(files: ModelFiles, cfg: HFConfig, side: str) -> tuple[Tokenizer, Path]:
    """The source or target tokenizer of a Marian model -> (Tokenizer, path of its .spm for messages)."""
    spm_path = files.path(SPM_FILES[side])
    vocab_path = files.path(VOCAB_FILE)
    tok_cfg_path = files.path("tokenizer_config.json")
    tok_cfg = files.json("tokenizer_config.json", "tokenizer") if files.has("tokenizer_config.json") else {}
    if tok_cfg.get("separate_vocabs"):
        raise CheckpointError(f"{describe(tok_cfg_path)}: separate source and target vocabularies "
                              f"(target_vocab.json) are not supported")
    spm = read_spm(files.data(SPM_FILES[side], "tokenizer"), spm_path)
    if spm.unsupported:
        raise CheckpointError(f"{describe(spm_path)} uses {', '.join(spm.unsupported)}, which the explorer does not "
                              f"reproduce")
    vocab = read_vocab(files)
    roles = {"eos": "</s>", "unk": "<unk>", "pad": "<pad>"}
    for role, key in (("eos", "eos_token"), ("unk", "unk_token"), ("pad", "pad_token")):
        if isinstance(tok_cfg.get(key), str):
            roles[role] = tok_cfg[key]
    missing = [t for t in roles.values() if t not in vocab]
    if missing:
        raise CheckpointError(f"{describe(vocab_path)} lacks the special token(s) {', '.join(missing)}")
    backend = marian_backend(spm, vocab, roles["eos"], [roles["eos"], roles["pad"], roles["unk"]], side == "source")
    return Tokenizer(backend, specials=roles), spm_path



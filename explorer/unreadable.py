"""Words a model cannot read: the parts of a typed text that reach the model as its unknown token, or not at all,
and one line saying what the model reads instead.

What counts, per kind of tokenizer:

    word-level (induction-gpt: t0 .. t299)   a word outside the vocabulary becomes [UNK]
    character-level (the date models)        a character outside the alphabet becomes [UNK]; a space-like character
                                             (no-break space, tab, ...) is read as a space (the date tasks normalise
                                             spaces first), so it is never reported
    WordPiece (BERT family)                  a word it cannot spell from its pieces becomes [UNK], whole
    SentencePiece / BPE without byte fallback a character outside the vocabulary becomes <unk> (T5, Marian)
    SentencePiece with byte fallback (Llama) never unknown: a character outside the vocabulary is spelled byte by
                                             byte (<0xF0><0x9F>...). That is read (lossless, and what the model saw in
                                             training), so it is not in the notice; `ReadCheck.spelled_in_bytes` lists
                                             such characters for a page that wants to show it
    byte-level BPE (GPT-2, GPT-NeoX, Qwen2)  never unknown: every byte has a token

and for every kind: a character the tokenizer's normaliser drops (BERT's drops control characters and U+FFFD, the
replacement the app puts for a lone surrogate) is not read at all ("dropped"). Spans are Python str indices into
the text as typed (`Tokenizer.encode`'s offsets); lone surrogates are replaced by U+FFFD first, one for one, as the
app does before tokenizing, so the spans still index the typed text.

    check_text(tokenizer, text, task=None, encoding=None) -> ReadCheck(pieces, reads, ...); .notice(sentence)
    unreadable(tokenizer, text, encoding=None, spaces_read=False) -> [Unread]
    reads_instead(tokenizer, task=None) -> "the words t0 … t299 (300 words, separated by spaces)"
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .labels import visible
from .tokenizer import Encoding, Tokenizer

Kind = Literal["unknown", "dropped", "bytes"]
DATE_TASKS = ("date-translation", "date-gpt")  # character models that read every space-like character as a space
_SURROGATES = re.compile("[\ud800-\udfff]")
_SPACE_LIKE = re.compile(r"[\s\u00a0\u202f\u2007\u2009\u200a]")  # explorer.training.dates normalises these to " "
_BYTE_PIECE = re.compile(r"^<0x[0-9A-Fa-f]{2}>$")
_NUMBERED = re.compile(r"^(\D*?)(\d+)$")  # t17 -> ("t", "17")
_LANGUAGES = re.compile(r"((?:[A-Z][a-z]+, )+[A-Z][a-z]+,? (?:or|and) [A-Z][a-z]+)")  # "English, French ... or Dutch"
MAX_LISTED = 8  # distinct pieces named in a notice


@dataclass(frozen=True)
class Unread:
    """One stretch of the typed text the model does not read."""

    text: str  # the characters as typed
    start: int  # span in the text (str indices)
    end: int
    kind: Kind  # "unknown": read as the unknown token; "dropped": no token at all; "bytes": spelled byte by byte


@dataclass(frozen=True)
class ReadCheck:
    """What a typed text loses on its way into one model."""

    pieces: list[Unread]  # in text order; adjacent unknown characters form one piece
    reads: str  # one line: what the model reads instead ("the words t0 … t299 (300 words, separated by spaces)")
    unknown_token: str | None  # "[UNK]", "<unk>"; None for a tokenizer without one
    unit: str  # "word" (word-level, WordPiece: a whole word becomes the unknown token) or "character"
    spelled_in_bytes: list[Unread] = field(default_factory=list)  # read byte by byte (byte fallback): not unread

    def notice(self, sentence: int | None = None) -> str | None:
        """One plain-text line naming the unread parts and what the model reads instead; None when all is read."""
        if not self.pieces:
            return None
        parts = []
        unknown = [p for p in self.pieces if p.kind == "unknown"]
        dropped = [p for p in self.pieces if p.kind == "dropped"]
        if unknown:
            token = self.unknown_token or "its unknown token"
            # a run of unknown characters is one piece; a character model reads (and loses) each of them
            n = sum(len(p.text) for p in unknown) if self.unit == "character" else len(unknown)
            verb = "is" if n == 1 else "are"
            parts.append(f"{_count(n, self.unit)} {verb} not in this model's vocabulary and {verb} read as {token}: "
                         f"{_listed(unknown)}")
        if dropped:
            parts.append(f"its tokenizer drops {_listed(dropped)}, so the model never sees "
                         f"{'it' if len(dropped) == 1 else 'them'}")
        lead = "" if sentence is None else f"Sentence {sentence}: "
        text = "; ".join(parts)
        return f"{lead}{text[0].upper()}{text[1:]}. This model reads {self.reads}."


def _count(n: int, unit: str) -> str:
    return f"{n} {unit}{'' if n == 1 else 's'}"


def _listed(pieces: list[Unread]) -> str:
    """“the”, “cat”, … : distinct texts in order, at most MAX_LISTED, made visible (a tab as ⇥)."""
    # a combining mark alone is shown on a dotted circle, the typographic convention (else it sits on the quote)
    distinct = list(dict.fromkeys(("◌" if unicodedata.combining(p.text[0]) else "") + visible(p.text)
                                  for p in pieces))
    shown = ", ".join(f"“{t}”" for t in distinct[:MAX_LISTED])
    return shown + (f" and {len(distinct) - MAX_LISTED} more" if len(distinct) > MAX_LISTED else "")


# ----------------------------------------------------------------------------------------------- the tokenizer
def _model_kind(tokenizer: Tokenizer) -> str:
    """"WordLevel", "WordPiece", "BPE" or "Unigram" (read from the class, not the model's JSON: a 50k-token BPE's JSON
    takes tens of milliseconds to write)."""
    return type(tokenizer.backend.model).__name__


def _plain_vocab(tokenizer: Tokenizer) -> list[str]:
    """The vocabulary without special tokens, in id order."""
    vocab = tokenizer.backend.get_vocab(with_added_tokens=False)
    special = tokenizer.special_ids
    return [t for t, i in sorted(vocab.items(), key=lambda kv: kv[1]) if i not in special]


def _is_characters(tokenizer: Tokenizer) -> bool:
    return _model_kind(tokenizer) == "WordLevel" and all(len(t) == 1 for t in _plain_vocab(tokenizer))


def unit_of(tokenizer: Tokenizer) -> str:
    """"word" or "character": what one unknown token stands for. Word-level and WordPiece tokenizers turn a whole word
    into it; character and subword tokenizers (SentencePiece, BPE) a run of characters."""
    kind = _model_kind(tokenizer)
    return "word" if kind == "WordPiece" or (kind == "WordLevel" and not _is_characters(tokenizer)) else "character"


def _ranges(chars: list[str]) -> str:
    """Characters in code-point order, runs of three or more of one kind (letters of one case, digits) as a range:
    "space , - . / 0–9 A–Z a–z"."""
    codes = sorted({ord(c) for c in chars if c != " "})
    out, start = ["space"] if " " in chars else [], 0
    for i in range(1, len(codes) + 1):
        if i == len(codes) or codes[i] != codes[i - 1] + 1 or \
                unicodedata.category(chr(codes[i])) != unicodedata.category(chr(codes[i - 1])):  # a–z, never ,–9
            run = [visible(chr(c)) for c in codes[start:i]]
            out += [f"{run[0]}–{run[-1]}"] if len(run) >= 3 else run
            start = i
    return " ".join(out)


def _words(words: list[str]) -> str:
    numbered = [_NUMBERED.match(w) for w in words]
    if words and all(numbered) and len({m.group(1) for m in numbered}) == 1:
        numbers = sorted(int(m.group(2)) for m in numbered)
        if numbers == list(range(numbers[0], numbers[0] + len(numbers))):
            prefix = numbered[0].group(1)
            return (f"the words {prefix}{numbers[0]} … {prefix}{numbers[-1]} ({len(words):,} words, separated by "
                    "spaces)")
    if len(words) <= 12:
        return "the words " + ", ".join(words) + " (separated by spaces)"
    return f"the {len(words):,} words of its vocabulary (e.g. {', '.join(words[:5])}), separated by spaces"


def reads_instead(tokenizer: Tokenizer, task: Mapping[str, Any] | None = None) -> str:
    """One line: what this model reads, from its tokenizer's vocabulary (and, for the date models, the languages its
    task describes)."""
    kind = _model_kind(tokenizer)
    if _is_characters(tokenizer):
        vocab = _plain_vocab(tokenizer)
        chars = f"its {len(vocab)} characters: {_ranges(vocab)}"
        found = _LANGUAGES.search(str((task or {}).get("description", "")))
        return f"dates in {found.group(1)}, character by character; {chars}" if found else chars
    if kind == "WordLevel":
        return _words(_plain_vocab(tokenizer))
    if tokenizer.scheme == "byte-level" or getattr(tokenizer.backend.model, "byte_fallback", False):
        return "any text: a character outside its vocabulary is spelled byte by byte"
    ids = set(tokenizer.backend.get_vocab(with_added_tokens=False).values())
    size = len(ids - tokenizer.special_ids)
    state = "" if tokenizer.backend.normalizer is None else json.dumps(json.loads(
        tokenizer.backend.normalizer.__getstate__()))
    lowercase = '"type": "Lowercase"' in state or '"lowercase": true' in state
    what = "words spelled with its" if kind == "WordPiece" else "text spelled with its"
    pieces = "WordPiece pieces" if kind == "WordPiece" else "SentencePiece pieces" if kind == "Unigram" else "pieces"
    return f"{what} {size:,} {pieces}{', lowercased' if lowercase else ''}"


# ----------------------------------------------------------------------------------------------- the text
def unreadable(tokenizer: Tokenizer, text: str, encoding: Encoding | None = None, *,
               spaces_read: bool = False) -> tuple[list[Unread], list[Unread]]:
    """(unread pieces, pieces spelled byte by byte) of `text`. encoding: the text's encoding as the model got it
    (`tokenizer.encode(text, ...)`, truncated or not: only what it kept is checked); None encodes the whole text.
    spaces_read: space-like characters are read as a space (the date tasks), never unknown."""
    text = _SURROGATES.sub("\ufffd", text)
    enc = tokenizer.encode(text, add_special_tokens=False) if encoding is None else encoding
    unk = tokenizer.unk_id
    unk_text = None if unk is None else tokenizer.id_to_token(unk)
    unknown, spelled, covered = [], [], []
    for i, (start, end) in enumerate(enc.offsets):
        if end <= start:  # a special token the template added
            continue
        covered.append((start, end))  # a special token typed in the text ([MASK]) is read: covered, never unknown
        if enc.special[i]:
            continue
        if enc.ids[i] == unk and text[start:end] != unk_text:  # "[UNK]" typed as such is what it reads
            unknown.append((start, end))
        elif tokenizer.scheme == "metaspace" and _BYTE_PIECE.match(enc.tokens[i]):
            spelled.append((start, end))
    pieces = [Unread(text[s:e], s, e, "unknown") for s, e in _merge(unknown, text, spaces_read)]
    # Characters no token covers were dropped by the normaliser: look up to the end, or (a cut text) what was kept.
    last = max((e for _, e in covered), default=0) if enc.truncated else len(text)
    gaps, at = [], 0
    for s, e in sorted(covered) + [(last, last)]:
        gaps += [(i, i + 1) for i in range(at, s) if not _SPACE_LIKE.match(text[i])]
        at = max(at, e)
    pieces += [Unread(text[s:e], s, e, "dropped") for s, e in _merge(gaps, text, False)]
    pieces.sort(key=lambda p: p.start)
    return pieces, [Unread(text[s:e], s, e, "bytes") for s, e in _merge(spelled, text, False)]


def _merge(spans: list[tuple[int, int]], text: str, spaces_read: bool) -> list[tuple[int, int]]:
    """Touching or overlapping spans as one; with spaces_read, space-like characters are taken out first."""
    if spaces_read:
        spans = [(i, i + 1) for s, e in spans for i in range(s, e) if not _SPACE_LIKE.match(text[i])]
    out: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def check_text(tokenizer: Tokenizer, text: str, task: Mapping[str, Any] | None = None,
               encoding: Encoding | None = None) -> ReadCheck:
    """What of `text` one model cannot read, and what it reads instead. task: the model's task dict (a date task reads
    space-like characters as spaces; its description names the languages); encoding: as in `unreadable`."""
    spaces_read = (task or {}).get("name") in DATE_TASKS
    pieces, spelled = unreadable(tokenizer, text, encoding, spaces_read=spaces_read)
    unk = tokenizer.unk_id
    return ReadCheck(pieces, reads_instead(tokenizer, task), None if unk is None else tokenizer.id_to_token(unk),
                     unit_of(tokenizer), spelled)

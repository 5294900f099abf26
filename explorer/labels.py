"""Readable token labels for plot axes, hover text and tables: one path for every tokenizer.

`label_token(token, scheme, special, span)` is the one labelling rule. `token_labels(encoding, text)`
applies it to encoded text (where the user's own characters are at hand through the offsets) and
`Tokenizer.labels(ids)` to bare ids (generated tokens, top-k lists), so a token gets the same
label in both places.

How a token string spells its text depends on the tokenizer ("scheme", read from tokenizer.json):

    "byte-level"  GPT-2, GPT-NeoX, Qwen2: each byte is a printable character (Ġ = space, Ċ = newline);
                  "Ġcat" is " cat" -> label "␣cat", "Ċ" -> "↵".
    "metaspace"   SentencePiece (Llama, Mistral): "▁" is a space, <0x0A> a byte; "▁cat" -> "␣cat",
                  "<0x0A>" -> "↵".
    "text"        WordPiece, word-level, character tokenizers: the token is its text; labels then
                  show the user's own characters (cased, accented: a lowercased "deja" shows "Déjà"),
                  keeping WordPiece's "##" so word boundaries stay visible.

Whitespace is always made visible (␣ space, ↵ newline, ⇥ tab), other control characters as <0x0D>. Special tokens
keep their token string ([CLS], <|endoftext|>). A byte-level token holding part of a multi-byte
character (emoji split in two) has no text of its own: inside encoded text it shows the whole
character its span covers; as a bare id it shows its whole characters and the stray bytes: <0xF0><0x9F>,
j<0xC3>. That is the one case where the two labels of a token differ.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    import tokenizers

Scheme = Literal["byte-level", "metaspace", "text"]


class Encoded(Protocol):
    """What labelling reads of an encoded text (explorer.tokenizer.Encoding is one)."""

    tokens: Sequence[str]
    offsets: Sequence[tuple[int, int]]  # (start, end) into the text; (0, 0) for added specials
    special: Sequence[bool]
    scheme: Scheme
# Whitespace made visible in plot labels (a plain space is an invisible tick label).
# Marks common fonts have (DejaVu draws U+2423 and the arrows, but not the other Control Pictures).
_VISIBLE_WS = {" ": "␣", "\n": "↵", "\t": "⇥"}
# byte-level / metaspace spellings
_BYTE_MARKERS = {"Ġ": "␣", "Ċ": "↵", "ĉ": "⇥", "č": "<0x0D>", "▁": "␣"}
_BYTE_TOKEN = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")  # SentencePiece byte fallback: <0x0A> is byte 10


def _byte_alphabet() -> dict[str, int]:
    """GPT-2's bytes_to_unicode, inverted: printable character -> the byte it stands for."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    chars = [chr(b) for b in printable] + [chr(256 + n) for n in range(len(others))]
    return dict(zip(chars, printable + others))


_BYTE_OF = _byte_alphabet()


def _types(node: object) -> set[str]:
    """Every "type" in a tokenizers component's JSON (Sequence components nest others)."""
    if isinstance(node, dict):
        found = {node["type"]} if isinstance(node.get("type"), str) else set()
        return found.union(*(_types(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_types(v) for v in node))
    return set()


def label_scheme(tk: tokenizers.Tokenizer) -> Scheme:
    """Which spelling a tokenizers.Tokenizer's token strings use, from its pre-tokenizer and decoder."""
    parts: set[str] = set()
    for component in (tk.pre_tokenizer, tk.decoder, tk.normalizer):
        if component is not None:
            parts |= _types(json.loads(component.__getstate__()))
    if "ByteLevel" in parts:
        return "byte-level"
    if {"Metaspace", "ByteFallback"} & parts or getattr(tk.model, "byte_fallback", False):
        return "metaspace"
    return "text"


def visible(text: str) -> str:
    """Space, newline and tab as ␣ ↵ ⇥; every other control character (C0, DEL, C1) as its code, <0x0D>, so no
    label is blank, invisible or a box the font cannot draw."""
    return "".join(_VISIBLE_WS.get(c) or _control_code(c) for c in text)


def printable(text: str) -> str:
    """Running text for one line of the page: spaces kept, newline and tab as ↵ ⇥, other controls as <0x0D>."""
    return "".join(c if c == " " else _VISIBLE_WS.get(c) or _control_code(c) for c in text)


def _control_code(c: str) -> str:
    code = ord(c)
    return f"<0x{code:02X}>" if code < 0x20 or 0x7F <= code <= 0x9F else c


def token_bytes(token: str, scheme: Scheme) -> bytes | None:
    """The bytes a byte-level or metaspace token stands for; None for a plain (text) token."""
    if scheme == "byte-level":
        if not all(c in _BYTE_OF for c in token):
            return None  # an added token ("<|im_start|>") is spelled as itself
        return bytes(_BYTE_OF[c] for c in token)
    if scheme == "metaspace":
        byte = _BYTE_TOKEN.match(token)
        return bytes([int(byte.group(1), 16)]) if byte else token.replace("▁", " ").encode("utf-8")
    return None


def readable_bytes(raw: bytes) -> str:
    """UTF-8 text, with each byte that is not part of a whole character shown as <0xNN>."""
    text = raw.decode("utf-8", errors="surrogateescape")  # stray byte b -> U+DC00 + b
    return "".join(f"<0x{ord(c) - 0xDC00:02X}>" if 0xDC80 <= ord(c) <= 0xDCFF else c for c in text)


def label_token(token: str, scheme: Scheme, special: bool = False, span: str | None = None) -> str:
    """The label of one token. `span` is the text its offsets cover in the user's input, if known."""
    if special:
        return token
    raw = token_bytes(token, scheme)
    if raw is not None:
        try:
            return visible(raw.decode("utf-8"))
        except UnicodeDecodeError:  # part of a multi-byte character
            return visible(span) if span else visible(readable_bytes(raw))
    if not span:  # no text of its own in the input (e.g. an empty span): its markers made visible
        return "".join(_BYTE_MARKERS.get(c, c) for c in token)
    if token.startswith("##") and len(token) > 2 and not span.startswith("##"):
        span = "##" + span
    return visible(span) if span.isspace() else span


def token_labels(encoding: Encoded, text: str) -> list[str]:
    """Label per token of an encoded text (see the module docstring); labels may repeat (a word used
    twice): :func:`unique_labels` makes them distinct if needed."""
    return [label_token(tok, encoding.scheme, special, text[start:end] if end > start else None)
            for tok, (start, end), special in zip(encoding.tokens, encoding.offsets, encoding.special)]


# One line for a figure or page that shows `unique_labels`' names, so "the·2" is not read as a token of its own.
OCCURRENCE_NOTE = "the·2 = the second “the” in the sentence: a repeated token gets its occurrence number after a dot"
_OCCURRENCE = re.compile(r"^(.+)·(\d+)$")


def has_occurrence_suffix(labels: Sequence[object]) -> bool:
    """Whether `unique_labels` gave any label of this list an occurrence suffix ("the·2"): a label ending in ·N whose
    text before the dot is also in the list (the first occurrence keeps its text), so a token that merely contains a
    middle dot (Catalan "l·l") does not count."""
    names = set(map(str, labels))
    return any((m := _OCCURRENCE.match(name)) is not None and m.group(1) in names for name in names)


def occurrence_note(labels: Sequence[object]) -> str | None:
    """The `OCCURRENCE_NOTE` for the first suffixed label of `labels` (`unique_labels`' names), in its own words:
    "“2·2” in the figures = the 2nd “2” of the sequence."; None when no label has a suffix."""
    names = set(map(str, labels))
    for name in map(str, labels):
        m = _OCCURRENCE.match(name)
        if m is not None and m.group(1) in names:
            n = int(m.group(2))
            nth = f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"
            return f"“{name}” in the figures = the {nth} “{m.group(1)}” of the sequence."
    return None


def unique_labels(labels: Sequence[object]) -> list[str]:
    """Distinct, unescaped names for a category axis (Plotly merges equal category labels): the first
    occurrence keeps its text, later ones get a middle dot and their occurrence count, and a name never
    collides with a real label elsewhere in the list. A blank label is made visible (the empty one as ∅).

    ``["the", "cat", "the", "the"]`` -> ``["the", "cat", "the·2", "the·3"]``; ``["", " "]`` -> ``["∅", "␣"]``.
    """
    raw = [s if s.strip() else visible(s) or "∅" for s in map(str, labels)]
    taken = set(raw)  # a generated name must not collide with a real label appearing later
    used: set[str] = set()
    counts: Counter[str] = Counter()
    out: list[str] = []
    for label in raw:
        counts[label] += 1
        name, k = label, counts[label]
        while name in used or (name != label and name in taken):
            name = f"{label}·{k}"
            k += 1
        used.add(name)
        out.append(name)
    return out

"""A thin wrapper on Hugging Face ``tokenizers``: load, train, encode with offsets, label tokens.

The heavy lifting (normalisation, pre-tokenisation, models, offsets alignment, special-token
templates) is ``tokenizers``'; this module fixes a few choices for the explorer:

- ``encode`` returns a small dataclass with character offsets into the *original* text (Python
  ``str`` indices), a special-token flag per token, and whether/how much truncation happened.
- Truncation and padding are per call, never state on the shared ``tokenizers.Tokenizer``
  (a web app serves several users with one tokenizer); settings stored in a tokenizer.json are
  switched off on load.
- ``train_tokenizer`` builds word-level, WordPiece, byte-level BPE or character-level tokenizers
  from an iterator of texts; special tokens come first, so ``[PAD]`` gets id 0.
- Labels for plot axes, tables and hover come from one path, ``label_token``, used for encoded text
  (``token_labels``, which can fall back on the user's own text: cased, accented) and for bare ids
  (``Tokenizer.labels``, e.g. generated tokens), so one token gets one label. Byte-level BPE
  (GPT-2, GPT-NeoX, Qwen2: ``Ġcat``) and SentencePiece-style tokens (Llama, Mistral: ``▁cat``,
  ``<0x0A>``) show their text with whitespace made visible: ``␣cat``, ``↵``.

Shapes: B batch, T tokens (after padding, the longest sequence of the batch).
"""

from __future__ import annotations

import bisect
import os
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from typing import Literal

import tokenizers
from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers, processors, trainers

from .labels import Scheme, label_scheme, label_token, token_labels, unique_labels  # noqa: F401 (re-exported)

Kind = Literal["wordlevel", "wordpiece", "bpe", "char"]
ROLES = ("pad", "unk", "bos", "eos", "cls", "sep")
# Token strings recognised for each role when a tokenizer is loaded (first one in the vocab wins).
_ROLE_CANDIDATES: dict[str, tuple[str, ...]] = {
    "pad": ("[PAD]", "<pad>"),
    "unk": ("[UNK]", "<unk>"),
    "bos": ("[BOS]", "<s>", "<bos>"),
    "eos": ("[EOS]", "</s>", "<eos>"),
    "cls": ("[CLS]",),
    "sep": ("[SEP]",),
}
DEFAULT_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[BOS]", "[EOS]")


@dataclass
class Encoding:
    """One encoded text. ``offsets[i]`` = (start, end) into the original text; (0, 0) for added specials."""

    ids: list[int]
    tokens: list[str]
    offsets: list[tuple[int, int]]
    special: list[bool]  # True for tokens added by the template ([CLS], [SEP], [BOS], ...)
    truncated: bool = False
    original_length: int = 0  # token count (special tokens included) before truncation
    scheme: Scheme = "text"  # how the token strings encode text (for labels)

    def __len__(self) -> int:
        return len(self.ids)


@dataclass
class BatchEncoding:
    """``ids`` (B, T) padded with ``pad_id`` when padded; ``mask`` True = real token (may attend)."""

    ids: list[list[int]]
    mask: list[list[bool]]
    encodings: list[Encoding] = field(default_factory=list)


class Tokenizer:
    """Wraps a ``tokenizers.Tokenizer``; ``specials`` maps roles (pad, unk, ...) to token strings."""

    def __init__(self, tokenizer: tokenizers.Tokenizer, specials: Mapping[str, str] | None = None):
        # Stored truncation/padding would apply inside every encode call; we do both per call.
        trunc = tokenizer.truncation
        pad = tokenizer.padding
        self.model_max_length: int | None = trunc["max_length"] if trunc else None
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tk = tokenizer
        self.specials: dict[str, str] = self._infer_specials(pad["pad_token"] if pad else None)
        if specials:
            unknown = set(specials) - set(ROLES)
            if unknown:
                raise ValueError(f"unknown special roles {sorted(unknown)}; use {ROLES}")
            self.specials.update(specials)
        self.scheme: Scheme = label_scheme(tokenizer)
        self._special_ids = {i for i, t in tokenizer.get_added_tokens_decoder().items() if t.special}

    @property
    def special_ids(self) -> frozenset[int]:
        """Ids of the tokens registered as special ([PAD], [BOS], [SEP], [CLS], [MASK], <|endoftext|>, ...)."""
        return frozenset(self._special_ids)

    def _infer_specials(self, pad_token: str | None) -> dict[str, str]:
        found: dict[str, str] = {}
        for role, candidates in _ROLE_CANDIDATES.items():
            extra = ()
            if role == "pad" and pad_token:
                extra = (pad_token,)
            if role == "unk":
                extra = (getattr(self._tk.model, "unk_token", None) or "",)
            for tok in extra + candidates:
                if tok and self._tk.token_to_id(tok) is not None:
                    found[role] = tok
                    break
        return found

    # ---- loading and saving -------------------------------------------------------------
    @classmethod
    def from_file(cls, path: str | PathLike) -> Tokenizer:
        """Load a ``tokenizer.json``."""
        return cls(tokenizers.Tokenizer.from_file(str(path)))

    def save(self, path: str | PathLike) -> None:
        """Write ``tokenizer.json`` (special roles are re-inferred from token names on load)."""
        self._tk.save(str(path))

    @classmethod
    def from_vocab_txt(cls, path: str | PathLike, lowercase: bool = True) -> Tokenizer:
        """A BERT WordPiece tokenizer from a ``vocab.txt`` (one token per line, id = line number)."""
        vocab = models.WordPiece.read_file(str(path))
        for needed in ("[UNK]", "[CLS]", "[SEP]"):
            if needed not in vocab:
                raise ValueError(f"{os.path.basename(path)} has no {needed}")
        tk = tokenizers.Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
        # strip_accents=None follows lowercase, as in BERT uncased / cased.
        tk.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
        tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tk.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]",
            pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
        )
        tk.decoder = decoders.WordPiece(prefix="##")
        # Registered as special: never split from text, skipped by decode.
        tk.add_special_tokens([t for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]") if t in vocab])
        return cls(tk)

    @property
    def backend(self) -> tokenizers.Tokenizer:
        """The wrapped ``tokenizers.Tokenizer`` (do not enable truncation/padding on it)."""
        return self._tk

    # ---- vocabulary ---------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return self._tk.get_vocab_size(with_added_tokens=True)

    def token_to_id(self, token: str) -> int | None:
        return self._tk.token_to_id(token)

    def id_to_token(self, id: int) -> str | None:
        return self._tk.id_to_token(id)

    def _role_id(self, role: str) -> int | None:
        tok = self.specials.get(role)
        return None if tok is None else self._tk.token_to_id(tok)

    @property
    def pad_id(self) -> int | None:
        return self._role_id("pad")

    @property
    def unk_id(self) -> int | None:
        return self._role_id("unk")

    @property
    def bos_id(self) -> int | None:
        return self._role_id("bos")

    @property
    def eos_id(self) -> int | None:
        return self._role_id("eos")

    @property
    def cls_id(self) -> int | None:
        return self._role_id("cls")

    @property
    def sep_id(self) -> int | None:
        return self._role_id("sep")

    # ---- encoding -----------------------------------------------------------------------
    def encode(self, text: str, add_special_tokens: bool = True, max_length: int | None = None) -> Encoding:
        """Encode one text; ``max_length`` truncates the text's tokens, keeping the template's specials."""
        enc = self._tk.encode(text, add_special_tokens=add_special_tokens)
        return _to_encoding(enc, text, max_length, self.scheme)

    def encode_batch(
        self,
        texts: Sequence[str],
        add_special_tokens: bool = True,
        max_length: int | None = None,
        pad_to_longest: bool = True,
    ) -> BatchEncoding:
        """Encode several texts; with ``pad_to_longest`` every row is padded with ``pad_id`` to T."""
        texts = list(texts)
        raws = self._tk.encode_batch(texts, add_special_tokens=add_special_tokens)
        encs = [_to_encoding(r, t, max_length, self.scheme) for r, t in zip(raws, texts)]
        ids = [list(e.ids) for e in encs]
        mask = [[True] * len(e.ids) for e in encs]
        if pad_to_longest and encs:
            if self.pad_id is None:
                raise ValueError("tokenizer has no pad token; use pad_to_longest=False")
            longest = max(len(e.ids) for e in encs)
            for row, m in zip(ids, mask):
                gap = longest - len(row)
                row.extend([self.pad_id] * gap)
                m.extend([False] * gap)
        return BatchEncoding(ids=ids, mask=mask, encodings=encs)

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        return self._tk.decode(list(ids), skip_special_tokens=skip_special_tokens)

    # ---- labels -------------------------------------------------------------------------
    def labels(self, ids: Iterable[int]) -> list[str]:
        """One readable label per id (generated tokens, top-k lists): the same label `token_labels`
        gives the token inside encoded text (see `label_token`)."""
        out = []
        for i in ids:
            token = self._tk.id_to_token(int(i))
            out.append("?" if token is None else label_token(token, self.scheme, int(i) in self._special_ids))
        return out

    def with_bos(self, bos_token: str | None = None) -> Tokenizer:
        """This tokenizer, adding `bos_token` (default: the bos role) at the start of every text unless
        its post-processor already does. Used when a model's tokenizer_config.json says add_bos_token."""
        token = bos_token or self.specials.get("bos")
        bos_id = None if token is None else self._tk.token_to_id(token)
        if bos_id is None:
            raise ValueError(f"cannot add a BOS token: {token!r} is not in the vocabulary")
        probe = self._tk.encode("a", add_special_tokens=True)
        if probe.ids and probe.ids[0] == bos_id and probe.sequence_ids[0] is None:
            return self  # the tokenizer.json template adds it already
        backend = tokenizers.Tokenizer.from_str(self._tk.to_str())
        template = processors.TemplateProcessing(single=f"{token} $A", pair=f"{token} $A {token}:1 $B:1",
                                                 special_tokens=[(token, bos_id)])
        old = backend.post_processor
        backend.post_processor = template if old is None else processors.Sequence([old, template])
        return Tokenizer(backend, specials={**self.specials, "bos": token})

    def __repr__(self) -> str:
        model = type(self._tk.model).__name__
        return f"Tokenizer({model}, vocab_size={self.vocab_size}, specials={self.specials})"


def _to_encoding(enc: tokenizers.Encoding, text: str, max_length: int | None, scheme: Scheme = "text") -> Encoding:
    """Our Encoding from tokenizers'; truncation drops text tokens from the right, keeping specials.

    Truncating after the template (not before) keeps one pass through the post-processor, whose
    steps are not all idempotent (byte-level offset trimming would trim twice).
    """
    # Each property read copies the whole list out of Rust: read every one once (linear, not quadratic).
    ids, tokens, offsets_all = enc.ids, enc.tokens, enc.offsets
    special_mask, sequence_ids = enc.special_tokens_mask, enc.sequence_ids
    keep = list(range(len(ids)))
    original_length = len(keep)
    truncated = max_length is not None and original_length > max_length
    if truncated:
        # sequence_ids is None exactly for tokens the template added.
        specials = [i for i, s in enumerate(sequence_ids) if s is None]
        budget = max_length - len(specials)
        if budget < 0:
            raise ValueError(f"max_length={max_length} leaves no room for {len(specials)} special tokens")
        text_tokens = [i for i in keep if sequence_ids[i] is not None][:budget]
        keep = sorted(specials + text_tokens)
    special = [bool(special_mask[i]) for i in keep]
    offsets = _extend_over_combining([tuple(offsets_all[i]) for i in keep], special, text)
    return Encoding(
        ids=[ids[i] for i in keep],
        tokens=[tokens[i] for i in keep],
        offsets=offsets,
        special=special,
        truncated=truncated,
        original_length=original_length,
        scheme=scheme,
    )


def _extend_over_combining(offsets: list[tuple[int, int]], special: list[bool], text: str) -> list[tuple[int, int]]:
    """Let a span cover the combining marks that follow it (NFC alignment leaves them out).

    ``"e\u0301"`` composed to ``é`` by NFC aligns with ``e`` only; the accent then belongs to no
    token. A mark is added only up to the next token's start, so spans never grow into a neighbour.
    """
    out = list(offsets)
    starts = sorted(s for (s, e), sp in zip(offsets, special) if not sp and e > s)
    for i, ((s, e), sp) in enumerate(zip(offsets, special)):
        if sp or e <= s:
            continue
        after = bisect.bisect_left(starts, e)  # first token starting at or after this span's end
        limit = starts[after] if after < len(starts) else len(text)
        while e < limit and unicodedata.combining(text[e]):
            e += 1
        out[i] = (s, e)
    return out


# ---- training -------------------------------------------------------------------------------
def train_tokenizer(
    iterator: Iterable[str],
    kind: Kind = "wordlevel",
    vocab_size: int = 1000,
    special_tokens: Sequence[str] = DEFAULT_SPECIAL_TOKENS,
    lowercase: bool = False,
    add_bos: bool = False,
    add_eos: bool = False,
    min_frequency: int = 0,
) -> Tokenizer:
    """Train a tokenizer on texts. Special tokens get ids 0, 1, ... in the order given.

    kind: ``wordlevel`` (whole words and punctuation), ``wordpiece`` (BERT-style ``##`` pieces),
    ``bpe`` (byte-level, GPT-2 style: no unknown characters), ``char`` (one token per Unicode
    code point, spaces included: each digit of a date is its own token).
    Text is NFC-normalised (then lowercased if asked). ``add_bos``/``add_eos`` add a template
    ``[BOS] $A [EOS]`` post-processor (``encode(add_special_tokens=False)`` leaves them out).
    """
    specials = list(special_tokens)
    roles = _roles_of(specials)
    unk = roles.get("unk")
    if kind != "bpe" and unk is None:
        raise ValueError(f"kind={kind!r} needs an unknown token among special_tokens, e.g. '[UNK]'")
    norm: list[normalizers.Normalizer] = [normalizers.NFC()]
    if lowercase:
        norm.append(normalizers.Lowercase())

    if kind == "wordlevel":
        tk = tokenizers.Tokenizer(models.WordLevel(unk_token=unk))
        tk.pre_tokenizer = pre_tokenizers.Whitespace()
        trainer = trainers.WordLevelTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=specials, show_progress=False)
    elif kind == "char":
        tk = tokenizers.Tokenizer(models.WordLevel(unk_token=unk))
        tk.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")  # every code point
        tk.decoder = decoders.Fuse()
        trainer = trainers.WordLevelTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=specials, show_progress=False)
    elif kind == "wordpiece":
        tk = tokenizers.Tokenizer(models.WordPiece(unk_token=unk, continuing_subword_prefix="##"))
        # clean_text and CJK handling from BERT; accents and case are ours to choose.
        norm.append(normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=False, lowercase=False))
        tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tk.decoder = decoders.WordPiece(prefix="##")
        trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=specials, continuing_subword_prefix="##", show_progress=False)
    elif kind == "bpe":
        tk = tokenizers.Tokenizer(models.BPE())
        tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tk.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            min_frequency=min_frequency,
            special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
    else:
        raise ValueError(f"unknown kind {kind!r}; use wordlevel, wordpiece, bpe or char")
    tk.normalizer = normalizers.Sequence(norm)
    tk.train_from_iterator(iterator, trainer=trainer)

    post: list[processors.PostProcessor] = []
    if kind == "bpe":
        post.append(processors.ByteLevel(trim_offsets=True))  # offsets without the leading space
    if add_bos or add_eos:
        wanted = [role for role, flag in (("bos", add_bos), ("eos", add_eos)) if flag]
        missing = [role for role in wanted if role not in roles]
        if missing:
            raise ValueError(f"add_{missing[0]}=True but no {missing[0]} token among special_tokens")
        bos = [roles["bos"]] if add_bos else []
        eos = [roles["eos"]] if add_eos else []
        post.append(
            processors.TemplateProcessing(
                single=" ".join(bos + ["$A"] + eos),
                special_tokens=[(t, tk.token_to_id(t)) for t in bos + eos],
            )
        )
    if post:
        tk.post_processor = post[0] if len(post) == 1 else processors.Sequence(post)
    return Tokenizer(tk, specials=roles)


def _roles_of(tokens: Sequence[str]) -> dict[str, str]:
    return {role: tok for role, cands in _ROLE_CANDIDATES.items() for tok in tokens if tok in cands}

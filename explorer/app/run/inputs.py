"""Text typed in the page -> model input: cleaned, cut to the caps (with notices), token ids and readable labels.

Shapes: B sentences (1 or 2), T tokens. A `TextCodec` is how one model's text becomes ids and its ids become
labels: the date tasks encode characters with their own specials; every other model goes through its
tokenizer, with `explorer.tokenizer.token_labels` for labels (never the raw token strings).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from ...batching import pad_rows
from ...checkpoints import LoadedModel
from ...tokenizer import Tokenizer, token_labels
from ...unreadable import check_text
from ..serving.errors import AppError
from ..serving.limits import MAX_CHARS, MAX_NEW_TOKENS, chars_notice, tokens_notice

PAD_LABEL = "[PAD]"
DATE_TASKS = ("date-translation", "date-gpt")
_SURROGATES = re.compile("[\ud800-\udfff]")


class TextCodec(Protocol):
    def encode(self, text: str, limit: "TokenLimit", sentence: int) -> tuple[list[int], list[str], list[str]]:
        """-> ids (at most `limit.tokens`), one label per id, and notices for sentence number `sentence`: cut, or
        holding words the model cannot read (explorer.unreadable)."""

    def labels(self, ids: Sequence[int]) -> list[str]:
        """Labels of ids without their text (generated or decoder tokens)."""

    def decode(self, ids: Sequence[int]) -> str:
        """Generated ids -> text (specials dropped, up to an end token)."""


class TokenizerCodec:
    """Text through the (source) tokenizer; generated ids labelled and decoded with the target one."""

    def __init__(self, tokenizer: Tokenizer, target: Tokenizer | None = None, task: Mapping[str, Any] | None = None):
        self.tokenizer = tokenizer
        self.target = target or tokenizer
        self.task = task or {}  # the model's task dict: what it reads (explorer.unreadable)

    def encode(self, text: str, limit: "TokenLimit", sentence: int) -> tuple[list[int], list[str], list[str]]:
        enc = self.tokenizer.encode(text, max_length=limit.tokens)
        notices = [tokens_notice(sentence, enc.original_length, limit.tokens, limit.why)] if enc.truncated else []
        unread = check_text(self.tokenizer, text, self.task).notice(sentence)
        return list(enc.ids), token_labels(enc, text), notices + ([unread] if unread else [])

    def labels(self, ids: Sequence[int]) -> list[str]:
        return self.target.labels(ids)

    def decode(self, ids: Sequence[int]) -> str:
        return self.target.decode([int(i) for i in ids])


class DateCodec:
    """The date tasks: one id per character plus the task's specials ([EOS], or [BOS] ... [SEP])."""

    def __init__(self, task: Any, task_dict: Mapping[str, Any] | None = None):  # explorer.training.tasks.DateTask
        self.task = task
        self.task_dict = task_dict or {}  # the model's task dict: what it reads (explorer.unreadable)

    def encode(self, text: str, limit: "TokenLimit", sentence: int) -> tuple[list[int], list[str], list[str]]:
        ids, notice = self.task.encode_source(text, max_len=min(limit.tokens, self.task.max_source_len))
        notices = [] if notice is None else [f"Sentence {sentence}: {notice}"]
        unread = check_text(self.task.tokenizer, text, self.task_dict).notice(sentence)
        return ids, self.task.labels(ids), notices + ([unread] if unread else [])

    def labels(self, ids: Sequence[int]) -> list[str]:
        return self.task.labels(ids)

    def decode(self, ids: Sequence[int]) -> str:
        return self.task.decode(ids)


def codec_for(loaded: LoadedModel) -> TextCodec:
    """The date task's codec for the date models (when their tokenizer fits the task), else the tokenizer's."""
    if loaded.task.get("name") in DATE_TASKS:
        from ...training.tasks import task_from_dict

        try:
            return DateCodec(task_from_dict(loaded.task, loaded.tokenizer), loaded.task)
        except ValueError:  # a task its tokenizer does not fit: plain tokens still work
            pass
    return TokenizerCodec(loaded.tokenizer, loaded.target_tokenizer, loaded.task)


@dataclass(frozen=True)
class Inputs:
    """The sentences as model input: unpadded ids and labels per sentence, and notices about cuts."""

    texts: list[str]
    rows: list[list[int]]  # ids per sentence
    labels: list[list[str]]  # one readable label per id, per sentence
    notices: list[str]

    def padded(self, pad_id: int, device: torch.device | str | None = None) -> torch.Tensor:
        """(B, T) ids, shorter sentences padded with pad_id."""
        return pad_rows(self.rows, pad_id, device)

    def key_mask(self, device: torch.device | str | None = None) -> torch.Tensor:
        """(B, T) True = a real token (not padding), from the lengths: right for models without a pad token."""
        return row_mask(self.rows, device)

    def padded_labels(self) -> list[list[str]]:
        width = max(len(r) for r in self.rows)
        return [lab + [PAD_LABEL] * (width - len(lab)) for lab in self.labels]


def row_mask(rows: Sequence[Sequence[int]], device: torch.device | str | None = None) -> torch.Tensor:
    """(B, T) True where a row of `pad_rows(rows, ...)` holds one of its own tokens."""
    lengths = torch.tensor([len(r) for r in rows], device=device)
    return torch.arange(int(lengths.max()), device=device)[None, :] < lengths[:, None]


def pad_id_of(loaded: LoadedModel) -> int:
    """The id that fills padded positions: the model's pad token, or (GPT-2 has none) its end token. Which
    positions are padding is always said by a key mask, never by this id."""
    c = loaded.config
    if c.pad_id is not None:
        return c.pad_id
    eos = loaded.target_tokenizer.eos_id
    return 0 if eos is None else eos


def clean_texts(text1: str | None, text2: str | None) -> tuple[list[str], list[str]]:
    """Strip, refuse an empty first sentence, cut overlong ones (with a notice)."""
    notices: list[str] = []
    texts = []
    for i, t in enumerate((text1, text2)):
        # Lone surrogates (JSON "\ud800") are not text: the tokenizer raises TypeError on them.
        t = _SURROGATES.sub("\ufffd", str(t or "")).strip()
        if not t:
            if i == 0:
                raise AppError("Type a sentence first (the input is empty).")
            continue
        if len(t) > MAX_CHARS:
            notices.append(chars_notice(i + 1, len(t)))
            t = t[:MAX_CHARS]
        texts.append(t)
    return texts, notices


@dataclass(frozen=True)
class TokenLimit:
    tokens: int  # at most this many tokens per input
    why: str  # which limit it is, for the notice


def token_limit(loaded: LoadedModel, max_tokens: int) -> TokenLimit:
    """Tokens one input may have: the model's context, or the app's cap if smaller; a decoder-only prompt leaves
    room in the context for the answer it generates (a 1,064-token context reads 1,024 input tokens)."""
    context = loaded.config.max_len
    answer = answer_length(loaded)
    room, why = context, f"this model's context is {context:,} tokens"
    if loaded.arch == "decoder" and context > answer:
        room, why = context - answer, why + f", and {answer} are kept for the answer"
    if room <= max_tokens:
        return TokenLimit(room, why)
    return TokenLimit(max_tokens, f"the app reads at most {max_tokens:,}; the model's context is {context:,}")


def answer_length(loaded: LoadedModel) -> int:
    """Tokens a sequence model generates at most: its task's own limit, within the app's cap."""
    return int(min(loaded.task.get("max_new_tokens", MAX_NEW_TOKENS), MAX_NEW_TOKENS))


def encode_inputs(loaded: LoadedModel, codec: TextCodec, text1: str | None, text2: str | None,
                  max_tokens: int) -> Inputs:
    texts, notices = clean_texts(text1, text2)
    limit = token_limit(loaded, max_tokens)
    rows, labels = [], []
    for i, text in enumerate(texts, start=1):
        ids, labs, said = codec.encode(text, limit, i)
        notices += said
        if not ids:
            raise AppError(f"Sentence {i} gives no tokens for this model.")
        rows.append(ids)
        labels.append(labs)
    return Inputs(texts, rows, labels, notices)


def token_table(inputs: Inputs) -> tuple[list[str], list[list[Any]]]:
    """(headers, rows) of the token table: sentence, position, token text, id (text, never HTML)."""
    rows = [[s, pos, lab, int(i)] for s, (ids, labs) in enumerate(zip(inputs.rows, inputs.labels), start=1)
            for pos, (i, lab) in enumerate(zip(ids, labs))]
    return ["sentence", "position", "token", "id"], rows

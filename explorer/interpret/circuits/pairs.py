"""A task: prompt pairs (a clean prompt, a corrupted one of the same length in tokens, the answer, optionally a wrong
answer to compare against), made from ids, or read from text one pair a line, CSV or JSONL.

    Pair(clean (T,), corrupted (T,), answer, wrong, tgt (T',) | None)
    make_task(clean, corrupted, answers, wrongs=None, tgt=None) -> Task       from ids ((N, T) tensors or lists)
    parse_pairs(text, encode, encode_answer=None, decoder_start=None) -> Task  from text

A decoder-only model reads `clean` / `corrupted` and predicts the next token. An encoder-decoder reads them as the
source, and `tgt` (the decoder's input, the same for both runs) as the target so far; the answer is the next target
token. Pairs whose clean and corrupted prompts differ in length are dropped, and the task says how many
(`dropped`, `notice`); a task left empty is an error. Text formats (`format="auto"` tells them apart):

    lines   clean | corrupted [| answer [| wrong]]      one pair a line; empty lines and lines starting with # skipped
    csv     clean,corrupted[,answer[,wrong]]            an optional header row naming those columns
    jsonl   {"clean": ..., "corrupted": ..., "answer": ..., "wrong": ...}   one object a line

An answer is one token (`encode_answer`, default `encode`, must give exactly one id). For an encoder-decoder
(`decoder_start` given: the decoder's start token) the answer is the target written up to and including the answer:
its last token is the answer, the tokens before it follow `decoder_start` as the decoder's input; a wrong answer must
share that beginning. `continues=True` reads a decoder-only model's answer the same way (date-gpt: the ISO date so
far), the tokens before the answer appended to both prompts. Without an answer, a decoder-only pair's answer is the clean run's top token (found_circuit
fills it in). Every bad row is named by its line in one ValueError; text fields (lines, CSV) are stripped.

Bounds (a request's budget, ValueError in words, the text untouched): at most `max_chars` characters of text (checked
before anything is read), `max_pairs` pairs and `max_tokens` tokens over every pair (its clean prompt and decoder
input: what one run of the task reads).
"""

from __future__ import annotations

import csv
import io
import json
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

Encode = Callable[[str], Sequence[int]]
FORMATS = ("auto", "lines", "csv", "jsonl")
FIELDS = ("clean", "corrupted", "answer", "wrong")
MAX_BAD_SHOWN = 10  # bad rows named in one message
MAX_TEXT_CHARS = 256 * 1024  # characters of pair text read at most (a typed box or an uploaded file)


@dataclass(frozen=True)
class Pair:
    clean: tuple[int, ...]
    corrupted: tuple[int, ...]  # the same length as clean
    answer: int | None = None  # the token the clean prompt should give next; None: the clean run's top token
    wrong: int | None = None  # the token compared against (logit difference); None: the corrupted run's top token
    tgt: tuple[int, ...] | None = None  # encoder-decoder: the decoder's input (both runs), else None
    line: int | None = None  # where it was read (from 1), for messages


@dataclass(frozen=True)
class Task:
    pairs: tuple[Pair, ...]
    name: str = "pairs"
    dropped: tuple[int, ...] = ()  # lines (or indices from 1) of pairs dropped: clean and corrupted differ in length
    notice: str | None = None  # in words, what was dropped

    def __len__(self) -> int:
        return len(self.pairs)

    def split(self, held_out: int) -> tuple["Task", "Task"]:
        """(the first len - held_out pairs, the last held_out) as two tasks."""
        if isinstance(held_out, bool) or not isinstance(held_out, int) or not 0 < held_out < len(self.pairs):
            raise ValueError(f"held_out must be a number of pairs between 1 and {len(self.pairs) - 1}, "
                             f"got {held_out!r}")
        cut = len(self.pairs) - held_out
        return (replace(self, pairs=self.pairs[:cut], name=f"{self.name} (found)"),
                replace(self, pairs=self.pairs[cut:], name=f"{self.name} (held out)", dropped=(), notice=None))


def _ids(value: Any, what: str) -> tuple[int, ...]:
    if isinstance(value, torch.Tensor):
        value = value.tolist()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"{what} must be a sequence of token ids, got {type(value).__name__}")
    out = []
    for v in value:
        if isinstance(v, bool):
            raise ValueError(f"{what} holds {v!r}, not a token id")
        try:
            out.append(operator.index(v))
        except TypeError:
            raise ValueError(f"{what} holds {v!r}, not a token id") from None
    if not out:
        raise ValueError(f"{what} is empty")
    return tuple(out)


def _one(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        value = value.item() if value.numel() == 1 else value.tolist()
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a token id, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise ValueError(f"{what} must be a token id, got {value!r}") from None


def _rows(value: Any, what: str, n: int | None = None) -> list:
    if value is None:
        return [None] * (n or 0)
    if isinstance(value, torch.Tensor):
        value = value.tolist()
    value = list(value)
    if n is not None and len(value) != n:
        raise ValueError(f"{what} has {len(value)} rows for {n} pairs")
    return value


def make_task(clean: Any, corrupted: Any, answers: Any, wrongs: Any = None, tgt: Any = None, *,
              name: str = "pairs", lines: Sequence[int] | None = None) -> Task:
    """A Task from ids: clean and corrupted (N, T) (tensors, or lists of sequences that may differ in length),
    answers (N,) (None entries: found from the model), wrongs (N,) or None, tgt (N, T') for an encoder-decoder."""
    clean_rows = _rows(clean, "clean_ids")
    n = len(clean_rows)
    corrupted_rows = _rows(corrupted, "corrupted_ids", n)
    answer_rows = _rows(answers, "answer_ids", n) if answers is not None else [None] * n
    wrong_rows = _rows(wrongs, "wrong_ids", n)
    tgt_rows = _rows(tgt, "tgt", n)
    pairs, dropped = [], []
    for i in range(n):
        where = lines[i] if lines is not None else i + 1
        c, k = _ids(clean_rows[i], f"clean prompt {where}"), _ids(corrupted_rows[i], f"corrupted prompt {where}")
        target = None if tgt_rows[i] is None else _ids(tgt_rows[i], f"decoder input {where}")
        if len(c) != len(k):
            dropped.append(where)
            continue
        pairs.append(Pair(c, k, _one(answer_rows[i], f"answer {where}"), _one(wrong_rows[i], f"wrong answer {where}"),
                          target, where))
    what = "line" if lines is not None else "pair"
    notice = None
    if dropped:
        shown = ", ".join(map(str, dropped[:MAX_BAD_SHOWN])) + (", ..." if len(dropped) > MAX_BAD_SHOWN else "")
        notice = (f"{len(dropped)} of {n} pairs dropped: their clean and corrupted prompts differ in length in tokens "
                  f"({what}{'s' if len(dropped) > 1 else ''} {shown})")
    if not pairs:
        raise ValueError("the task has no pairs" + (f": {notice}" if notice else ""))
    return Task(tuple(pairs), name, tuple(dropped), notice)


# ------------------------------------------------------------------------------------------ text
def _records(text: str, fmt: str) -> list[tuple[int, list[Any] | None, str | None]]:
    """(line, fields or None, why not) per pair row of the text."""
    out: list[tuple[int, list[Any] | None, str | None]] = []
    if fmt == "jsonl":
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                out.append((number, None, f"not JSON ({e.msg})"))
                continue
            if not isinstance(row, dict) or not all(isinstance(row.get(k), str) for k in FIELDS[:2]):
                out.append((number, None, 'needs "clean" and "corrupted" texts'))
                continue
            unknown = sorted(set(row) - set(FIELDS))
            if unknown:
                out.append((number, None, f"unknown key(s) {', '.join(unknown)}"))
                continue
            out.append((number, [row.get(k) for k in FIELDS], None))
        return out
    if fmt == "csv":
        reader = csv.reader(io.StringIO(text))
        for row in reader:
            number = reader.line_num
            cells = [c.strip() for c in row]
            if not any(cells):
                continue
            if number == 1 and [c.lower() for c in cells] == list(FIELDS[:len(cells)]):
                continue  # the header
            out.append((number, cells, None) if 2 <= len(cells) <= 4 else
                       (number, None, f"needs 2 to 4 columns (clean, corrupted, answer, wrong), got {len(cells)}"))
        return out
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cells = [c.strip() for c in line.split("|")]
        out.append((number, cells, None) if 2 <= len(cells) <= 4 else
                   (number, None, f"needs 2 to 4 fields separated by | (clean | corrupted | answer | wrong), "
                                  f"got {len(cells)}"))
    return out


def detect_format(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if first.startswith("{"):
        return "jsonl"
    if "|" not in first and first.lower().replace(" ", "").startswith("clean,corrupted"):
        return "csv"
    return "lines"


def parse_pairs(text: str, encode: Encode, *, encode_answer: Encode | None = None, decoder_start: int | None = None,
                format: str = "auto", max_pairs: int | None = None, name: str = "typed pairs",
                max_chars: int | None = MAX_TEXT_CHARS, max_tokens: int | None = None, continues: bool = False
                ) -> Task:
    """A Task from text (see the module docstring). `encode` gives a prompt's ids as the model reads them (special
    tokens included); `encode_answer` an answer's (no special tokens). ValueError naming every bad line."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    if not isinstance(text, str):
        raise ValueError(f"the pairs must be text, got {type(text).__name__}")
    if max_chars is not None and len(text) > max_chars:
        raise ValueError(f"the pairs' text has {len(text):,} characters, more than this request reads "
                         f"({max_chars:,}): use fewer or shorter pairs")
    text = text.removeprefix("\ufeff")  # a byte-order mark, as spreadsheets write at the start of a CSV file
    fmt = detect_format(text) if format == "auto" else format
    encode_answer = encode_answer or encode
    rows, bad = [], []
    for number, cells, why in _records(text, fmt):
        if cells is None:
            bad.append(f"line {number}: {why}")
            continue
        cells = (list(cells) + [None, None])[:4]
        for field, value in zip(FIELDS, cells):
            if value is not None and not isinstance(value, str):
                why = f"{field} must be text, got {type(value).__name__}"
                break
            if field in FIELDS[:2] and not value:
                why = f"the {field} prompt is empty"
                break
        if why is None:
            try:
                rows.append((number, *_encode_row(cells, encode, encode_answer, decoder_start, continues)))
                continue
            except ValueError as e:
                why = str(e)
        bad.append(f"line {number}: {why}")
    if bad:
        shown = "; ".join(bad[:MAX_BAD_SHOWN]) + (f"; and {len(bad) - MAX_BAD_SHOWN} more" if len(bad) > MAX_BAD_SHOWN
                                                   else "")
        raise ValueError(f"{len(bad)} bad row{'s' if len(bad) > 1 else ''} ({fmt}): {shown}")
    if not rows:
        raise ValueError("no pairs: write one pair a line, clean | corrupted [| answer | wrong]")
    if max_pairs is not None and len(rows) > max_pairs:
        raise ValueError(f"{len(rows)} pairs is more than this request takes ({max_pairs}): use fewer pairs")
    tokens = sum(len(r[1]) + len(r[5] or ()) for r in rows)  # clean prompt and decoder input of each pair
    if max_tokens is not None and tokens > max_tokens:
        raise ValueError(f"the {len(rows)} pairs hold {tokens:,} tokens, more than this request takes "
                         f"({max_tokens:,}): use fewer or shorter pairs")
    numbers, clean, corrupted, answers, wrongs, tgt = (list(col) for col in zip(*rows))
    return make_task(clean, corrupted, answers, wrongs, tgt if decoder_start is not None else None, name=name,
                     lines=numbers)


def _single(ids: Sequence[int], what: str) -> int:
    if len(ids) != 1:
        raise ValueError(f"the {what} must be one token, it is {len(ids)} ({list(ids)})")
    return int(ids[0])


def _encode_row(cells: list[str | None], encode: Encode, encode_answer: Encode, start: int | None,
                continues: bool = False):
    clean, corrupted, answer, wrong = cells
    clean_ids, corrupted_ids = list(encode(clean)), list(encode(corrupted))
    if start is None and not continues:  # decoder-only: each answer one token
        return (clean_ids, corrupted_ids, None if not answer else _single(encode_answer(answer), "answer"),
                None if not wrong else _single(encode_answer(wrong), "wrong answer"), None)
    if not answer:
        raise ValueError("this model's pair needs its answer: the output written up to and including the answer "
                         "token")
    target = list(encode_answer(answer))
    if not target:
        raise ValueError("the answer gives no token")
    wrong_id = None
    if wrong:
        other = list(encode_answer(wrong))
        if len(other) != len(target) or other[:-1] != target[:-1]:
            raise ValueError("the wrong answer must be the same target with another last token")
        wrong_id = other[-1]
    if start is None:  # a decoder-only model continues both prompts with the target so far
        return clean_ids + target[:-1], corrupted_ids + target[:-1], target[-1], wrong_id, None
    return clean_ids, corrupted_ids, target[-1], wrong_id, [start, *target[:-1]]

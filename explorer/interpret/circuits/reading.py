"""A loaded model's task read from text: the pairs typed one a line, or an uploaded CSV / JSONL file's contents, turned
into ids the way that model reads text (pairs.parse_pairs does the reading; this module chooses the encoders).

    task_from_text(loaded, text, format="auto", max_chars=..., max_pairs=..., max_tokens=...) -> Task

- the date models read characters (their own task's encoders): date-translator's source is the date, its answer the
  ISO date written so far up to the token asked about ("2025-03": the answer "3" after "2025-0"), date-gpt's the same
  after "[BOS] date [SEP]";
- every other model reads through its tokenizer (special tokens included, as a Run does); an answer is one token of
  the output vocabulary, typed as the token table shows it ("␣" for a space, "#123" for the id 123). An
  encoder-decoder's answer is the target so far, its decoder input starting with the model's decoder start token.

A prompt longer than the model reads is a bad row (named by its line), never cut. The bounds are the request's
budget: pairs.parse_pairs says in words which one a text passes (characters first, before anything is encoded).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...checkpoints import LoadedModel
from ...training.tasks import task_from_dict
from .batches import check_pairs
from .pairs import MAX_TEXT_CHARS, Task, parse_pairs

DATE_TASKS = ("date-translation", "date-gpt")
MAX_PAIRS = 256  # pairs one request takes
MAX_TASK_TOKENS = 16_384  # tokens over every pair one request takes (256 pairs of 64 tokens)


def token_ids(tokenizer, text: str) -> list[int]:
    """An answer typed as the token table shows it: "#123" is the id 123, "␣" a space."""
    typed = text.strip()
    if typed.startswith("#") and typed[1:].isdigit():
        return [int(typed[1:])]
    return list(tokenizer.encode(text.replace("␣", " "), add_special_tokens=False).ids)


def task_from_text(loaded: LoadedModel, text: str, *, format: str = "auto", max_chars: int | None = MAX_TEXT_CHARS,
                   max_pairs: int | None = MAX_PAIRS, max_tokens: int | None = MAX_TASK_TOKENS,
                   name: str = "typed pairs") -> Task:
    """See the module docstring. ValueError in words: bad rows by line, a bound passed, an empty task, a token
    outside the model's vocabulary."""
    task = _read(loaded, text, dict(format=format, max_chars=max_chars, max_pairs=max_pairs, max_tokens=max_tokens,
                                    name=name))
    check_pairs(loaded.model, list(task.pairs), label="line")
    return task


def _read(loaded: LoadedModel, text: str, bounds: dict) -> Task:
    config = loaded.model.config
    if config.arch == "encoder":
        raise ValueError("circuits read a language model's next token: this model is an encoder without a decoder")
    kind = (loaded.task or {}).get("name")
    if kind in DATE_TASKS:
        task = task_from_dict(loaded.task, loaded.tokenizer)

        def encode_date(value: str) -> Sequence[int]:
            ids = task.encode_source(value, max_len=10**9)[0]
            if len(ids) > task.max_source_len:
                raise ValueError(f"the prompt is {len(ids)} characters with its special tokens, more than this model "
                                 f"reads ({task.max_source_len})")
            return ids

        if config.arch == "encoder-decoder":
            return parse_pairs(text, encode_date, encode_answer=task.chars, decoder_start=task.bos_id, **bounds)
        return parse_pairs(text, encode_date, encode_answer=task.chars, continues=True, **bounds)
    tokenizer, target = loaded.tokenizer, loaded.target_tokenizer

    def encode(value: str) -> Sequence[int]:
        ids = list(tokenizer.encode(value).ids)
        if len(ids) > config.max_len:
            raise ValueError(f"the prompt is {len(ids)} tokens, more than this model reads ({config.max_len})")
        return ids

    def encode_answer(value: str) -> Sequence[int]:
        return token_ids(target, value)

    if config.arch == "encoder-decoder":
        start = loaded.task.get("bos_id") if loaded.task else None
        start = start if start is not None else (target.bos_id if target.bos_id is not None else target.pad_id)
        if start is None:
            raise ValueError("this encoder-decoder names no decoder start token: give the pairs as ids (find_circuit "
                             "with tgt)")
        return parse_pairs(text, encode, encode_answer=encode_answer, decoder_start=int(start), **bounds)
    return parse_pairs(text, encode, encode_answer=encode_answer, **bounds)

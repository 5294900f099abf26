"""The shipped models' own task data for training and checking SAEs: sequences as each model reads them, the positions
the task's loss counts, and what is true at every position (for naming latents).

    induction-gpt     rows of the induction task (explorer.training.induction: [BOS] + random tokens + a span repeated
                      to the end), 63 tokens as in training; every next token counts
    date-gpt          [BOS] date [SEP] ISO date, as in training (explorer.training.tasks.DateGPT); the answer counts
    date-translator   the encoder reads date + [EOS], the decoder [BOS] + ISO date; the decoder's tokens count

Train and held-out sets are disjoint: dates by text (one draw of distinct texts, explorer.training.dates), induction
rows by content (a held-out row equal to a training row is drawn again).

Properties (names a card can print) of a position of the sequence the SAE reads:
    induction   "token t17", "after t17" (the previous token), "next token t17", "repeated token" (it occurred earlier in
                the row: the next token can be copied from after that occurrence), "new token", "copies t17" (a
                repeated token whose last earlier occurrence was followed by t17: what an induction head predicts)
    dates       in the date: "char v", "date day", "date month", "date month name", "date month number",
                "date month: November", "date year", "date year digit 3", "date weekday", "date weekday: Saturday",
                "date separator"; in the ISO answer (date-gpt): "ISO year digit 1".."ISO day digit 2", "ISO dash 1/2",
                "ISO month: November", what the model writes next ("next char 1", from [SEP] on) and "writes the
                month: November" where that is a month digit; the special tokens by name
The special tokens SAELens leaves out of its metrics ([BOS], [EOS], [PAD]) are left out of every set of vectors here.

Shapes: S length of the sequence the SAE reads, T of the decoder input (encoder-decoders), N tokens kept.
    sae_splits(loaded, n_train, n_test, seed) -> (TaskRows, TaskRows)
    example_sequences(loaded) -> [(S,)] the model's example set (the app's example texts)
    TaskRows.ids[i] (S,), .tgt[i] (T,) | None, .labels[i] (S,) | (T,), .properties[i][position] tuple of names
"""

from __future__ import annotations

import calendar
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from ..checkpoints import LoadedModel
from . import dates, induction
from .tasks import IGNORE_INDEX, DateTask, task_from_dict

HELD_OUT_SALT = 1_000_003  # induction held-out rows come from seed * salt + 1, training rows from seed * salt
ISO_PARTS = ("ISO year digit 1", "ISO year digit 2", "ISO year digit 3", "ISO year digit 4", "ISO dash 1",
             "ISO month digit 1", "ISO month digit 2", "ISO dash 2", "ISO day digit 1", "ISO day digit 2")
MONTHS = tuple(calendar.month_name)  # "", "January", ...
WEEKDAYS = tuple(calendar.day_name)  # "Monday", ... (date.weekday() order)


GLOSSARY = {  # what the property names mean, for a card
    induction.NAME: ('"token t17": the token itself; "after t17": the token before it; "next token t17": the one after '
                     'it; "repeated token": it occurred earlier in the row; "new token": it did not; "copies t17": it '
                     'occurred earlier and t17 followed its last earlier occurrence (what an induction head predicts '
                     'there).'),
    "date-gpt": ('"char 9": the character; "date day" / "date month number" / "date month name" / "date year" / "date '
                 'weekday" / "date separator": the field of the date it is in; "date year digit 3": the third digit of '
                 'the year in the date; "[SEP]": the end of the prompt; "ISO year digit 1" .. "ISO day digit 2", "ISO '
                 'dash 1/2": its place in the ISO answer; "next char 9": the character the model writes next (answer '
                 'only); "date month: November", "ISO month: November", "writes the month: November": the month.'),
}
GLOSSARY["date-translation"] = GLOSSARY["date-gpt"].split('; "[SEP]"')[0] + "; \"date month: November\": the month."


@dataclass
class TaskRows:
    """Sequences of one shipped task, as its model reads them."""

    ids: list[Tensor]  # (S,) the sequence the SAE's stack reads: a decoder-only row, an encoder-decoder's source
    tgt: list[Tensor | None]  # (T,) an encoder-decoder's decoder input, else None
    labels: list[Tensor]  # next-token targets of the output stack ((S,) or (T,)), IGNORE_INDEX where not counted
    properties: list[list[tuple[str, ...]]]  # per position of ids: the properties that hold there
    ignore_ids: tuple[int, ...]  # special tokens left out (SAELens's ignore_tokens: [BOS], [EOS], [PAD])
    description: str  # for the card
    glossary: str = ""  # what the property names mean, for the card

    def __len__(self) -> int:
        return len(self.ids)

    def tokens(self) -> int:
        """Tokens counted (ignored ones left out)."""
        ignore = torch.tensor(self.ignore_ids, dtype=torch.long)
        return sum(int((~torch.isin(ids, ignore)).sum()) for ids in self.ids)


def task_kind(loaded: LoadedModel) -> str:
    """"induction", "date-gpt" or "date-translation": the shipped task a checkpoint was trained on."""
    name = (loaded.task or {}).get("name")
    if name not in (induction.NAME, "date-gpt", "date-translation"):
        raise ValueError(f"the model's task is {name!r}; SAE training data exists for the shipped tasks only: "
                         f"{induction.NAME}, date-gpt, date-translation")
    return name


def sae_splits(loaded: LoadedModel, n_train: int, n_test: int, seed: int = 0) -> tuple[TaskRows, TaskRows]:
    """Disjoint training and held-out sequences of the model's own task, reproducible from `seed`."""
    for name, n in (("n_train", n_train), ("n_test", n_test)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"{name} must be a positive number of sequences, got {n!r}")
    kind = task_kind(loaded)
    if kind == induction.NAME:
        task = induction.InductionTask.from_dict(loaded.task, loaded.tokenizer)
        train = induction_rows(task, n_train, seed * HELD_OUT_SALT)
        seen = {tuple(r.tolist()) for r in train.ids}
        return train, induction_rows(task, n_test, seed * HELD_OUT_SALT + 1, exclude=seen)
    task = task_from_dict(loaded.task, loaded.tokenizer)
    examples = dates.generate_examples(n_train + n_test, seed)  # distinct texts: the two slices are disjoint
    return date_rows(task, examples[:n_train]), date_rows(task, examples[n_train:])


def example_sequences(loaded: LoadedModel) -> list[Tensor]:
    """The model's example set (its task's `examples`, the texts the app offers) as the SAE's stack reads them: an
    induction text with [BOS] first, a date-gpt prompt [BOS] date [SEP], a date-translator source date + [EOS]."""
    if task_kind(loaded) == induction.NAME:
        return [torch.tensor(loaded.tokenizer.encode(text).ids) for text in loaded.task["examples"]]
    task = task_from_dict(loaded.task, loaded.tokenizer)
    return [torch.tensor(task.encode_source(text)[0]) for text in task.examples]


# ------------------------------------------------------------------------------------------ induction
def induction_rows(task: induction.InductionTask, n: int, seed: int, exclude: set[tuple[int, ...]] = frozenset()
                   ) -> TaskRows:
    """n rows drawn as in training (InductionTask.training_batch), none equal to a row in `exclude`."""
    gen = torch.Generator().manual_seed(seed)
    rows: list[Tensor] = []
    labels: list[Tensor] = []
    while len(rows) < n:
        batch = task.training_batch(n - len(rows), gen)
        for src, lab in zip(batch.src, batch.labels):
            if tuple(src.tolist()) not in exclude:
                rows.append(src)
                labels.append(lab)
    names = task.tokenizer.id_to_token
    props = [induction_properties(r.tolist(), lab.tolist(), names) for r, lab in zip(rows, labels)]
    lo, hi = induction.SPAN_RANGE
    description = (f"rows of {task.seq_len - 1} tokens drawn as induction-gpt's training rows "
                   f"(InductionTask.training_batch): [BOS] + random tokens t0..t{induction.N_TOKENS - 1} + a span of "
                   f"{lo}-{hi} tokens repeated to the end of the row, the first copy early in half of the rows.")
    return TaskRows(rows, [None] * n, labels, props, (task.bos_id, task.eos_id, task.pad_id), description,
                    GLOSSARY[induction.NAME])


def induction_properties(ids: Sequence[int], next_ids: Sequence[int], name_of) -> list[tuple[str, ...]]:
    """What holds at each position of an induction row: its token, the previous and next tokens, whether the token
    occurred earlier in the row (a repeat) and, if so, the token after its last earlier occurrence ("copies t17": what
    an induction head predicts there)."""
    out: list[tuple[str, ...]] = []
    last: dict[int, int] = {}  # token -> its last position so far ([BOS] at 0 left out)
    for p, (token, after) in enumerate(zip(ids, next_ids)):
        props = [f"token {name_of(token)}", f"next token {name_of(after)}"]
        if token in last:
            props += ["repeated token", f"copies {name_of(ids[last[token] + 1])}"]
        else:
            props.append("new token")
        if p > 0:
            props.append(f"after {name_of(ids[p - 1])}")
            last[token] = p
        out.append(tuple(props))
    return out


# ------------------------------------------------------------------------------------------ dates
def date_char_properties(example: dates.DateExample) -> list[tuple[str, ...]]:
    """What holds at each character of the date's text."""
    month, weekday = MONTHS[example.date.month], WEEKDAYS[example.date.weekday()]
    out: list[tuple[str, ...]] = []
    for text, field in dates.date_parts(example):
        for i, char in enumerate(text):
            props = [f"char {'␣' if char == ' ' else char}"]
            if field == "literal":
                props.append("date space" if char == " " else "date separator")
            elif field.startswith("month"):
                props += ["date month", f"date {field}", f"date month: {month}"]
            elif field == "weekday":
                props += ["date weekday", f"date weekday: {weekday}"]
            elif field == "year":
                props += ["date year", f"date year digit {i + 1}"]
            else:
                props.append("date day")
            out.append(tuple(props))
    return out


def iso_properties(target: str) -> list[tuple[str, ...]]:
    """What holds at each character of the ISO answer, [SEP] before it included (date-gpt writes the answer from
    there): the character, its part, and what the model writes next ("next char 1"; "writes the month: November" where
    the next character is a digit of the month)."""
    month = MONTHS[int(target[5:7])]
    out = [("[SEP]", f"next char {target[0]}")]
    for i, (char, part) in enumerate(zip(target, ISO_PARTS)):
        props = [f"char {char}", part]
        if "month" in part:
            props.append(f"ISO month: {month}")
        if i + 1 < len(target):
            props.append(f"next char {target[i + 1]}")
        if i + 1 in (5, 6):
            props.append(f"writes the month: {month}")
        out.append(tuple(props))
    return out


def date_rows(task: DateTask, examples: Sequence[dates.DateExample]) -> TaskRows:
    """The examples as the task's model reads them in training (tasks.DateGPT / DateTranslation.training_batch)."""
    ids, tgts, labels, props = [], [], [], []
    ignore = (task.bos_id, task.eos_id, task.pad_id)
    for e in examples:
        prompt, notice = task.encode_source(e.text)
        if notice is not None:
            raise ValueError(f"date {e.text!r} does not fit the model: {notice}")
        answer = task.target_ids(e.target)  # ISO chars + [EOS]
        chars = date_char_properties(e)
        if task.arch == "decoder":  # [BOS] date [SEP] ISO; the answer (ISO + [EOS]) is predicted from [SEP] on
            seq = prompt + answer
            label = seq[1:]
            label[: len(prompt) - 1] = [IGNORE_INDEX] * (len(prompt) - 1)
            ids.append(torch.tensor(seq[:-1]))
            tgts.append(None)
            labels.append(torch.tensor(label))
            props.append([("[BOS]",), *chars, *iso_properties(e.target)])
        else:  # the encoder reads date + [EOS]; the decoder [BOS] + ISO and predicts ISO + [EOS]
            ids.append(torch.tensor(prompt))
            tgts.append(torch.tensor([task.bos_id] + answer[:-1]))
            labels.append(torch.tensor(answer))
            props.append([*chars, ("[EOS]",)])
    reads = ("[BOS] date [SEP] ISO date, as date-gpt reads them in training" if task.arch == "decoder" else
             "the date + [EOS] in date-translator's encoder, [BOS] + ISO date in its decoder, as in training")
    return TaskRows(ids, tgts, labels, props, ignore, f"{dates.describe()} The sequences: {reads}.",
                    GLOSSARY[task.name])


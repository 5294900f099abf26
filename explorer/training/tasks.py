"""Task definitions shared by training and the app: how text becomes model input, how output becomes text.

Two tasks on the same data (explorer.training.dates: a date in one of 7 languages -> ISO ``YYYY-MM-DD``),
both character-level with one tokenizer (:func:`build_tokenizer`) for source and target:

- :class:`DateTranslation` (encoder-decoder): source ``chars + [EOS]``; decoder input
  ``[BOS] + ISO chars``, decoder labels ``ISO chars + [EOS]``. Generation starts from ``[BOS]``.
- :class:`DateGPT` (decoder-only): one sequence ``[BOS] + source chars + [SEP] + ISO chars + [EOS]``.
  The prompt is everything up to and including ``[SEP]``; the model continues after it. The loss
  covers only the answer (ISO chars + ``[EOS]``): predicting the prompt is not the task.

Shapes: B batch, S source length, T target length (decoder input), N generated tokens.

    task.training_batch(examples) -> Batch(src (B, S), tgt (B, T) | None, labels (B, T) or (B, S))
    task.predict(model, texts) -> list[str]; exact_match(bundle, examples) -> float in [0, 1]

A task is stored in a checkpoint's ``config.json`` as ``task.to_dict()`` and rebuilt with
:func:`task_from_dict` (the tokenizer is stored next to it, in ``tokenizer.json``).
"""

from __future__ import annotations

import string
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from ..batching import pad_rows
from . import dates
from ..outputs.generate import Generation, generate
from ..model import Transformer
from ..tokenizer import Tokenizer, train_tokenizer

if TYPE_CHECKING:
    from ..checkpoints import LoadedModel

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[BOS]", "[EOS]", "[SEP]")  # ids 0..4, [PAD] = 0 = config.pad_id
IGNORE_INDEX = -100  # label value that takes no part in the loss (torch cross_entropy's default)
ISO_LENGTH = len("2026-11-21")
# Characters a person may type in the covered languages beyond what the data happens to render:
# every ASCII letter, common punctuation, and accented letters of the Latin-script languages.
EXTRA_CHARS = (
    string.digits + string.ascii_letters + " -.,/'()"
    + "àâäáãåçéèêëíìîïñóòôöõúùûüÿœæß"
    + "ÀÂÄÁÃÅÇÉÈÊËÍÌÎÏÑÓÒÔÖÕÚÙÛÜŸŒÆ" + "ºª°"
)
_VISIBLE = {" ": "␣"}


def build_tokenizer() -> Tokenizer:
    """The character tokenizer of both tasks: specials first ([PAD]=0), then every character, sorted.

    Built from the data's charset plus :data:`EXTRA_CHARS`, each character seen once, so ids do not
    depend on data frequencies. A character outside this set becomes ``[UNK]``.
    """
    chars = sorted(dates.charset() | set(EXTRA_CHARS))
    return train_tokenizer(chars, kind="char", vocab_size=len(chars) + len(SPECIAL_TOKENS) + 1,
                           special_tokens=SPECIAL_TOKENS)


@dataclass
class Batch:
    """Model inputs and loss labels for one training step.

    Encoder-decoder: src (B, S) source ids, tgt (B, T) decoder input, labels (B, T).
    Decoder-only: src (B, S) the sequence minus its last token, tgt None, labels (B, S).
    Padding is ``pad_id`` in inputs and :data:`IGNORE_INDEX` in labels.
    """

    src: Tensor
    tgt: Tensor | None
    labels: Tensor

    def to(self, device: torch.device | str) -> Batch:
        return Batch(self.src.to(device), None if self.tgt is None else self.tgt.to(device), self.labels.to(device))

    def __len__(self) -> int:
        return self.src.shape[0]


class DateTask:
    """What both date tasks share: the tokenizer, special ids, decoding and evaluation."""

    name = ""
    arch = ""
    description = ""

    def __init__(self, tokenizer: Tokenizer, *, max_source_len: int = 48, max_new_tokens: int = ISO_LENGTH + 2,
                 examples: Sequence[str] | None = None):
        self.tokenizer = tokenizer
        ids = {role: getattr(tokenizer, f"{role}_id") for role in ("pad", "unk", "bos", "eos", "sep")}
        missing = [role for role, i in ids.items() if i is None]
        if missing:
            raise ValueError(f"{self.name}: the tokenizer has no {', '.join(missing)} token; use build_tokenizer()")
        self.pad_id, self.unk_id, self.bos_id, self.eos_id, self.sep_id = (ids[r] for r in ("pad", "unk", "bos", "eos", "sep"))
        self.max_source_len = max_source_len  # tokens the model input may hold (specials included)
        self.max_new_tokens = max_new_tokens
        self.examples = list(examples) if examples is not None else [e.text for e in dates.examples_for_ui(10)]

    # ---- text -> ids ----------------------------------------------------------------------
    def chars(self, text: str) -> list[int]:
        """Normalised text -> one id per character (no special tokens)."""
        return self.tokenizer.encode(dates.normalize_text(text), add_special_tokens=False).ids

    def target_ids(self, iso: str) -> list[int]:
        """ISO date -> its character ids + [EOS] (what the model should generate)."""
        return self.chars(iso) + [self.eos_id]

    def source_specials(self) -> tuple[list[int], list[int]]:
        """The special tokens before and after a source text's characters."""
        raise NotImplementedError

    def encode_source(self, text: str, max_len: int | None = None) -> tuple[list[int], str | None]:
        """Text -> model input ids (its characters between `source_specials`), at most ``max_len`` (default
        max_source_len) tokens: cut with a notice saying so (else notice None)."""
        before, after = self.source_specials()
        max_len = self.max_source_len if max_len is None else max_len
        chars, notice = self._fit(self.chars(text), max_len - len(before) - len(after), max_len)
        return before + chars + after, notice

    def _fit(self, chars: list[int], room: int, max_len: int) -> tuple[list[int], str | None]:
        if room < 0:
            raise ValueError(f"max_len={max_len} leaves no room for the special tokens")
        if len(chars) <= room:
            return chars, None
        notice = (f"The input has {len(chars)} characters; this model reads at most {room}, "
                  f"so the last {len(chars) - room} were cut off.")
        return chars[:room], notice

    # ---- ids -> text ----------------------------------------------------------------------
    def decode(self, ids: Sequence[int] | Tensor) -> str:
        """Generated ids -> text: stops at the first [EOS], drops special tokens."""
        ids = [int(i) for i in ids]
        if self.eos_id in ids:
            ids = ids[: ids.index(self.eos_id)]
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def labels(self, ids: Sequence[int] | Tensor) -> list[str]:
        """One display label per id (plot axes): the character, ``␣`` for a space, ``[EOS]`` for specials."""
        out = []
        for i in ids:
            tok = self.tokenizer.id_to_token(int(i)) or "[UNK]"
            out.append(_VISIBLE.get(tok, tok))
        return out

    # ---- model runs -----------------------------------------------------------------------
    def generate(self, model: Transformer, texts: Sequence[str], **kwargs: Any) -> Generation:
        """Greedy generation for texts the model can take in one batch (see subclasses)."""
        raise NotImplementedError

    def predict(self, model: Transformer, texts: Sequence[str], batch_size: int = 256) -> list[str]:
        """Texts -> generated answers (greedy), in the order given."""
        raise NotImplementedError

    def exact_match(self, model: Transformer, examples: Sequence[dates.DateExample], batch_size: int = 256) -> float:
        """Fraction of examples whose generated answer equals the ISO target exactly."""
        if not examples:
            raise ValueError("exact_match needs at least one example")
        predictions = self.predict(model, [e.text for e in examples], batch_size)
        return sum(p == e.target for p, e in zip(predictions, examples)) / len(examples)

    def training_batch(self, examples: Sequence[dates.DateExample]) -> Batch:
        raise NotImplementedError

    # ---- storage --------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The checkpoint's task metadata (config.json "task")."""
        return {
            "name": self.name,
            "arch": self.arch,
            "description": self.description,
            "pad_id": self.pad_id,
            "bos_id": self.bos_id,
            "eos_id": self.eos_id,
            "sep_id": self.sep_id,
            "max_source_len": self.max_source_len,
            "max_new_tokens": self.max_new_tokens,
            "examples": list(self.examples),
            "data": dates.describe(),
        }


@contextmanager
def _eval_mode(model: Transformer) -> Iterator[None]:
    """eval() for the block (no dropout while generating), then the previous mode back."""
    was = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was)


class DateTranslation(DateTask):
    """Encoder-decoder: the encoder reads the date's characters, the decoder writes the ISO date."""

    name = "date-translation"
    arch = "encoder-decoder"
    description = ("Translate a date written in English, French, German, Spanish, Italian, Portuguese or Dutch "
                   "(e.g. 'samedi 21 novembre 2026') into ISO YYYY-MM-DD, character by character. "
                   "Cross-attention shows which source characters each output digit reads.")

    def source_specials(self) -> tuple[list[int], list[int]]:
        return [], [self.eos_id]  # chars + [EOS]

    def training_batch(self, examples: Sequence[dates.DateExample]) -> Batch:
        src = [self.encode_source(e.text)[0] for e in examples]
        answers = [self.target_ids(e.target) for e in examples]
        tgt = [[self.bos_id] + a[:-1] for a in answers]  # teacher forcing: shifted right
        return Batch(pad_rows(src, self.pad_id), pad_rows(tgt, self.pad_id), pad_rows(answers, IGNORE_INDEX))

    def generate(self, model: Transformer, texts: Sequence[str], **kwargs: Any) -> Generation:
        """Greedy decoding from [BOS]; kwargs go to explorer.outputs.generate.generate (masks, head_mask)."""
        src = pad_rows([self.encode_source(t)[0] for t in texts], self.pad_id).to(model.device)
        with _eval_mode(model):
            return generate(model, src, bos_id=self.bos_id, eos_id=self.eos_id,
                            max_new_tokens=kwargs.pop("max_new_tokens", self.max_new_tokens), **kwargs)

    def predict(self, model: Transformer, texts: Sequence[str], batch_size: int = 256, **kwargs: Any) -> list[str]:
        """Batches texts of similar length together (little padding), answers in the order given."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[str] = [""] * len(texts)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            gen = self.generate(model, [texts[i] for i in chunk], **kwargs)
            for i, row in zip(chunk, gen.tokens.tolist()):
                out[i] = self.decode(row)
        return out


class DateGPT(DateTask):
    """Decoder-only: ``[BOS] date [SEP]`` is the prompt, the model continues with the ISO date."""

    name = "date-gpt"
    arch = "decoder"
    description = ("A decoder-only (GPT-style) model continues '[BOS] <date> [SEP]' with the ISO date "
                   "YYYY-MM-DD; dates in English, French, German, Spanish, Italian, Portuguese or Dutch. "
                   "Causal self-attention shows which earlier characters each output digit reads.")

    def source_specials(self) -> tuple[list[int], list[int]]:
        return [self.bos_id], [self.sep_id]  # the prompt [BOS] + chars + [SEP]

    def training_batch(self, examples: Sequence[dates.DateExample]) -> Batch:
        inputs, labels = [], []
        for e in examples:
            prompt = self.encode_source(e.text)[0]
            seq = prompt + self.target_ids(e.target)
            inputs.append(seq[:-1])
            # labels[i] is the token after position i; the first answer token is predicted at [SEP].
            label = seq[1:]
            label[: len(prompt) - 1] = [IGNORE_INDEX] * (len(prompt) - 1)
            labels.append(label)
        return Batch(pad_rows(inputs, self.pad_id), None, pad_rows(labels, IGNORE_INDEX))

    def generate(self, model: Transformer, texts: Sequence[str], **kwargs: Any) -> Generation:
        """Greedy continuation of the prompts, which must all have the same length (no padding)."""
        prompts = [self.encode_source(t)[0] for t in texts]
        if len({len(p) for p in prompts}) != 1:
            raise ValueError("decoder-only prompts in one call must have equal length; use predict()")
        src = torch.tensor(prompts, dtype=torch.long, device=model.device)
        with _eval_mode(model):
            return generate(model, src, eos_id=self.eos_id,
                            max_new_tokens=kwargs.pop("max_new_tokens", self.max_new_tokens), **kwargs)

    def predict(self, model: Transformer, texts: Sequence[str], batch_size: int = 256, **kwargs: Any) -> list[str]:
        """Groups prompts of equal length into batches, answers in the order given."""
        by_length: dict[int, list[int]] = defaultdict(list)
        for i, text in enumerate(texts):
            by_length[len(self.encode_source(text)[0])].append(i)
        out: list[str] = [""] * len(texts)
        for indices in by_length.values():
            for start in range(0, len(indices), batch_size):
                chunk = indices[start : start + batch_size]
                gen = self.generate(model, [texts[i] for i in chunk], **kwargs)
                for i, row in zip(chunk, gen.tokens.tolist()):
                    out[i] = self.decode(row)
        return out


TASKS: dict[str, type[DateTask]] = {DateTranslation.name: DateTranslation, DateGPT.name: DateGPT}


def make_task(name: str, tokenizer: Tokenizer | None = None, **kwargs: Any) -> DateTask:
    """A task by name (``date-translation`` or ``date-gpt``), with :func:`build_tokenizer` by default."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; choose from {', '.join(TASKS)}")
    return TASKS[name](tokenizer if tokenizer is not None else build_tokenizer(), **kwargs)


def task_from_dict(d: dict[str, Any], tokenizer: Tokenizer) -> DateTask:
    """Rebuild a task from checkpoint metadata and the checkpoint's tokenizer (ids must agree)."""
    name = d.get("name")
    if name not in TASKS:
        raise ValueError(f"task {name!r} is not a date task; known: {', '.join(TASKS)}")
    task = TASKS[name](tokenizer, max_source_len=int(d.get("max_source_len", 48)),
                       max_new_tokens=int(d.get("max_new_tokens", ISO_LENGTH + 2)), examples=d.get("examples"))
    for key in ("pad_id", "bos_id", "eos_id", "sep_id"):
        if key in d and d[key] != getattr(task, key):
            raise ValueError(f"task {name}: {key}={d[key]} in the metadata but {getattr(task, key)} in the tokenizer")
    return task


def exact_match(loaded: LoadedModel, examples: Sequence[dates.DateExample], batch_size: int = 256) -> float:
    """Exact-match accuracy of a loaded model on date examples, greedy decoding."""
    task = task_from_dict(loaded.task, loaded.tokenizer)
    return task.exact_match(loaded.model, examples, batch_size)

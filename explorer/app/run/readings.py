"""Typed text -> the sequences the interpretation tabs read (head roles, activation patching, logit lens).

Shapes: T tokens of one stack's sequence. An encoder and a language model read a sentence as typed. A
sequence model (the date models, a translation model) is most telling on its own answer: it first generates
it greedily (every head on, default masks), then the decoder reads it without the end token (so its last
position predicts the end), as teacher forcing does. For
activation patching both sentences must lead the decoder to the same place, so both read the answers' common
prefix: the decoder input is then the same for both (encoder-decoder) or prompt + the same prefix
(decoder-only), and the last position is where the two answers part.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ...checkpoints import LoadedModel
from ..serving.errors import AppError
from .inputs import codec_for, encode_inputs
from .model_run import answer, generate_rows, is_language_model
from .toggles import Toggles


@dataclass(frozen=True)
class Reading:
    """One sentence as the model reads it: the first stack's ids and, for an encoder-decoder, the decoder's."""

    src: list[int]  # the first stack's ids (decoder-only: the whole sequence, prompt and answer)
    src_labels: list[str]  # one readable label per id
    tgt: list[int] | None = None  # an encoder-decoder's decoder input: [start] + answer; None otherwise
    tgt_labels: list[str] | None = None

    @property
    def decoder_ids(self) -> list[int]:
        """The ids the decoder (or the only stack) reads."""
        return self.src if self.tgt is None else self.tgt

    @property
    def decoder_labels(self) -> list[str]:
        return self.src_labels if self.tgt_labels is None else self.tgt_labels

    def tensors(self, device: torch.device | str | None = None) -> tuple[Tensor, Tensor | None]:
        """(1, S) source ids and (1, T) decoder input (None unless encoder-decoder), for the model."""
        src = torch.tensor([self.src], dtype=torch.long, device=device)
        return src, None if self.tgt is None else torch.tensor([self.tgt], dtype=torch.long, device=device)


def reads_answer(loaded: LoadedModel) -> bool:
    """True for sequence models, whose decoder is shown on their own greedy answer."""
    return loaded.arch != "encoder" and not is_language_model(loaded)


def common_prefix(a: list[int], b: list[int]) -> list[int]:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


@torch.inference_mode()
def read_texts(loaded: LoadedModel, text1: str | None, text2: str | None, max_tokens: int, *,
               common_answer: bool = False) -> list[Reading]:
    """The typed sentences (one, or two when `text2` is given) as the model reads them (module docstring).

    common_answer: a sequence model's sentences both read the common prefix of their two answers, so the decoder's
    last position is where the answers part (activation patching)."""
    codec = codec_for(loaded)
    inputs = encode_inputs(loaded, codec, text1, text2, max_tokens)
    if not reads_answer(loaded):
        return [Reading(list(r), list(lab)) for r, lab in zip(inputs.rows, inputs.labels)]
    eos = loaded.task.get("eos_id", loaded.target_tokenizer.eos_id)
    # The decoder reads the answer without its end token: its last position predicts the end (or the next token).
    answers = [[i for i in answer(loaded, codec, g, b).ids if i != eos]
               for g, b in generate_rows(loaded, inputs, Toggles(), None)]
    if common_answer and len(answers) == 2:
        shared = common_prefix(*answers)
        answers = [shared, shared]
    if loaded.arch == "decoder":
        return [Reading([*r, *a], [*lab, *codec.labels(a)]) for r, lab, a in zip(inputs.rows, inputs.labels, answers)]
    bos = loaded.task.get("bos_id", loaded.target_tokenizer.bos_id)
    if bos is None:
        raise AppError("this model's task names no start token (bos_id): its decoder cannot be read")
    return [Reading(list(r), list(lab), [bos, *a], codec.labels([bos, *a]))
            for r, lab, a in zip(inputs.rows, inputs.labels, answers)]


def token_id(loaded: LoadedModel, text: str | None, what: str, notices: list[str] | None = None) -> int | None:
    """A typed token -> its id in the model's output vocabulary; None when left blank.

    Token text ("␣", as in the token table, stands for a space) must be exactly one token, unless `notices` is given:
    then text that is several tokens gives its first, and a notice saying so is added. "#123" is the id 123 (the
    token table lists ids), so a digit typed alone is the digit's token."""
    text = (text or "").strip("\n")
    if not text.strip():
        return None
    vocab = loaded.config.tgt_vocab_size or loaded.config.vocab_size
    number = text.strip()
    if number.startswith("#") and number[1:].isdigit():
        ids = [int(number[1:])]
    else:
        ids = loaded.target_tokenizer.encode(text.replace("␣", " "), add_special_tokens=False).ids
        if not ids or (len(ids) > 1 and notices is None):
            raise AppError(f"{what}: {text[:30]!r} is {len(ids)} tokens for this model; type one token, or "
                           "#id (the token table lists ids)")
        if len(ids) > 1:
            labels = codec_for(loaded).labels(ids[:6])
            notices.append(f"{what}: {text[:30]!r} is {len(ids)} tokens for this model ({' '.join(labels)}"
                           f"{' …' if len(ids) > 6 else ''}); the first, {labels[0]!r}, is used.")
    if ids[0] >= vocab:
        raise AppError(f"{what}: id {ids[0]} is outside the vocabulary (0..{vocab - 1})")
    return int(ids[0])


def token_text(loaded: LoadedModel, token: int, label: str) -> str:
    """What a target box shows for token `token` whose page label is `label`: the label when typing it gives that
    token back (token_id), else "#id" (a label the tokenizer reads otherwise, such as a special token's)."""
    try:
        return label if token_id(loaded, label, "token") == token else f"#{token}"
    except AppError:
        return f"#{token}"

"""A task's pairs as the model reads them: padded batches of ids with their key masks and the positions read.

Shapes: P pairs, T decoder length (the sequence of a decoder-only model, the decoder input of an encoder-decoder),
S source length (encoder-decoders).

    Inputs.ids(corrupted) -> (P, T); mask (P, T) True = real token; read (P,) the last real position
    src_ids(corrupted) -> (P, S); src_mask (P, S)         (encoder-decoders; None otherwise)
    answers, wrongs (P,) long

Rows are padded on the right, so a causal decoder's real positions never see the padding; the padding is masked as
keys everywhere (the model is given the key masks, so a real token equal to the padding id stays a token).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch import Tensor

from ...model import Transformer
from .pairs import Pair


@dataclass(frozen=True)
class Inputs:
    clean: Tensor  # (P, T) decoder side
    corrupted: Tensor  # (P, T) decoder side (an encoder-decoder's decoder input: the same as clean)
    mask: Tensor  # (P, T) bool
    read: Tensor  # (P,) long: where the answer is read
    answers: Tensor  # (P,) long
    wrongs: Tensor  # (P,) long (-1 where none is known yet)
    src_clean: Tensor | None = None  # (P, S)
    src_corrupted: Tensor | None = None
    src_mask: Tensor | None = None
    index: Tensor | None = None  # (P,) each row's pair in the task

    @property
    def size(self) -> int:
        return self.clean.shape[0]

    def ids(self, corrupted: bool) -> Tensor:
        return self.corrupted if corrupted else self.clean

    def src_ids(self, corrupted: bool) -> Tensor | None:
        return self.src_corrupted if corrupted else self.src_clean

    def with_answers(self, answers: Tensor, wrongs: Tensor) -> "Inputs":
        return replace(self, answers=answers.to(self.answers.device), wrongs=wrongs.to(self.wrongs.device))


def _pad(rows: list[tuple[int, ...]], pad: int, device) -> tuple[Tensor, Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros(len(rows), width, dtype=torch.bool)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = torch.tensor(r)
        mask[i, :len(r)] = True
    return ids.to(device), mask.to(device)


def check_pairs(model: Transformer, pairs: list[Pair], label: str = "pair") -> None:
    """Every id inside the vocabularies, lengths within max_len, tgt exactly for an encoder-decoder; a message names
    the pair as `label` and its number ("line" for pairs read from text)."""
    config = model.config
    two = config.arch == "encoder-decoder"
    vocab = config.vocab_size
    tgt_vocab = config.resolved_tgt_vocab_size if two else vocab
    for p in pairs:
        where = f"{label} {p.line}" if p.line is not None else "a pair"
        if two and p.tgt is None:
            raise ValueError(f"{where}: an encoder-decoder needs the decoder's input (tgt)")
        if not two and p.tgt is not None:
            raise ValueError(f"{where}: only an encoder-decoder takes a decoder input (tgt)")
        for what, ids, v in (("clean prompt", p.clean, vocab), ("corrupted prompt", p.corrupted, vocab),
                             ("decoder input", p.tgt or (), tgt_vocab)):
            bad = [i for i in ids if not 0 <= i < v]
            if bad:
                raise ValueError(f"{where}: the {what} holds token id {bad[0]}, outside the vocabulary (0..{v - 1})")
            if len(ids) > config.max_len:
                raise ValueError(f"{where}: the {what} has {len(ids)} tokens, more than the model's {config.max_len}")
        for what, token in (("answer", p.answer), ("wrong answer", p.wrong)):
            if token is not None and not 0 <= token < tgt_vocab:
                raise ValueError(f"{where}: the {what} {token} is outside the vocabulary (0..{tgt_vocab - 1})")
        if p.answer is not None and p.answer == p.wrong:
            raise ValueError(f"{where}: the answer and the wrong answer are the same token ({p.answer})")


def make_inputs(model: Transformer, pairs: list[Pair], index: list[int] | None = None) -> Inputs:
    """One padded batch of pairs on the model's device (answers / wrongs unknown: -1)."""
    device = model.device
    pad = model.config.pad_id if model.config.pad_id is not None else 0
    answers = torch.tensor([-1 if p.answer is None else p.answer for p in pairs], device=device)
    wrongs = torch.tensor([-1 if p.wrong is None else p.wrong for p in pairs], device=device)
    index = torch.tensor(index if index is not None else range(len(pairs)))
    if model.config.arch == "encoder-decoder":
        src, src_mask = _pad([p.clean for p in pairs], pad, device)
        src_corrupted, _ = _pad([p.corrupted for p in pairs], pad, device)
        tgt, mask = _pad([p.tgt for p in pairs], pad, device)
        return Inputs(tgt, tgt, mask, mask.sum(1) - 1, answers, wrongs, src, src_corrupted, src_mask, index)
    clean, mask = _pad([p.clean for p in pairs], pad, device)
    corrupted, _ = _pad([p.corrupted for p in pairs], pad, device)
    return Inputs(clean, corrupted, mask, mask.sum(1) - 1, answers, wrongs, index=index)


def batches(model: Transformer, pairs: list[Pair], size: int) -> list[Inputs]:
    """The pairs in batches of at most `size`, similar lengths together (little padding)."""
    order = sorted(range(len(pairs)), key=lambda i: (len(pairs[i].clean), len(pairs[i].tgt or ())))
    return [make_inputs(model, [pairs[i] for i in order[s:s + size]], order[s:s + size])
            for s in range(0, len(order), size)]

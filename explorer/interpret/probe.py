"""The probe the app generates: random tokens from the model's own vocabulary, repeated.

A row is ``prefix`` (e.g. [BOS]) + s + s (+ s ...), where s is a span of distinct random ordinary
tokens (no special tokens), drawn with a seed. Every token of the second and later copies has
exactly one earlier occurrence, so induction is defined there and nowhere else, and a model can
predict those tokens only by copying: the loss on the repeated copy against the loss on the first
copy measures in-context copying, and switching heads off shows which heads carry it.

Shapes: B batch, P prefix length, S span length, R repeats, T = P + R*S, V vocabulary.

    repeated_tokens(tokenizer, span=S, repeats=R, batch=B) -> RepeatedTokens(ids (B, T))
    copy_losses(model, probe, head_mask=None) -> CopyLosses(first, repeated) mean next-token losses
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from ..model import Transformer
from ..tokenizer import Tokenizer


@dataclass
class RepeatedTokens:
    """A probe: ``prefix`` tokens (e.g. [BOS]), then the same ``span`` random tokens ``repeats`` times."""

    ids: Tensor  # (B, prefix + repeats * span), long
    prefix: int  # tokens before the first copy
    span: int  # tokens per copy; all distinct within a row

    @property
    def induction_positions(self) -> Tensor:
        """(N,) query positions where induction is defined: every token of the second and later copies."""
        return torch.arange(self.prefix + self.span, self.ids.shape[1])

    @property
    def first_copy_positions(self) -> Tensor:
        """(span,) positions of the first copy, whose tokens cannot be predicted from earlier ones."""
        return torch.arange(self.prefix, self.prefix + self.span)


def probe_vocabulary(tokenizer: Tokenizer, vocab_size: int | None = None) -> Tensor:
    """(N,) ids of the tokenizer's ordinary tokens (no special or added-special tokens), below ``vocab_size``."""
    limit = tokenizer.vocab_size if vocab_size is None else min(vocab_size, tokenizer.vocab_size)
    special = {tokenizer.token_to_id(t) for t in tokenizer.specials.values()}
    special |= {i for i, tok in tokenizer.backend.get_added_tokens_decoder().items() if tok.special}
    return torch.tensor([i for i in range(limit) if i not in special], dtype=torch.long)


def repeated_tokens(tokenizer: Tokenizer, *, span: int = 20, repeats: int = 2, batch: int = 1, seed: int = 0,
                    vocab_size: int | None = None, prefix: Sequence[int] | None = None) -> RepeatedTokens:
    """Seeded probe rows: ``prefix`` + s + s (+ s ...), s = ``span`` distinct random ordinary tokens per row.

    ``prefix`` None = the tokenizer's [BOS] (or [CLS]) if it has one, else nothing, as TransformerLens
    puts BOS first. ``vocab_size`` limits ids to the model's embedding (see :func:`probe_vocabulary`).
    """
    if span < 1 or repeats < 2 or batch < 1:
        raise ValueError(f"need span >= 1, repeats >= 2, batch >= 1; got {span}, {repeats}, {batch}")
    vocab = probe_vocabulary(tokenizer, vocab_size)
    if span > len(vocab):
        raise ValueError(f"span={span} distinct tokens do not fit a vocabulary of {len(vocab)} ordinary tokens")
    if prefix is None:
        first = tokenizer.bos_id if tokenizer.bos_id is not None else tokenizer.cls_id
        prefix = [] if first is None else [first]
    gen = torch.Generator().manual_seed(seed)
    spans = torch.stack([vocab[torch.randperm(len(vocab), generator=gen)[:span]] for _ in range(batch)])  # (B, S)
    head = torch.tensor(list(prefix), dtype=torch.long).expand(batch, len(prefix))  # (B, P)
    return RepeatedTokens(torch.cat([head, spans.repeat(1, repeats)], dim=1), len(prefix), span)


@dataclass
class CopyLosses:
    first: float  # mean next-token loss (nats) at the first copy's positions: nothing to copy yet
    repeated: float  # the same at the repeated copies' positions, whose next token the first copy shows
    per_position: Tensor  # (T - 1,) mean loss of predicting token t+1 at position t, over the batch


@torch.no_grad()
def copy_losses(model: Transformer, probe: RepeatedTokens, *,
                head_mask: Mapping[str, Any] | None = None) -> CopyLosses:
    """Next-token losses of a decoder-only model on the probe, first copy vs repeated copies.

    first: queries at the first copy's positions (their next token is random, or the start of the
    repeat, which nothing announces). repeated: queries at the later copies' positions except the
    last position of the row (no next token). ``head_mask`` as in the model's forward ({"decoder": (L, H)}).
    """
    if model.config.arch != "decoder":
        raise ValueError("copy losses need a decoder-only language model")
    ids = probe.ids.to(model.device)
    logits = model(ids, head_mask=head_mask, need_weights=False).logits[:, :-1]  # (B, T-1, V)
    losses = F.cross_entropy(logits.flatten(0, 1).float(), ids[:, 1:].flatten(), reduction="none")
    per_position = losses.view(ids.shape[0], -1).mean(0).cpu()  # (T-1,) query t predicts token t+1
    first = per_position[probe.first_copy_positions].mean()
    repeated = per_position[probe.induction_positions[:-1]].mean()
    return CopyLosses(float(first), float(repeated), per_position)

"""Which attention the figures of a Run show (`View`), and the names of the attention kinds.

Attention kinds are "encoder" (self), "decoder" (self) and "cross"; a model's kinds map each to (layers, heads).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..serving.errors import AppError

KIND_TITLES = {"encoder": "encoder self-attention", "decoder": "decoder self-attention",
               "cross": "cross-attention (decoder → encoder)"}
KIND_SHORT = {"encoder": "encoder self-attn.", "decoder": "decoder self-attn.", "cross": "cross-attention"}


def default_kind(kinds: Mapping[str, Any]) -> str:
    """The attention the page shows first for a model: its first kind (encoder, then decoder, then cross), the
    simplest: one sentence looking at itself, a square map, before two sequences read one another (docs/app.md)."""
    return next(iter(kinds))


MEASURES = {"weights": "attention weights", "values": "weight × |value written| (Kobayashi et al. 2020)"}


@dataclass(frozen=True)
class View:
    """Which attention the figures show: kind ("" = the model's first), layer, head, sentence (1 or 2); for a
    language model, after which position the next-token list is read (negative: from the end; -1 = last token);
    and what the head and all-heads maps measure: "weights", or "values" (each weight times the length of what its
    key writes through that head, explorer.interpret.value_weighted)."""

    kind: str = ""
    layer: int = 0
    head: int = 0
    sentence: int = 1
    position: int = -1
    measure: str = "weights"

    def __post_init__(self) -> None:
        if self.measure not in MEASURES:
            raise AppError(f"unknown measure {self.measure!r}; choose from {', '.join(MEASURES)}")

    def fitted(self, kinds: dict[str, tuple[int, int]], n_sentences: int) -> "View":
        """This view with every field clamped to what exists (kind -> (layers, heads))."""
        kind = self.kind if self.kind in kinds else next(iter(kinds))
        n_layers, n_heads = kinds[kind]
        return View(kind, min(max(int(self.layer), 0), n_layers - 1), min(max(int(self.head), 0), n_heads - 1),
                    min(max(int(self.sentence), 1), n_sentences), int(self.position), self.measure)

    def position_in(self, length: int) -> int:
        """The next-token position for a sentence of `length` tokens, clamped into it."""
        p = self.position + length if self.position < 0 else self.position
        return min(max(p, 0), length - 1)

    @property
    def row(self) -> int:
        """The batch row of the chosen sentence."""
        return self.sentence - 1

    def where(self) -> str:
        """Short, for figure titles: "cross-attention L1 H0 · sentence 2"."""
        return f"{KIND_SHORT[self.kind]} L{self.layer} H{self.head} · sentence {self.sentence}"

"""The Gradio boundary's text forms of heads: "L0 H3" checkbox labels and the overview's tile-click
messages. Everywhere else a head is a `(layer, head)` pair."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..run.toggles import Head
from ..serving.errors import AppError

_HEAD_LABEL = re.compile(r"L(\d{1,4}) H(\d{1,4})")
_TILE_MESSAGE = re.compile(r"(\d{1,4}),(\d{1,4})(?:,\d+)?")


def head_label(layer: int, head: int) -> str:
    return f"L{layer} H{head}"


def head_labels(n_layers: int, n_heads: int) -> list[str]:
    """Every head of one attention kind, layer by layer."""
    return [head_label(layer, head) for layer in range(n_layers) for head in range(n_heads)]


def parse_heads(labels: Iterable[str] | None) -> frozenset[Head]:
    """Checkbox labels -> (layer, head) pairs; AppError for anything not of the form "L0 H1"."""
    heads = set()
    for label in labels or ():
        m = _HEAD_LABEL.fullmatch(str(label).strip())
        if not m:
            raise AppError(f"head label {str(label)[:40]!r} is not of the form 'L0 H1'")
        heads.add((int(m.group(1)), int(m.group(2))))
    return frozenset(heads)


def clicked_tile(message: str | None) -> Head | None:
    """(layer, head) from the page script's "layer,head,stamp" message for a clicked overview tile.

    The script reads the numbers from the clicked cell's category names ("layer 2 · query …", "head 5 · key …");
    anything else (a gap, a hand-typed value) gives None. Out-of-range numbers are clamped by the view.
    """
    m = _TILE_MESSAGE.fullmatch((message or "").strip())
    return (int(m.group(1)), int(m.group(2))) if m else None

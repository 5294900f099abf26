"""A notebook call's arguments -> what the page's Run takes: the model (`loaded`), the toggles (`toggles`: masks and
head switches) and the view (`view`: kind, layer, head, sentence). Head switches are given as the heads switched
*off*, `(layer, head)` pairs, for one kind or per kind: {"decoder": [(0, 1)], "cross": [(1, 0)]}.

Shapes: L layers, H heads per attention kind.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from ..app.run.toggles import Toggles
from ..app.run.view import View, default_kind
from ..checkpoints import LoadedModel

HeadsOff = Iterable[tuple[int, int]] | Mapping[str, Iterable[tuple[int, int]]] | None


def loaded_model(model: Any, tokenizer: Any = None) -> LoadedModel:
    """A LoadedModel as it is; a shipped checkpoint's name or a folder (explorer.load); a live transformers model
    (explorer.from_transformers, sharing its tensors where it can)."""
    if isinstance(model, LoadedModel):
        return model
    if isinstance(model, (str, os.PathLike)):
        from ..loading import load

        return load(model, "cpu")
    if hasattr(model, "state_dict") and hasattr(model, "config"):
        from ..importers.live import from_transformers

        return from_transformers(model, tokenizer)
    raise TypeError(f"explorer.notebook takes a LoadedModel, a checkpoint name or a transformers model, not "
                    f"{type(model).__name__}")


def kind_of(loaded: LoadedModel, kind: str = "") -> str:
    """The attention kind asked for ("" = the one the page shows first); ValueError naming the kinds there are."""
    kinds = loaded.config.attention_kinds()
    if not kind:
        return default_kind(kinds)
    if kind not in kinds:
        raise ValueError(f"this model has no {kind!r} attention; it has {', '.join(kinds)}")
    return kind


def heads_on(loaded: LoadedModel, heads_off: HeadsOff, kind: str) -> dict[str, frozenset[tuple[int, int]]] | None:
    """The page's "heads switched on" per kind from the heads switched off (None: every head on)."""
    if not heads_off:
        return None
    per_kind = dict(heads_off) if isinstance(heads_off, Mapping) else {kind: heads_off}
    kinds = loaded.config.attention_kinds()
    out = {}
    for k, off in per_kind.items():
        if k not in kinds:
            raise ValueError(f"this model has no {k!r} attention; it has {', '.join(kinds)}")
        n_layers, n_heads = kinds[k]
        off = {(int(layer), int(head)) for layer, head in off}
        bad = sorted((layer, head) for layer, head in off if not (0 <= layer < n_layers and 0 <= head < n_heads))
        if bad:
            raise ValueError(f"head L{bad[0][0]} H{bad[0][1]} does not exist in the {k} attention ({n_layers} layers "
                             f"x {n_heads} heads)")
        out[k] = frozenset((layer, head) for layer in range(n_layers) for head in range(n_heads)) - off
    return out


def toggles(loaded: LoadedModel, kind: str, heads_off: HeadsOff = None, padding: bool = True, causal: bool = True,
            custom: str = "none", block_token: int = 0, window: int = 2) -> Toggles:
    """The page's Toggles (masks as the page's switches, heads off as pairs)."""
    return Toggles(bool(padding), bool(causal), custom, int(block_token), int(window),
                   heads_on(loaded, heads_off, kind))


def view(kind: str, layer: int = 0, head: int = 0, sentence: int = 1, measure: str = "weights") -> View:
    return View(kind, int(layer), int(head), int(sentence), -1, measure)

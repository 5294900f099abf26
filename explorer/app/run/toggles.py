"""What the person toggled -> what the model is called with: head masks and the custom mask.

Shapes: L layers, H heads, T tokens. Heads are `(layer, head)` pairs here; the page's "L0 H3" labels are
translated at the Gradio boundary (explorer.app.events). Padding and causal masks are flags the model
combines itself; the masks it applied come back with its output (`TransformerOutput.masks`), and those
are what the mask figures draw.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

from ...model import TransformerConfig
from ...model import masks as M
from ..serving.errors import AppError

Head = tuple[int, int]  # (layer, head)
CUSTOM_MASKS = ("none", "block token", "local window", "no self")


@dataclass(frozen=True)
class Toggles:
    """Masks and heads as the person set them; the defaults are the baseline run."""

    padding: bool = True  # padding mask on
    causal: bool = True  # look-ahead mask in decoder self-attention on
    custom: str = "none"  # one of CUSTOM_MASKS, on the first stack's self-attention
    block_token: int = 0  # the key position "block token" hides
    window: int = 2  # half-width k of "local window"
    heads_on: Mapping[str, frozenset[Head]] | None = None  # kind -> heads switched on; None / missing kind = all

    def __post_init__(self) -> None:
        if self.custom not in CUSTOM_MASKS:
            raise AppError(f"unknown custom mask {self.custom!r}; choose from {', '.join(CUSTOM_MASKS)}")

    @property
    def default_masks(self) -> bool:
        return self.padding and self.causal and self.custom == "none"


def head_mask(config: TransformerConfig, toggles: Toggles) -> dict[str, torch.Tensor] | None:
    """kind -> (L, H) float mask (1 = on) for the model; None when every head is on."""
    if toggles.heads_on is None:
        return None
    kinds = config.attention_kinds()
    unknown = set(toggles.heads_on) - set(kinds)
    if unknown:
        raise AppError(f"this model has no {', '.join(sorted(unknown))} attention")
    out = {}
    for kind, (n_layers, n_heads) in kinds.items():
        on = toggles.heads_on.get(kind)
        mask = torch.ones(n_layers, n_heads)
        if on is not None:
            mask.zero_()
            for layer, head in on:
                if not (0 <= layer < n_layers and 0 <= head < n_heads):
                    raise AppError(f"head L{layer} H{head} does not exist in the {kind} attention ({n_layers} "
                                   f"layers x {n_heads} heads)")
                mask[layer, head] = 1.0
        out[kind] = mask
    return None if all(bool(m.all()) for m in out.values()) else out


def custom_mask(toggles: Toggles, size: int, device: torch.device | str | None = None
                ) -> tuple[torch.Tensor | None, str | None]:
    """(T, T) custom mask for the first self-attention stack, and a notice if it had to be adjusted."""
    if toggles.custom == "local window":
        return M.local_window_mask(size, max(0, int(toggles.window)), device), None
    if toggles.custom == "no self":
        return M.no_self_mask(size, device), None
    if toggles.custom == "block token":
        k, notice = int(toggles.block_token), None
        if not 0 <= k < size:
            notice = f"Position {k} does not exist (positions 0..{size - 1}); blocked position {size - 1} instead."
            k = size - 1
        return M.block_keys_mask(size, size, [k], device), notice
    return None, None

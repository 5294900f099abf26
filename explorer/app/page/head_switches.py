"""The page's head switches (one checkbox group per attention kind, labels "L0 H1", checked = on) set from heads:
one function for every handler that sets them (a model change, "All on", "Only this head", a role switched off, a
link, the second model of a comparison)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import gradio as gr

from ..run.toggles import Head
from .head_labels import head_label, head_labels


def heads_classes(per_layer: int) -> list[str]:
    """A head-switch group's CSS classes: on a phone each layer starts a row of its own (assets.CSS, heads-<H>)."""
    return ["heads", f"heads-{per_layer}"]


def switch_updates(groups: Mapping[str, Any], kinds: Mapping[str, tuple[int, int]],
                   on: Mapping[str, Collection[Head]] | None = None, *, choices: bool = True) -> dict:
    """{group: update} for a model whose attention kinds are `kinds` (kind -> (layers, heads)): every head on, or for
    a kind in `on` only its heads there. `choices`: the groups get the model's labels and are shown only for its
    kinds (after a model change); else only their values change."""
    updates = {}
    for kind, group in groups.items():
        labels = head_labels(*kinds[kind]) if kind in kinds else []
        if on is not None and kind in on:
            wanted = {head_label(*h) for h in on[kind]}
            value = [label for label in labels if label in wanted]
        else:
            value = labels
        per_layer = kinds[kind][1] if kind in kinds else 0
        updates[group] = (gr.update(choices=labels, value=value, visible=bool(labels), elem_classes=heads_classes(
            per_layer)) if choices else value)
    return updates

"""The state line: every toggle a Run used, in one line of words ("Causal mask off · cross L0 H1, L1 H3 off ·
window 2"), shown at the top of the results on every tab, so a class always sees what is switched."""

from __future__ import annotations

from collections.abc import Mapping

from ...outputs.sampling import Sampling
from .sampled import sampling_words
from .toggles import Toggles

KIND_WORDS = {"encoder": "encoder", "decoder": "decoder", "cross": "cross"}
NOTHING = "No toggle is active: every head on, the model's own masks."


def heads_text(layers_heads: list[tuple[int, int]]) -> str:
    """[(0, 1), (1, 3)] -> "L0 H1, L1 H3"."""
    return ", ".join(f"L{layer} H{head}" for layer, head in sorted(layers_heads))


def state_line(toggles: Toggles, kinds: Mapping[str, tuple[int, int]], sampling: Sampling | None = None) -> str:
    """The toggles of a Run in words (plain text; the page escapes it). `kinds`: the model's attention kinds ->
    (layers, heads), for the heads switched off; `sampling`: how its generated tokens were drawn (None: greedy, not
    said), so that a screenshot of a sampled Run is never taken for greedy."""
    line = toggles_line(toggles, kinds)
    return line + (f" · Generated tokens {sampling_words(sampling)}" if sampling is not None else "")


def toggles_line(toggles: Toggles, kinds: Mapping[str, tuple[int, int]]) -> str:
    """The toggles alone, in words."""
    parts = []
    if not toggles.padding:
        parts.append("Padding mask off")
    if not toggles.causal and "decoder" in kinds:
        parts.append("Causal mask off")
    if toggles.custom == "block token":
        parts.append(f"position {toggles.block_token} blocked")
    elif toggles.custom == "local window":
        parts.append(f"window {toggles.window}")
    elif toggles.custom == "no self":
        parts.append("no attention to self")
    for kind, (n_layers, n_heads) in kinds.items():
        on = (toggles.heads_on or {}).get(kind)
        if on is None:
            continue
        off = [(la, h) for la in range(n_layers) for h in range(n_heads) if (la, h) not in on]
        if off:
            everything = len(off) == n_layers * n_heads
            parts.append(f"every {KIND_WORDS[kind]} head off" if everything else
                         f"{KIND_WORDS[kind]} {heads_text(off)} off")
    if not parts:
        return NOTHING
    return "Toggles: " + " · ".join(parts)

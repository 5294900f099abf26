"""When no key is masked for the Inside a head tab's query: one line saying why, and a one-click way to a query that
has masked keys (a middle token of decoder self-attention, where the causal mask hides every later token), so that
the worked example's mask step shows "−∞" at least once (docs/app.md, "Inside a head").

The line and its button are HTML inside the steps; the page script (script.py) writes the button's target,
"kind|stamp", into the hidden #head-masked box, and tab.HeadEvents.to_masked sets the page's kind and asks for the
middle query (`HeadState.middle`) before the page's Run. Pure: no Gradio, no model.

    unmasked_html(kind, causal_on, query, real, kinds) -> str ("" when a key is masked is not the question here)
    masked_target(kind, causal_on, query, real, kinds) -> the kind to open, or None
    parse_target(text, kinds) -> the kind the button names (ValueError for anything else)
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from ...run.view import KIND_TITLES


def masked_target(kind: str, causal_on: bool, query: int, real: int, kinds: Mapping[str, Any]) -> str | None:
    """The kind whose middle query has masked keys (decoder self-attention with the causal mask), or None."""
    if not causal_on or "decoder" not in kinds:
        return None
    if kind == "decoder" and (real < 3 or query < real - 1):  # too short for a middle, or already not the last
        return None
    return "decoder"


def why_unmasked(kind: str, causal_on: bool, query: int, real: int) -> str:
    """Why no key is masked for this query, in plain words."""
    if kind == "decoder" and not causal_on:
        return "the causal mask is off (Causal mask unticked), so every token may look ahead."
    if kind == "decoder" and query >= real - 1:
        return "the causal mask hides only the tokens after the query, and none come after the last one."
    if kind == "cross":
        return "cross-attention may read every token of the source sentence (only its padding would be masked)."
    return ("in the encoder every token may look at every token of its sentence; only padding is masked, and one "
            "sentence has none.")


def unmasked_html(kind: str, causal_on: bool, query: int, real: int, kinds: Mapping[str, Any]) -> str:
    """The mask step's line when nothing is masked here, with a button to a query that has masked keys."""
    line = f"<b>Nothing is masked for this query:</b> {html.escape(why_unmasked(kind, causal_on, query, real))}"
    target = masked_target(kind, causal_on, query, real, kinds)
    if target is not None:
        where = html.escape(KIND_TITLES[target])
        line += (f' <button type="button" class="head-masked-go" data-head-masked="{target}" '
                 f'style="margin-left:4px;padding:2px 10px;border:1px solid #999;border-radius:6px;cursor:pointer">'
                 f"See the mask at work: {where}, a middle token</button>")
    return f'<p class="head-unmasked">{line}</p>'


def parse_target(text: Any, kinds: Mapping[str, Any]) -> str:
    """"kind|stamp" as the page script writes it -> kind (one the model has); ValueError for anything else."""
    kind = str(text or "").split("|")[0]
    if kind not in kinds:
        raise ValueError(f"not a kind of this model: {kind[:20]!r}")
    return kind

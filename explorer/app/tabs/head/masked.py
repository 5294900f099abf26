"""When no key is masked for the Inside a head tab's query: one line saying why, and a one-click way to a query that
has masked keys (a middle token of decoder self-attention, where the causal mask hides every later token), so that
the worked example's mask step shows "−∞" at least once (docs/app.md, "Inside a head").

The line and its button are HTML inside the steps; the page script (script.py) writes the button's target,
"kind|stamp", into the hidden #head-masked box, and tab.HeadEvents.to_masked sets the page's kind and asks for the
middle query (`HeadState.middle`) before the page's Run. Pure: no Gradio, no model.

    unmasked_html(kind, causal_on, query, real, kinds, lang) -> str ("" when a key is masked is not the question here)
    masked_target(kind, causal_on, query, real, kinds) -> the kind to open, or None
    parse_target(text, kinds) -> the kind the button names (ValueError for anything else)
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from ...i18n.words import ENGLISH, t


def masked_target(kind: str, causal_on: bool, query: int, real: int, kinds: Mapping[str, Any]) -> str | None:
    """The kind whose middle query has masked keys (decoder self-attention with the causal mask), or None."""
    if not causal_on or "decoder" not in kinds:
        return None
    if kind == "decoder" and (real < 3 or query < real - 1):  # too short for a middle, or already not the last
        return None
    return "decoder"


def why_unmasked(kind: str, causal_on: bool, query: int, real: int, lang: str = ENGLISH) -> str:
    """Why no key is masked for this query, in plain words (in `lang`)."""
    if kind == "decoder" and not causal_on:
        return t("head.steps.why_causal_off", lang)
    if kind == "decoder" and query >= real - 1:
        return t("head.steps.why_last", lang)
    if kind == "cross":
        return t("head.steps.why_cross", lang)
    return t("head.steps.why_encoder", lang)


def unmasked_html(kind: str, causal_on: bool, query: int, real: int, kinds: Mapping[str, Any],
                  lang: str = ENGLISH) -> str:
    """The mask step's line when nothing is masked here, with a button to a query that has masked keys (in `lang`)."""
    why = html.escape(why_unmasked(kind, causal_on, query, real, lang))
    line = f"<b>{html.escape(t('head.steps.nothing_masked', lang))}</b> {why}"
    target = masked_target(kind, causal_on, query, real, kinds)
    if target is not None:
        where = t(f"figure.{target}", lang)  # the kind's title (view.KIND_TITLES), in the language
        line += (f' <button type="button" class="head-masked-go" data-head-masked="{target}" '
                 f'style="margin-left:4px;padding:2px 10px;border:1px solid #999;border-radius:6px;cursor:pointer">'
                 f"{html.escape(t('head.steps.see_mask', lang, where=where))}</button>")
    return f'<p class="head-unmasked">{line}</p>'


def parse_target(text: Any, kinds: Mapping[str, Any]) -> str:
    """"kind|stamp" as the page script writes it -> kind (one the model has); ValueError for anything else."""
    kind = str(text or "").split("|")[0]
    if kind not in kinds:
        raise ValueError(f"not a kind of this model: {kind[:20]!r}")
    return kind

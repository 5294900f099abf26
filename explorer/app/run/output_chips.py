"""The output of sentence 1 as tokens a person can click ("why this token?"): the generated answer (baseline, then the
toggled one where it differs), a language model's next-token candidates and continuation, a masked LM's fillers.
Each clickable token knows where the model predicts it in the reading the Contributions tab takes of sentence 1
(explorer.app.run.readings: the source, or the prompt, and the model's own answer).

Shapes: P prompt tokens (decoder-only), k the index of a token in its answer or continuation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..i18n.words import ENGLISH, t
from .pair import Comparison
from .sentence_outputs import GeneratedText, MaskFillers, NextTokens
from .view import View

CANDIDATES = 5  # next-token candidates and fillers shown as chips


@dataclass(frozen=True)
class ClickTarget:
    """A clicked token: where the model predicts it and which it is, for the Contributions tab."""

    position: int  # in the decoder's reading of sentence 1 (a language model: the typed tokens, then `extend`)
    token: int  # its id
    label: str  # as the page shows it
    what: str  # "token 2 of the answer" (positions count from 0, as everywhere on the page), "a next-token candidate"
    extend: tuple[int, ...] = ()  # a language model's continuation before it: appended to the reading


@dataclass(frozen=True)
class Chips:
    """gr.HighlightedText's value (text, category) and, for each item, its target (None: not clickable)."""

    items: list[tuple[str, str | None]]
    targets: list[ClickTarget | None]

    def said(self, lang: str) -> list[tuple[str, str | None]]:
        """The items with the page's own words (those without a category) in `lang`; tokens as they are."""
        return [(in_language(text, lang) if category is None else text, category) for text, category in self.items]


# The chips' own words (the rest are tokens): the English as laid out here -> the catalogue's key (explorer.app.i18n).
CHIP_WORDS = {"Output:": "chips.output", "→ with the toggles:": "chips.with_toggles",
              "· continues:": "chips.continues"}
NEXT_AFTER = re.compile(r"Next after “(.*)”:", re.DOTALL)
MASK_AT = re.compile(r"(.*) at position (\d+):", re.DOTALL)


def in_language(text: str, lang: str) -> str:
    if lang == ENGLISH:
        return text
    if text in CHIP_WORDS:
        return t(CHIP_WORDS[text], lang)
    if m := NEXT_AFTER.fullmatch(text):
        return t("chips.next_after", lang, token=m.group(1))
    if m := MASK_AT.fullmatch(text):
        return t("chips.mask_at", lang, mask=m.group(1), position=m.group(2))
    return text


def answer_chips(base: GeneratedText, tog: GeneratedText, start: int, no_toggle: bool) -> Chips:
    """The answer's tokens (answer token k predicted at `start` + k), then the toggled answer where it differs."""
    items: list[tuple[str, str | None]] = [("Output:", None)]
    targets: list[ClickTarget | None] = [None]
    for k, (i, label) in enumerate(zip(base.ids, base.labels)):
        items.append((label, "output"))
        targets.append(ClickTarget(start + k, i, label, f"token {k} of the answer"))
    if not no_toggle and tog.ids != base.ids:
        items.append(("→ with the toggles:", None))
        targets.append(None)
        for k, (i, label) in enumerate(zip(tog.ids, tog.labels)):
            same = k < len(base.ids) and base.ids[k] == i
            items.append((label, "same" if same else "changed"))
            targets.append(ClickTarget(start + k, i, label, f"token {k} of the toggled answer"))
    return Chips(items, targets)


def next_token_chips(base: NextTokens, labels: list[str], codec: object, view: View) -> Chips:
    """A language model: the candidates after the chosen position, then its continuation after the last token."""
    length = len(labels)
    p = view.position_in(length)
    ids = base.top_ids[p, :CANDIDATES].tolist()
    names = codec.labels(ids)  # type: ignore[attr-defined]
    items: list[tuple[str, str | None]] = [(f"Next after “{labels[p]}”:", None)]
    targets: list[ClickTarget | None] = [None]
    for i, name, prob in zip(ids, names, base.top_probs[p, :CANDIDATES].tolist()):
        items.append((f"{name} {prob:.2f}", "candidate"))
        targets.append(ClickTarget(p, int(i), name, f"a next-token candidate after “{labels[p]}”"))
    cont = base.continuation
    if cont.ids:
        items.append(("· continues:", None))
        targets.append(None)
        for k, (i, name) in enumerate(zip(cont.ids, cont.labels)):
            items.append((name, "output"))
            targets.append(ClickTarget(length - 1 + k, i, name, f"token {k} of the continuation",
                                       tuple(cont.ids[:k])))
    return Chips(items, targets)


def filler_chips(base: MaskFillers) -> Chips:
    if not base.fillers:
        return Chips([], [])
    first = base.fillers[0]
    items: list[tuple[str, str | None]] = [(f"{base.mask_token} at position {first.position}:", None)]
    targets: list[ClickTarget | None] = [None]
    for i, name, prob in list(zip(first.ids, first.labels, first.probs))[:CANDIDATES]:
        items.append((f"{name} {prob:.2f}", "candidate"))
        targets.append(ClickTarget(first.position, int(i), name, f"a filler of {base.mask_token}"))
    return Chips(items, targets)


def output_chips(cmp: Comparison, view: View, decoder_only: bool) -> Chips:
    """Sentence 1's output as chips (Chips([], []) for a model whose output is no token: classes, embeddings).
    `decoder_only`: a decoder-only sequence model, whose answer follows its prompt in one sequence."""
    base, tog = cmp.baseline.outputs[0], cmp.toggled.outputs[0]
    if isinstance(base, GeneratedText) and isinstance(tog, GeneratedText):
        start = len(cmp.inputs.rows[0]) - 1 if decoder_only else 0
        return answer_chips(base, tog, start, cmp.no_toggle)
    if isinstance(base, NextTokens):
        return next_token_chips(base, cmp.inputs.labels[0], cmp.codec, View(position=view.position))
    if isinstance(base, MaskFillers):
        return filler_chips(base)
    return Chips([], [])

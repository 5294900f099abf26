"""The state line: every toggle a Run used, in one line of words ("Causal mask off · cross L0 H1, L1 H3 off ·
window 2"), shown at the top of the results on every tab, so a class always sees what is switched; in the page's
language (explorer.app.i18n: the catalogue's `state.*` strings, numbers the language's way)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from ...outputs.sampling import Sampling
from ..i18n.words import ENGLISH, number, t
from .toggles import Toggles

KIND_WORDS = {"encoder": "encoder", "decoder": "decoder", "cross": "cross"}  # catalogue keys state.kind_<kind>
NOTHING = t("state.nothing")


def heads_text(layers_heads: list[tuple[int, int]]) -> str:
    """[(0, 1), (1, 3)] -> "L0 H1, L1 H3" (the same in every language: the page's head labels)."""
    return ", ".join(f"L{layer} H{head}" for layer, head in sorted(layers_heads))


def shown(value: float, lang: str) -> str:
    """A setting's number as typed in English ("0.8", "1e-05"), the language's way elsewhere ("0,8")."""
    return f"{value:g}" if lang == ENGLISH else number(value, lang, max_digits=6)


def sampled_words(sampling: Sampling, lang: str) -> str:
    """How a sampled Run's tokens were drawn, its numbers the language's way."""
    off = t("state.off_value", lang)
    return t("state.sampled", lang, temperature=shown(sampling.temperature, lang),
             top_k=sampling.top_k or off, top_p=shown(sampling.top_p, lang) if sampling.top_p < 1 else off,
             seed=sampling.seed)


def state_line(toggles: Toggles, kinds: Mapping[str, tuple[int, int]], sampling: Sampling | None = None,
               lang: str = ENGLISH) -> str:
    """The toggles of a Run in words (plain text; the page escapes it). `kinds`: the model's attention kinds ->
    (layers, heads), for the heads switched off; `sampling`: how its generated tokens were drawn (None: greedy, not
    said), so that a screenshot of a sampled Run is never taken for greedy."""
    line = toggles_line(toggles, kinds, lang)
    return line + (" · " + t("state.generated", lang, how=sampled_words(sampling, lang))
                   if sampling is not None else "")


def toggles_line(toggles: Toggles, kinds: Mapping[str, tuple[int, int]], lang: str = ENGLISH) -> str:
    """The toggles alone, in words."""
    parts = []
    if not toggles.padding:
        parts.append(t("state.padding_off", lang))
    if not toggles.causal and "decoder" in kinds:
        parts.append(t("state.causal_off", lang))
    if toggles.custom == "block token":
        parts.append(t("state.blocked", lang, position=toggles.block_token))
    elif toggles.custom == "local window":
        parts.append(t("state.window", lang, k=toggles.window))
    elif toggles.custom == "no self":
        parts.append(t("state.no_self", lang))
    for kind, (n_layers, n_heads) in kinds.items():
        on = (toggles.heads_on or {}).get(kind)
        if on is None:
            continue
        off = [(la, h) for la in range(n_layers) for h in range(n_heads) if (la, h) not in on]
        if off:
            everything = len(off) == n_layers * n_heads
            parts.append(t(f"state.every_off_{kind}", lang) if everything else
                         t(f"state.heads_off_{kind}", lang, heads=heads_text(off)))
    if not parts:
        return t("state.nothing", lang)
    return t("state.toggles", lang, parts=" · ".join(parts))


# explorer.labels.occurrence_note's English ("“2·2” in the figures = the 2nd “2” of the sequence.") read back.
_NOTE = re.compile(r"“(.+)” in the figures = the (\d+)(?:st|nd|rd|th) “(.+)” of the sequence\.", re.DOTALL)
ORDINALS = {"fr": "{n}e", "de": "{n}.", "es": "{n}.º"}  # 2e, 2., 2.º (French's first is 1er)


def note_in(note: str | None, lang: str = ENGLISH) -> str | None:
    """The figures' note on a repeated token's name in `lang` (its tokens as they are)."""
    m = _NOTE.fullmatch(note or "")
    if lang == ENGLISH or m is None:
        return note
    n = int(m.group(2))
    nth = "1er" if lang == "fr" and n == 1 else ORDINALS.get(lang, "{n}").format(n=n)
    return t("state.occurrence", lang, name=m.group(1), nth=nth, token=m.group(3))

"""The lessons built into the page: one source for the page's lesson panel (page.lesson_panel: `lesson=N` in a link,
the Lessons menu) and for docs/lessons.md (scripts/docs_tables.py writes it, page.lesson_docs).

Each lesson is a title, the view it opens (a link query: docs/link.md's keys), a paragraph, and for the panel a goal,
3-5 steps each with a check of the learner's own Run (page.lesson_format.CHECKS), and what to notice. The panel's
words (title, goal, steps, the checks' words, notice) are in the catalogues, `[lessons.<id>]` of
explorer/app/i18n/<lang>.lessons.toml, in every language; here only the view, the paragraph (docs/lessons.md, in
English) and the checks' conditions, one a step (None: a step to read). A lesson may
also be only `Lesson(title, query, text)`: the panel then shows the text as its goal, with one step. Every check is
run on the shipped checkpoints, both ways (passing and not yet), in tests/app/test_lessons.py. A teacher's lesson is a
file instead (page.lesson_files, docs/lessons.md "Write your own").
"""

from __future__ import annotations

from urllib.parse import quote

from ..i18n.words import LANGS, catalogue
from ..link.state import link_keys
from .lesson_format import Lesson, Step, check


def q(**keys: str | int) -> str:
    """A link query of `keys` in the given order, each value URL-encoded as a copied link writes it; a lesson opens a
    class's view (`mode=class`, page.display: the rest of the page behind "More")."""
    page_keys = set(link_keys())  # the tab's own keys come after the page's, as a copied link writes them
    keys = {**{k: v for k, v in keys.items() if k in page_keys}, "mode": "class",
            **{k: v for k, v in keys.items() if k not in page_keys}}
    return "&".join(f"{k}={quote(str(v), safe=':,;/@')}" for k, v in keys.items())


def built_in(lesson_id: str, query: str, text: str, *checks: tuple | None) -> Lesson:
    """Lesson `lesson_id` with its words from the catalogues: English as the lesson, each other language as its
    translation; `checks`: each step's conditions (page.lesson_format.check's), None for a step without a check."""
    def words(lang: str) -> dict[str, str]:
        prefix = f"lessons.{lesson_id}."
        return {k.removeprefix(prefix): v for k, v in catalogue(lang).items() if k.startswith(prefix)}

    w = words("en")
    steps = tuple(Step(w[f"step{n}"], None if c is None else check(*c, passed=w[f"step{n}_passed"],
                                                                      hint=w[f"step{n}_hint"]))
                  for n, c in enumerate(checks, 1))
    return Lesson(w["title"], query, text, goal=w["goal"], steps=steps, notice=w["notice"], id=lesson_id,
                  translations={lang: words(lang) for lang in LANGS if lang != "en"})


LESSONS: tuple[Lesson, ...] = (
    built_in("positions",
             q(model="date-translator", s1="lundi 3 mars 2025", s2="", tab="positions", pe_d=64, pe_len=48),
             "date-translator adds sinusoidal positions to its embeddings: in the model's figure each row is a "
             "position and each column a dimension; the first columns swing quickly from one position to the next,"
             " the last ones slowly. Below, the textbook sinusoid with d_model 64 and 48 positions: its similarity"
             " map is brightest along the diagonal, so neighbouring positions get similar vectors. Change d_model "
             "and the number of positions and press Show.",
             (("tab_is", "positions"),),  # step 1
             None,  # step 2
             (("sentence_contains", "mars lundi"), ("output_lacks", "2025-03-03"))),  # step 3
    built_in("causal-mask",
             q(model="date-gpt", s1="samedi 21 novembre 2026", s2="", tab="attention", kind="decoder", layer=0, head=0),
             "date-gpt was trained with the causal mask: each character sees only those before it. With the mask "
             "off, every earlier position also reads the ones after it, which the model never saw in training, and"
             " the answer 2026-11-21 becomes 20-019-09 (the output above the tabs shows both). The mask heatmap "
             "shows the upper triangle opened; tick Causal mask again to get the date back.",
             (("output_equals", "2026-11-21"), ("mask_on", "causal")),  # step 1
             (("mask_off", "causal"), "output_changes"),  # step 2
             (("mask_on", "causal"), ("output_equals", "2026-11-21"))),  # step 3
    built_in("month-heads",
             q(model="date-translator", s1="lundi 3 mars 2025", s2="", tab="attention", kind="cross", layer=1, head=3),
             "Cross-attention is where the decoder reads the source sentence. With cross L0 H1 and cross L1 H3 "
             "switched off, date-translator answers 2025-05-03 instead of 2025-03-03: the month becomes 05 while "
             "the day and year stay. Tick one of the two heads back on: either one alone is enough for the right "
             "month.",
             (("output_equals", "2025-03-03"),),  # step 1
             (("heads_off_at_least", 1), "output_unchanged"),  # step 2
             (("heads_off_at_least", 2), ("output_contains", "-05-")),  # step 3
             (("heads_off_at_least", 1), ("output_equals", "2025-03-03"))),  # step 4
    built_in("induction",
             q(model="induction-gpt", s1="t1 t2 t3 t4 t5 t6 t1 t2 t3 t4", s2="", tab="roles", role="induction",
               rank="effect on the output"),
             "induction-gpt learned to continue a repeated sequence. The Roles tab scores its heads on a probe of "
             "random tokens repeated twice: L1 H2 scores highest as an induction head (0.81, from each token of "
             "the second copy to the token after its first occurrence), while L0 H1 looks at the previous token "
             "(1.00). The loss falls from about 5.7 nats on the first copy to about 0.2 on the repeated one; press"
             " “Switch these heads off” to take out the induction head that matters most.",
             (("output_contains", "t5 t6"),),  # step 1
             (("tab_is", "roles"),),  # step 2
             (("heads_off_at_least", 4), "output_changes", ("output_lacks", "t5 t6"))),  # step 3
    built_in("contributions",
             q(model="date-translator", s1="lundi 3 mars 2025", s2="", tab="contributions", at=6),
             "The Contributions tab splits one logit into the parts that wrote it: here the month's “3” of "
             "2025-03-03 (answer position 6). Of all the heads, cross L1 H3 pushes it up the most, the cross-"
             "attention head of the month lesson; the token attribution shows which source characters mattered. "
             "Click another token of the output above to ask the same of it.",
             (("tab_is", "contributions"),),  # step 1
             None,  # step 2
             (("heads_off_at_least", 1), "output_unchanged")),  # step 3
    built_in("compare",
             q(model="date-translator", s1="31 dicembre 1999", s2="", tab="compare", model2="date-gpt"),
             "The same Italian date through date-translator (left: an encoder reads the date, a decoder writes the"
             " answer through cross-attention) and date-gpt (right: one decoder reads the date and continues it). "
             "Both answer 1999-12-31; each side has its own view and head switches, so switch a head off on one "
             "side and watch only that side change.",
             (("tab_is", "compare"), ("output_equals", "1999-12-31")),  # step 1
             None,  # step 2
             (("sentence_contains", "gennaio 2000"), ("output_equals", "2000-01-01"))),  # step 3
    built_in("month-circuit",
             q(model="date-translator", s1="lundi 3 mars 2025", s2="", tab="circuit", ctask="generated", eap="eap-ig",
               edges=0, held=8, npairs=32),
             "The Circuit tab scores every edge between date-translator's parts over 32 generated pairs: a full "
             "French date and the same date with another month of the same length (mars / juin), the answer the "
             "first ISO digit where the two months differ. The smallest circuit keeping 0.9 of the logit "
             "difference on 24 pairs holds about 60 of the 529 edges and keeps over 0.9 on the 8 held-out pairs "
             "too. Cross L0 H1 and cross L1 H3, the heads of the month lesson, are in it; no decoder self-"
             "attention head is: they read only the ISO date written so far, the same in both dates of a pair. "
             "Press “Keep only this circuit”: with every head outside it switched off (zeroed, not patched from "
             "the other date) the answer breaks, since a circuit names what carries the difference between the "
             "months, not everything the model needs.",
             (("tab_is", "circuit"), ("output_equals", "2025-03-03")),  # step 1
             None,  # step 2
             (("heads_off_at_least", 8), "output_changes")),  # step 3
)

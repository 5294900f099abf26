"""Seven short lessons on the shipped models, one source for docs/lessons.md (scripts/docs_tables.py writes it) and for
the page's "Lessons" menu (choosing one opens its link: the page's address with the lesson's query, restored by the
link machinery, explorer.app.link).

Each lesson is a title, a link query (docs/link.md's keys) and two or three sentences on what to see and what to
switch. Every claim in a text is checked on the shipped checkpoints in tests/app/test_lessons.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

import gradio as gr


@dataclass(frozen=True)
class Lesson:
    title: str
    query: str  # the link's query, no "?" (explorer.app.link.state.parse_link reads it)
    text: str  # Markdown: what to see and what to switch


def q(**keys: str | int) -> str:
    """A link query of `keys` in the given order, each value URL-encoded as a copied link writes it."""
    return "&".join(f"{k}={quote(str(v), safe=':,;/@')}" for k, v in keys.items())


LESSONS: tuple[Lesson, ...] = (
    Lesson("Positions: how the model knows where each character is",
           q(model="date-translator", tab="positions", pe_d=64, pe_len=48),
           "date-translator adds sinusoidal positions to its embeddings: in the model's figure each row is a "
           "position and each column a dimension; the first columns swing quickly from one position to the next, the "
           "last ones slowly. Below, the textbook sinusoid with d_model 64 and 48 positions: its similarity map is "
           "brightest along the diagonal, so neighbouring positions get similar vectors. Change d_model and the "
           "number of positions and press Show."),
    Lesson("Masks: why generation breaks without the causal one",
           q(model="date-gpt", s1="samedi 21 novembre 2026", s2="", tab="attention", kind="decoder", layer=0,
             head=0, causal=0),
           "date-gpt was trained with the causal mask: each character sees only those before it. With the mask "
           "off, every earlier position also reads the ones after it, which the model never saw in training, and the "
           "answer 2026-11-21 becomes 20-019-09 (the output above the tabs shows both). The mask heatmap shows the "
           "upper triangle opened; tick Causal mask again to get the date back."),
    Lesson("The cross-attention heads that read the month",
           q(model="date-translator", s1="lundi 3 mars 2025", s2="", tab="attention", kind="cross", layer=1, head=3,
             off="cross:L0H1,L1H3"),
           "Cross-attention is where the decoder reads the source sentence. With cross L0 H1 and cross L1 H3 "
           "switched off, date-translator answers 2025-05-03 instead of 2025-03-03: the month becomes 05 while the day and "
           "year stay. Tick one of the two heads back on: either one alone is enough for "
           "the right month."),
    Lesson("Induction: copying a sequence seen before",
           q(model="induction-gpt", s1="t1 t2 t3 t4 t5 t6 t1 t2 t3 t4", s2="", tab="roles", role="induction",
             rank="effect on the output"),
           "induction-gpt learned to continue a repeated sequence. The Roles tab scores its heads on a probe of "
           "random tokens repeated twice: every layer-1 head scores above 0.8 as an induction head (from each token "
           "of the second copy to the token after its first occurrence), while L0 H1 looks at the previous token "
           "(0.90). The loss falls from about 5.7 nats on the first copy to under 0.1 on the "
           "repeated one; press “Switch these heads off” to take out the induction head that matters most."),
    Lesson("Where a prediction comes from",
           q(model="date-translator", s1="lundi 3 mars 2025", s2="", tab="contributions", at=6),
           "The Contributions tab splits one logit into the parts that wrote it: here the month's “3” of "
           "2025-03-03 (answer position 6). Of all the heads, cross L1 H3 pushes it up the most, the cross-attention "
           "head of the month lesson; the token attribution shows which source characters mattered. Click another "
           "token of the output above to ask the same of it."),
    Lesson("Two models compared: encoder-decoder and decoder-only",
           q(model="date-translator", s1="31 dicembre 1999", s2="", tab="compare", model2="date-gpt"),
           "The same Italian date through date-translator (left: an encoder reads the date, a decoder writes the "
           "answer through cross-attention) and date-gpt (right: one decoder reads the date and continues it). Both "
           "answer 1999-12-31; each side has its own view and head switches, so switch a head off on one side and "
           "watch only that side change."),
    Lesson("The month's circuit",
           q(model="date-translator", s1="lundi 3 mars 2025", s2="", tab="circuit", ctask="generated", eap="eap-ig",
             edges=0, held=8, npairs=32),
           "The Circuit tab scores every edge between date-translator's parts over 32 generated pairs: a full French "
           "date and the same date with another month of the same length (mars / juin), the answer the first ISO "
           "digit where the two months differ. The smallest circuit keeping 0.9 of the logit difference on 24 pairs "
           "holds about 60 of the 529 edges and keeps over 0.9 on the 8 held-out pairs too. Cross L0 H1 and cross "
           "L1 H3, the heads of the month lesson, are in it; no decoder self-attention head is: they read only the ISO "
           "date written so far, the same in both dates of a pair. Press “Keep only this circuit”: with every head "
           "outside it switched off (zeroed, not patched from the other date) the answer breaks, since a circuit names "
           "what carries the difference between the months, not everything the model needs."),
)


def lessons_markdown(lessons: tuple[Lesson, ...] = LESSONS) -> str:
    """docs/lessons.md: each lesson's title, its link (on a local app; on a Space, put the Space's page before the
    query) and its text."""
    out = ["# Lessons", "",
           "Seven short lessons on the shipped models. Each link opens the view in the app (on your own machine: "
           "`python app.py`, then the local link); the same lessons are in the page's **Lessons** menu at the top. "
           "What each says is checked on the shipped checkpoints by `tests/app/test_lessons.py`.", "",
           "<!-- generated from explorer.app.page.lessons.LESSONS by scripts/docs_tables.py; tests/app/test_lessons.py "
           "checks it -->", ""]
    for n, lesson in enumerate(lessons, 1):
        out += [f"## {n}. {lesson.title}", "",
                f"[Open it](http://127.0.0.1:7860/?{lesson.query}) (local app) · "
                f"query: `?{lesson.query}`", "", lesson.text, ""]
    return "\n".join(out)


MENU_JS = """(query) => {
  if (query) window.location.search = '?' + query;  // the page reloads and the link restores the view
  return '';
}"""


def lessons_menu() -> gr.Dropdown:
    """The page's compact "Lessons" dropdown (laid out inside the page's Blocks): choosing one navigates to the
    lesson's link, in the browser only (no server event), and the page reopens on that view."""
    choices = [("Lessons …", "")] + [(f"{n}. {lesson.title}", lesson.query) for n, lesson in enumerate(LESSONS, 1)]
    menu = gr.Dropdown(choices, value="", label="Lessons", show_label=False, container=False, scale=0, min_width=180,
                       elem_id="lessons", interactive=True)
    menu.input(None, [menu], [menu], js=MENU_JS, queue=False, api_visibility="private")
    return menu

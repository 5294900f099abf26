"""The lessons built into the page: one source for the page's lesson panel (page.lesson_panel: `lesson=N` in a link,
the Lessons menu) and for docs/lessons.md (scripts/docs_tables.py writes it, page.lesson_docs).

Each lesson is a title, the view it opens (a link query: docs/link.md's keys), a paragraph, and for the panel a goal,
3-5 steps each with a check of the learner's own Run (page.lesson_format.CHECKS), and what to notice. A lesson may
also be only `Lesson(title, query, text)`: the panel then shows the text as its goal, with one step. Every check is
run on the shipped checkpoints, both ways (passing and not yet), in tests/app/test_lessons.py. A teacher's lesson is a
file instead (page.lesson_files, docs/lessons.md "Write your own").
"""

from __future__ import annotations

from urllib.parse import quote

from ..link.state import link_keys
from .lesson_format import Lesson, Step, check


def q(**keys: str | int) -> str:
    """A link query of `keys` in the given order, each value URL-encoded as a copied link writes it; a lesson opens a
    class's view (`mode=class`, page.display: the rest of the page behind "More")."""
    page_keys = set(link_keys())  # the tab's own keys come after the page's, as a copied link writes them
    keys = {**{k: v for k, v in keys.items() if k in page_keys}, "mode": "class",
            **{k: v for k, v in keys.items() if k not in page_keys}}
    return "&".join(f"{k}={quote(str(v), safe=':,;/@')}" for k, v in keys.items())


LESSONS: tuple[Lesson, ...] = (
    Lesson("Positions: how the model knows where each character is",
           q(model="date-translator", s1="lundi 3 mars 2025", s2="", tab="positions", pe_d=64, pe_len=48),
           "date-translator adds sinusoidal positions to its embeddings: in the model's figure each row is a "
           "position and each column a dimension; the first columns swing quickly from one position to the next, the "
           "last ones slowly. Below, the textbook sinusoid with d_model 64 and 48 positions: its similarity map is "
           "brightest along the diagonal, so neighbouring positions get similar vectors. Change d_model and the "
           "number of positions and press Show.",
           goal="See how the model tells the first character from the tenth: each position adds its own pattern of "
                "waves to the character's vector, and the order of the characters changes the answer.",
           steps=(
               Step("Look at the **Positions** tab's first figure: one row per position, one column per dimension. "
                    "The left columns change quickly from row to row, the right ones slowly.",
                    check(("tab_is", "positions"), passed="the Positions tab is open",
                          hint="open the **Positions** tab")),
               Step("In the textbook sinusoid below, change **d_model** to 16 and press **Show**: fewer columns, and "
                    "the similarity map (position against position) is still brightest on its diagonal."),
               Step("Now shuffle the words: type `mars lundi 2025 3` in the **Sentence** box and press **Run**. The "
                    "characters are the same, only their places changed.",
                    check(("sentence_contains", "mars lundi"), ("output_lacks", "2025-03-03"),
                          passed="the same characters in another order give another answer",
                          hint="type `mars lundi 2025 3` as the sentence and press **Run**")),
           ),
           notice="Without positions the model would see a bag of characters: `lundi 3 mars 2025` and "
                  "`mars lundi 2025 3` would be the same input. The shuffled date comes out as another, wrong date.",
           id="positions"),
    Lesson("Masks: why generation breaks without the causal one",
           q(model="date-gpt", s1="samedi 21 novembre 2026", s2="", tab="attention", kind="decoder", layer=0,
             head=0),
           "date-gpt was trained with the causal mask: each character sees only those before it. With the mask "
           "off, every earlier position also reads the ones after it, which the model never saw in training, and the "
           "answer 2026-11-21 becomes 20-019-09 (the output above the tabs shows both). The mask heatmap shows the "
           "upper triangle opened; tick Causal mask again to get the date back.",
           goal="See what the causal mask does: while it writes, each character may look only at those before it.",
           steps=(
               Step("Press **Run**: date-gpt turns the French date into `2026-11-21`. In the heatmap, everything above "
                    "the diagonal is empty: no character looks ahead.",
                    check(("output_equals", "2026-11-21"), ("mask_on", "causal"),
                          passed="the model answers 2026-11-21 with the causal mask on",
                          hint="keep **Causal mask** ticked and press **Run**")),
               Step("Untick **Causal mask** (under Masks, left). The page runs again: now every character also reads "
                    "the ones after it, which the model never saw while it learned.",
                    check(("mask_off", "causal"), "output_changes",
                          passed="without the causal mask the answer broke",
                          hint="untick **Causal mask**")),
               Step("Tick **Causal mask** again: the date comes back.",
                    check(("mask_on", "causal"), ("output_equals", "2026-11-21"),
                          passed="the mask is back and so is the date",
                          hint="tick **Causal mask** again")),
           ),
           notice="With the mask off the output bar shows both answers: 2026-11-21 → 20-019-09. The heatmap's upper "
                  "triangle fills in: the model reads characters it was never allowed to read in training.",
           id="causal-mask"),
    Lesson("The cross-attention heads that read the month",
           q(model="date-translator", s1="lundi 3 mars 2025", s2="", tab="attention", kind="cross", layer=1, head=3),
           "Cross-attention is where the decoder reads the source sentence. With cross L0 H1 and cross L1 H3 "
           "switched off, date-translator answers 2025-05-03 instead of 2025-03-03: the month becomes 05 while the day "
           "and year stay. Tick one of the two heads back on: either one alone is enough for the right month.",
           goal="Find the two cross-attention heads that carry the month from the French sentence to the answer.",
           steps=(
               Step("Press **Run**: `lundi 3 mars 2025` becomes `2025-03-03`. The heatmap is cross L1 H3: its "
                    "answer positions look at the source characters.",
                    check(("output_equals", "2025-03-03"), passed="the model answers 2025-03-03",
                          hint="press **Run** with every head on")),
               Step("Untick **L1 H3** under Cross-attention (left). The page runs again.",
                    check(("heads_off_at_least", 1), "output_unchanged",
                          passed="one head off and the answer did not move: another head carries the month too",
                          hint="switch cross L1 H3 off and keep the rest on")),
               Step("Untick **L0 H1** under Cross-attention as well.",
                    check(("heads_off_at_least", 2), ("output_contains", "-05-"),
                          passed="the month changed to 05", hint="switch both cross L0 H1 and cross L1 H3 off")),
               Step("Tick **L1 H3** back on, leaving L0 H1 off.",
                    check(("heads_off_at_least", 1), ("output_equals", "2025-03-03"),
                          passed="one of the two heads alone brings the month back",
                          hint="tick cross L1 H3 back on, L0 H1 still off")),
           ),
           notice="Only the month breaks: the day and the year stay right, so other heads read those. Two heads "
                  "do the same job, so switching one off shows nothing: that is why a single switch can mislead.",
           id="month-heads"),
    Lesson("Induction: copying a sequence seen before",
           q(model="induction-gpt", s1="t1 t2 t3 t4 t5 t6 t1 t2 t3 t4", s2="", tab="roles", role="induction",
             rank="effect on the output"),
           "induction-gpt learned to continue a repeated sequence. The Roles tab scores its heads on a probe of "
           "random tokens repeated twice: every layer-1 head scores above 0.8 as an induction head (from each token "
           "of the second copy to the token after its first occurrence), while L0 H1 looks at the previous token "
           "(0.90). The loss falls from about 5.7 nats on the first copy to under 0.1 on the "
           "repeated one; press “Switch these heads off” to take out the induction head that matters most.",
           goal="See a model copy: once a sequence has started to repeat, it continues the repeat, and the heads of "
                "layer 1 do the copying.",
           steps=(
               Step("Press **Run**: after `t1 … t6 t1 t2 t3 t4` the model continues `t5 t6 t1 t2 …`, the "
                    "sequence it saw before.",
                    check(("output_contains", "t5 t6"), passed="the model copies the sequence: it continues t5 t6",
                          hint="press **Run** with every head on")),
               Step("The **Roles** tab scores each head: layer 1's heads score high as induction heads (they look at "
                    "the token after the current one's earlier copy), L0 H1 as a previous-token head.",
                    check(("tab_is", "roles"), passed="the Roles tab is open", hint="open the **Roles** tab")),
               Step("Switch off all four layer-1 heads (Decoder self-attention: untick L1 H0 to L1 H3).",
                    check(("heads_off_at_least", 4), "output_changes", ("output_lacks", "t5 t6"),
                          passed="without layer 1 the model no longer copies",
                          hint="switch off L1 H0, L1 H1, L1 H2 and L1 H3")),
           ),
           notice="With layer 1 off the continuation is random tokens: the copying lives in those heads. Layer 0's "
                  "previous-token head prepares it: each token learns which token came before it.",
           id="induction"),
    Lesson("Where a prediction comes from",
           q(model="date-translator", s1="lundi 3 mars 2025", s2="", tab="contributions", at=6),
           "The Contributions tab splits one logit into the parts that wrote it: here the month's “3” of "
           "2025-03-03 (answer position 6). Of all the heads, cross L1 H3 pushes it up the most, the cross-attention "
           "head of the month lesson; the token attribution shows which source characters mattered. Click another "
           "token of the output above to ask the same of it.",
           goal="Split one output character into the parts of the model that wrote it, and test what the split says.",
           steps=(
               Step("On the **Contributions** tab, the bars split the score of the month's `3` (answer position 6) "
                    "into the parts that wrote it. Cross L1 H3 pushes it up the most.",
                    check(("tab_is", "contributions"), passed="the Contributions tab is open",
                          hint="open the **Contributions** tab")),
               Step("Click another token of the output above the tabs (the year's `2`, say): the tab answers for "
                    "that token."),
               Step("Test the top bar: switch **cross L1 H3** off (left) and look at the output.",
                    check(("heads_off_at_least", 1), "output_unchanged",
                          passed="the answer stayed 2025-03-03: the largest share is not the whole story",
                          hint="switch cross L1 H3 off")),
           ),
           notice="A head's share says how much it wrote, not whether the answer needs it: cross L0 H1 writes the "
                  "same month, so the answer survives one of them (lesson 3 switches both).",
           id="contributions"),
    Lesson("Two models compared: encoder-decoder and decoder-only",
           q(model="date-translator", s1="31 dicembre 1999", s2="", tab="compare", model2="date-gpt"),
           "The same Italian date through date-translator (left: an encoder reads the date, a decoder writes the "
           "answer through cross-attention) and date-gpt (right: one decoder reads the date and continues it). Both "
           "answer 1999-12-31; each side has its own view and head switches, so switch a head off on one side and "
           "watch only that side change.",
           goal="Run the same date through two designs: an encoder-decoder and a decoder-only model.",
           steps=(
               Step("The **Compare models** tab shows date-translator (left) and date-gpt (right) on "
                    "`31 dicembre 1999`: both answer 1999-12-31.",
                    check(("tab_is", "compare"), ("output_equals", "1999-12-31"),
                          passed="the left model answers 1999-12-31 on the Compare models tab",
                          hint="open **Compare models** with `31 dicembre 1999` as the sentence")),
               Step("The left side has encoder, decoder and cross attention; the right side only decoder "
                    "self-attention: it reads the date and writes the answer in one sequence."),
               Step("Type another Italian date, `1 gennaio 2000`, and press **Run**, then **Compare**.",
                    check(("sentence_contains", "gennaio 2000"), ("output_equals", "2000-01-01"),
                          passed="the model writes 2000-01-01",
                          hint="type `1 gennaio 2000` and press **Run**")),
           ),
           notice="Two designs, one answer: cross-attention is the encoder-decoder's bridge; the decoder-only model "
                  "reads its own prompt with the same self-attention it writes with.",
           id="compare"),
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
           "what carries the difference between the months, not everything the model needs.",
           goal="Find the small part of the model that carries the month over many dates, and test what a circuit "
                "does and does not say.",
           steps=(
               Step("Press **Run**: `lundi 3 mars 2025` becomes `2025-03-03`. The **Circuit** tab is open, set to 32 "
                    "generated pairs: each French date against the same date with another month (mars / juin).",
                    check(("tab_is", "circuit"), ("output_equals", "2025-03-03"),
                          passed="the model answers 2025-03-03 and the Circuit tab is open",
                          hint="open the **Circuit** tab and press **Run** with every head on")),
               Step("The lesson's link pressed **Find the circuit** for you: wait for its summary under the "
                    "button (it takes a few seconds). About 60 of the 529 edges keep over 0.9 "
                    "of the month's logit difference, on the 8 held-out pairs too. In the graph, cross L0 H1 and "
                    "cross L1 H3 (the heads of lesson 3) are in it; no decoder self-attention head is."),
               Step("Press **Keep only this circuit**: every head outside it is switched off and the page runs "
                    "again. Look at the output above the tabs.",
                    check(("heads_off_at_least", 8), "output_changes",
                          passed="with only the circuit's heads on, the answer broke",
                          hint="press **Find the circuit**, then **Keep only this circuit**")),
           ),
           notice="The circuit carries what differs between two months, not everything the answer needs: the "
                  "decoder's own heads, left out of it, write the date's shape, so switching them off breaks the "
                  "answer even though the month's route is still there.",
           id="month-circuit"),
)

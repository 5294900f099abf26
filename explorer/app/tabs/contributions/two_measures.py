"""Two views, one question: "why this token?" is answered by the direct logit attribution (the map: what each head
writes straight into the token's logit, everything else as it was) and by the switch-off ranking (why_token: what the
token loses when a head is gone, including what later heads and MLPs read from it). They can name different heads
(date-translator: cross L1 H3 has the largest direct share, while switching off decoder L0 H3 breaks the answer); the
page says what each measures, with the two heads and their numbers.

Shapes: L layers, H heads per attention kind (the result's shares).
"""

from __future__ import annotations

import numpy as np

from ....interpret.head_effects import Head
from ...run.unchanged import moved
from ...serving.errors import escape_md
from .result import Contributions
from .why_token import WhyResult


def top_share(result: Contributions) -> tuple[Head, float]:
    """The head with the largest direct share of the logit in the run the ranking compares against (the toggled run
    when heads are off: the ranking switches heads off on top of the page's switches)."""
    run = result.toggled if result.toggled is not None else result.baseline
    best = max(((kind, *np.unravel_index(int(np.argmax(v)), v.shape), float(v.max())) for kind, v in run.heads.items()),
               key=lambda found: found[3])
    return Head(best[0], int(best[1]), int(best[2])), best[3]


def two_measures(why: WhyResult, result: object) -> str:
    """What each view measures, naming each one's top head; "" when the two are not about the same prediction (another
    token or position, or a logit difference) or nothing was ranked."""
    if (not isinstance(result, Contributions) or result.minus is not None or why.top is None or not why.rows
            or result.position != why.position or result.label(result.token) != why.token):
        return ""
    share_head, share = top_share(result)
    name, token = share_head.name(), escape_md(why.token)
    effect_name, p_without = why.rows[0][0], why.rows[0][1]
    change = escape_md(moved(f"“{why.token}”", why.baseline_prob, p_without))  # "p(“3”) fell from 1.00 to 0.02"
    if share_head == why.top:
        return (f"Both measures name **{escape_md(name)}**: it writes the most straight into logit(“{token}”) "
                f"({share:+.2f}, the map) and switching it off changes p the most ({change}, this list).")
    return (f"**Two measures, two answers.** The map measures what a head writes straight into logit(“{token}”) "
            f"while everything else stays as it was: **{escape_md(name)}** writes the most ({share:+.2f}). This list "
            f"measures what the token loses when a head is gone, including what later heads and MLPs read from it: "
            f"**{escape_md(effect_name)}** matters most (without it {change}). A head can "
            "feed the others without writing the token itself.")

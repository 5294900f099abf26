"""The words a text alternative (explorer.viz.describe) uses for counts and for the points of a point figure, made
from the figure's data, never from its hover text.

    counted(1, "point")  -> "1 point";  counted(3, "point") -> "3 points"
    point_words(trace)   -> [(i, "query ‘the’ (1)"), ...]  the trace's points named from its meta, or None

A trace names its points with its meta: `point_words` (a key of POINT_WORDS) and `points` (one dict per point, the
template's values: a token as text, escaped as the figure's names are, a position as an int, a number as a float; a
point's own "words" key, another template), optionally `points_by` (the value whose largest points are named first,
e.g. an edge's "share"). Shapes: `points` has one entry per x (N,).

English only, as all of explorer.viz: the catalogue's `[figure.point]` and `[count]` hold these same English texts
(tests/app/test_i18n.py checks it) and their translations, so a page in another language reads them back
(explorer.app.i18n.messages) and says a count with the language's plural rule (i18n.words.counted).
"""

from __future__ import annotations

import math
from typing import Any

MINUS = "\u2212"
# a noun counted in a text alternative: (one, other), English's rule (1 is "one", every other count "other")
NOUNS = {"point": ("point", "points"), "bar": ("bar", "bars"), "row": ("row", "rows"), "column": ("column", "columns")}
POINT_WORDS = {  # the words of one point, by the key its trace's meta names
    "edge_head": "L{layer} H{head}: ‘{source}’ ({source_at}) → ‘{target}’ ({target_at}), share {share}",
    "edge_mlp": "L{layer} MLP: ‘{source}’ ({source_at}) → ‘{target}’ ({target_at}), share {share}",
    "edge_residual": "L{layer} residual: ‘{source}’ ({source_at}) → ‘{target}’ ({target_at}), share {share}",
    "query": "query ‘{token}’ ({position})",
    "key": "key ‘{token}’ ({position})",
    "query_most": "query ‘{token}’ ({position}) attends most to ‘{strongest}’, {weight}",
    "query_head_most": "query ‘{token}’ ({position}): {head} attends most to ‘{strongest}’, {weight}",
}


def counted(n: int, noun: str) -> str:
    """`n` of NOUNS' `noun`, singular for one ("1 row", "1,024 rows")."""
    one, other = NOUNS[noun]
    return f"{n:,} {one if n == 1 else other}"


def value_text(v: Any) -> str:
    """A point's value as its words show it: a float in 3 significant digits (Unicode minus), anything else as text."""
    if isinstance(v, float):
        return "none" if not math.isfinite(v) else f"{v:.3g}".replace("-", MINUS)
    return str(v)


def point_words(trace: dict[str, Any], plain: Any = str) -> list[tuple[int, str]] | None:
    """(index, words) of each point the trace's meta names, the largest `points_by` first (else in order); None
    when its meta names none. `plain`: how a token's text is read (describe.plain: Plotly's escapes undone)."""
    meta = trace.get("meta")
    if not isinstance(meta, dict) or meta.get("point_words") not in POINT_WORDS or not isinstance(
            meta.get("points"), list):
        return None
    by = meta.get("points_by")
    said = [(i, POINT_WORDS[p.get("words", meta["point_words"])].format(
        **{k: plain(v) if isinstance(v, str) else value_text(v) for k, v in p.items() if k != "words"}))
        for i, p in enumerate(meta["points"])]
    if by:
        size = [abs(float(p.get(by, 0.0))) for p in meta["points"]]
        said.sort(key=lambda x: -size[x[0]])
    return said

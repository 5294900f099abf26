"""The Inside a head tab's worked example as HTML: one head at one query, step by step over the keys the learner picks
(explorer.interpret.head_steps), in plain words or with all the details; and the tab's summary in plain words.

Each vector is a strip of coloured cells (blue < 0 < red) with its scale written beside it (the largest |value| of the
strips that share it: the keys share one, the values and their mix another), and its first numbers. Token text is
escaped: it is shown as text, never read as HTML.

Shapes: D model width, Dh head width; a strip is (n,) numbers.

    steps_html(example, comp, key_labels, query_label, plain, unmasked) -> str
    plain_summary(read, comp, label) -> str (Markdown)
    key_choices(key_labels) -> [(label, position)]: the key picker's choices
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.colors as pc

from ....interpret.head_steps import WorkedExample
from ....viz.common import DIVERGING_SCALE
from ...page.glossary import abbr
from ...run.view import KIND_SHORT
from ...serving.errors import escape_md

FIRST_NUMBERS = 4  # numbers of a vector written out beside its strip
REASONS = {"causal": "a later token", "padding": "padding", "custom": "your custom mask", "window": "outside the window",
           "mask": "the mask"}
TABLE = ('style="border-collapse:collapse;font-variant-numeric:tabular-nums;margin:4px 0"',
         'style="padding:2px 8px;border-bottom:1px solid #ccc;text-align:right;white-space:nowrap"')


def num(value: float | None, digits: int = 3) -> str:
    """A number for the steps: `digits` significant digits, an exponent only when it must, − for minus."""
    if value is None:
        return "—"
    if value == 0:
        return "0"
    if not math.isfinite(value):
        return "−∞" if value < 0 else "∞"
    text = f"{value:.{digits}g}"
    if "e" in text:
        mant, exp = text.split("e")
        text = f"{mant}×10^{int(exp)}"
    return text.replace("-", "−")


# The diverging scale sampled once (a colour per cell looked up, not interpolated: a strip is hundreds of cells)
_LUT = pc.sample_colorscale(DIVERGING_SCALE, [i / 254 for i in range(255)])


def _colour(t: float) -> str:
    return _LUT[round(min(1.0, max(0.0, t)) * 254)]


def strip(values: np.ndarray, top: float, name: str) -> str:
    """One vector as a strip of cells coloured on the scale −top..top, its scale and its first numbers."""
    v = np.asarray(values, dtype=np.float64)
    top = top or 1.0
    n = len(v)
    # one gradient with hard stops: compact for a 4,096-wide x, each cell its own colour
    stops = ", ".join(f"{_colour(0.5 + x / (2 * top))} {100 * i / n:.3f}% {100 * (i + 1) / n:.3f}%"
                      for i, x in enumerate(v.tolist()))
    first = ", ".join(num(x, 2) for x in v[:FIRST_NUMBERS].tolist()) + (", …" if n > FIRST_NUMBERS else "")
    title = html.escape(f"{name}: {n} numbers, from {num(float(v.min()))} to {num(float(v.max()))}", quote=True)
    return (f'<div style="display:flex;align-items:center;gap:8px;margin:2px 0;flex-wrap:wrap">'
            f'<span style="min-width:9em">{name}</span>'
            f'<span title="{title}" role="img" aria-label="{title}" style="display:inline-block;width:min(240px,40vw);'
            f'height:14px;border:1px solid #999;background:linear-gradient(90deg, {stops})"></span>'
            f'<span style="font-size:0.85em;color:#444">[{first}] ({n} numbers; scale −{num(top, 2)} '
            f'<span style="color:#2166ac">■</span> 0 <span style="color:#b2182b">■</span> +{num(top, 2)})</span></div>')


def _top(*vectors: np.ndarray) -> float:
    return max((float(np.abs(v).max()) for v in vectors if v is not None and np.size(v)), default=1.0)


def key_choices(key_labels: Sequence[str]) -> list[tuple[str, int]]:
    """The key picker's choices: "position token" (the labels the figures use), valued by position."""
    return [(f"{j} {label}", j) for j, label in enumerate(key_labels)]


def _token(label: str) -> str:
    return f"“{html.escape(str(label))}”"


def steps_html(ex: WorkedExample, comp: Any, key_labels: Sequence[str], query_label: str, plain: bool,
               unmasked: str = "") -> str:
    """The worked example (see the module docstring); `plain`: plain words, else every detail, jargon glossed;
    `unmasked`: the mask step's line when no key is masked for this query (masked.unmasked_html)."""
    Dh, D = len(ex.q), len(ex.x)
    q_tok = _token(query_label)
    scale = "no division (T5 does none)" if ex.scale == 1.0 else f"÷ √{round(ex.scale ** -2)} (= × {num(ex.scale)})"
    out = ['<div class="head-steps" style="line-height:1.45">']
    step = iter(range(1, 20))

    def head(title: str, text: str) -> None:
        out.append(f'<p style="margin:10px 0 2px"><b>{next(step)}. {title}</b> {text}</p>')

    made = (f"The token arrives as {D} numbers, x. The head multiplies them by a table it learned in training "
            f"(and adds a bias) to get {Dh} numbers: the query q, “what am I looking for?”. Every token it may look at "
            f"gives a key k (“what do I offer?”) and a value v (“what do I pass on?”) the same way, with tables of "
            f"their own.")
    if not plain:
        where = ("after the " + abbr("layer's norm", "layer's norm")) if comp.pre_norm else "before the norm (post-norm)"
        made += (f" In symbols: q = x·W_Q (+ b), k = x_j·W_K (+ b), v = x_j·W_V (+ b); x is the block's input {where}"
                 + ("; k and v come from the encoder's output (cross-attention)" if comp.kind == "cross" else "")
                 + (f"; q and k are then turned by position (rotary, on {comp.rotary_dim} of {Dh} numbers)"
                    if comp.rotary_dim else "")
                 + (f"; this head shares its keys and values with other heads (grouped-query attention: it reads "
                    f"key/value head {comp.kv_head})" if comp.n_kv_heads != comp.n_heads else "") + ".")
    head(f"Where q, k and v come from (token {q_tok}, position {ex.query}).", made)
    out.append(strip(ex.x, _top(ex.x), "x (the token)"))
    if ex.q_unrotated is not None and not plain:
        out.append(strip(ex.q_unrotated, _top(ex.q_unrotated, ex.q), "q before rotary"))
    out.append(strip(ex.q, _top(ex.q), "q (query)"))
    k_top = _top(*(comp.keys[k.key] for k in ex.keys))
    for k in ex.keys:
        out.append(strip(comp.keys[k.key], k_top, f"k of {k.key} {_token(key_labels[k.key])}"))

    head("How well each key matches:", "multiply q and k number by number and add up (q·k); "
         f"then {scale}, which keeps the scores moderate"
         + (", and add the position bonus T5 learned" if comp.position is not None else "") + ". "
         "A key the query may not look at gets −∞ instead of a score (it is masked). "
         "Then e to the power of each score (e^score: always positive, and a bigger score grows much bigger), "
         "divided by the sum over all the keys: the weights.")
    if ex.shift:
        out.append(f"<p>(The scores are large, so every score has {num(ex.shift)} taken off before e^…: the "
                   f"weights are the same, the numbers stay readable.)</p>")
    cells = ["key", "token", "q·k", ("score = q·k" if ex.scale == 1.0 else scale.split(" (")[0] + " = score")
             + (" + position bonus" if comp.position is not None else ""), "mask", "e^score" + (f" (score − {num(ex.shift)})" if ex.shift else ""),
             f"÷ {num(ex.exp_sum)} (the sum) = weight"]
    rows = ["<tr>" + "".join(f"<th {TABLE[1]}>{html.escape(c)}</th>" for c in cells) + "</tr>"]
    for k in ex.keys:
        mask = f"−∞ ({REASONS.get(k.blocked_by.split(',')[0], k.blocked_by)})" if k.blocked_by else "✓ may look"
        score = None if k.score is None else k.score
        vals = [str(k.key), _token(key_labels[k.key]), num(k.dot), num(score), mask, num(k.exp), num(k.weight)]
        rows.append("<tr>" + "".join(f"<td {TABLE[1]}>{v}</td>" for v in vals) + "</tr>")
    blocked = f", {ex.others_blocked} masked (0)" if ex.others_blocked else ""
    rows.append(f"<tr><td {TABLE[1]} colspan=5>+ {ex.others_allowed} other keys{blocked}</td>"
                f"<td {TABLE[1]}>{num(ex.others_exp)}</td><td {TABLE[1]}>{num(ex.others_weight)}</td></tr>")
    rows.append(f"<tr><td {TABLE[1]} colspan=5><b>all {ex.n_keys} keys</b></td>"
                f"<td {TABLE[1]}><b>sum = {num(ex.exp_sum)}</b></td><td {TABLE[1]}><b>{num(ex.weight_total)}</b>"
                f"</td></tr>")
    out.append(f'<div style="overflow-x:auto"><table {TABLE[0]}>{"".join(rows)}</table></div>')
    if not any(comp.blocked_by):
        out.append(unmasked)
    if ex.exp_sum == 0:
        out.append("<p>Every key is masked for this query: no weights, and the head passes nothing on (0).</p>")
    else:
        out.append(f"<p>The weights add up to 1: {' + '.join(num(k.weight) for k in ex.keys)} + "
                   f"{num(ex.others_weight)} (the other keys) = {num(ex.weight_total)}.</p>")

    head("Mix the values:", "each key's value v, times its weight, added up (Σ weight × v): "
         f"{Dh} numbers, z. Keys with a large weight pass on most.")
    v_top = _top(ex.z, ex.others_value, *(k.value for k in ex.keys))
    for k in ex.keys:
        if not k.blocked_by:
            out.append(strip(k.value, v_top, f"v of {k.key} {_token(key_labels[k.key])}"))
    for k in ex.keys:
        if not k.blocked_by:
            out.append(strip(k.weighted_value, v_top, f"{num(k.weight, 2)} × v of {k.key}"))
    if ex.others_allowed:
        out.append(strip(ex.others_value, v_top, f"+ {ex.others_allowed} other keys"))
    out.append(strip(ex.z, v_top, "= z (the mix)"))

    back = (f"The head multiplies z by its output table (learned too) to get {D} numbers again, and adds them to the "
            f"token's own numbers: that is how what it gathered reaches the layers above.")
    if not plain:
        back += (f" In symbols: written = z·{abbr('W_O')}, what the head adds to the "
                 f"{abbr('residual stream')} at this token; |written| = {num(float(np.linalg.norm(ex.written)))}.")
    head("Back to the token:", back)
    if ex.gate == 0:
        out.append("<p><b>This head is switched off:</b> it adds nothing (0); z above is what it would have "
                   "mixed.</p>")
    else:
        out.append(strip(ex.written, _top(ex.written), "adds to the token"))
    out.append("</div>")
    return "".join(out)


def plain_summary(read: Any, comp: Any, label: str) -> str:
    """The tab's summary in plain words (Markdown: the caller escapes nothing else)."""
    where = f"{KIND_SHORT[comp.kind]} L{comp.layer} H{comp.head}"
    looks = ("the tokens of the source sentence (what the encoder read)" if comp.kind == "cross"
             else "the tokens of its own sentence" + (" up to itself" if "causal" in "".join(comp.blocked_by) else ""))
    shares = (f" It shares its keys and values with {comp.n_heads // comp.n_kv_heads - 1} other heads (it reads "
              f"key/value head {comp.kv_head})." if comp.n_kv_heads != comp.n_heads else "")
    toggled = f" With your switches: {escape_md(', '.join(read.changes))}." if read.toggled is not None else ""
    return (f"**{escape_md(where)}**, at token “{escape_md(label)}” (position {comp.query}) of sentence "
            f"{read.request.sentence}. A head lets a token take information from other tokens: this one looks at "
            f"{looks}.{shares} Below, step by step with this run's own numbers, how it decides how much to take from each, "
            f"and what it passes on.{toggled}")

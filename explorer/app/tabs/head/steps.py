"""The Inside a head tab's worked example as HTML: one head at one query, step by step over the keys the learner picks
(explorer.interpret.head_steps), in plain words or with all the details, in the request's language.

Each vector is a strip of coloured cells (blue < 0 < red) with its scale written beside it (the largest |value| of the
strips that share it: the keys share one, the values and their mix another), and its first numbers. Token text is
escaped: it is shown as text, never read as HTML.

Shapes: D model width, Dh head width; a strip is (n,) numbers.

    steps_html(example, comp, key_labels, query_label, plain, unmasked, lang) -> str (in the request's language)
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
from ...i18n.words import ENGLISH, decimal_point, language, t
from ...page.glossary import abbr

FIRST_NUMBERS = 4  # numbers of a vector written out beside its strip
REASONS = ("causal", "padding", "custom", "window", "mask")  # a key's mask, said in words (head.steps.reason_*)
TABLE = ('style="border-collapse:collapse;font-variant-numeric:tabular-nums;margin:4px 0"',
         'style="padding:2px 8px;border-bottom:1px solid #ccc;text-align:right;white-space:nowrap"')


def num(value: float | None, digits: int = 3, lang: str = ENGLISH) -> str:
    """A number for the steps: `digits` significant digits, an exponent only when it must, − for minus, the
    language's decimal sign."""
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
    return decimal_point(text, lang).replace("-", "−")


# The diverging scale sampled once (a colour per cell looked up, not interpolated: a strip is hundreds of cells)
_LUT = pc.sample_colorscale(DIVERGING_SCALE, [i / 254 for i in range(255)])


def _colour(t: float) -> str:
    return _LUT[round(min(1.0, max(0.0, t)) * 254)]


def strip(values: np.ndarray, top: float, name: str, lang: str = ENGLISH) -> str:
    """One vector as a strip of cells coloured on the scale −top..top, its scale and its first numbers."""
    v = np.asarray(values, dtype=np.float64)
    top = top or 1.0
    n = len(v)
    # one gradient with hard stops: compact for a 4,096-wide x, each cell its own colour
    stops = ", ".join(f"{_colour(0.5 + x / (2 * top))} {100 * i / n:.3f}% {100 * (i + 1) / n:.3f}%"
                      for i, x in enumerate(v.tolist()))
    sep = ", " if lang == ENGLISH else "; "  # decimal-comma numbers: ";" between them
    first = sep.join(num(x, 2, lang) for x in v[:FIRST_NUMBERS].tolist()) + (f"{sep}…" if n > FIRST_NUMBERS else "")
    title = html.escape(words("strip_title", lang, name=name, n=n, low=num(float(v.min()), lang=lang),
                              high=num(float(v.max()), lang=lang)), quote=True)
    return (f'<div style="display:flex;align-items:center;gap:8px;margin:2px 0;flex-wrap:wrap">'
            f'<span style="min-width:9em">{name}</span>'
            f'<span title="{title}" role="img" aria-label="{title}" style="display:inline-block;width:min(240px,40vw);'
            f'height:14px;border:1px solid #999;background:linear-gradient(90deg, {stops})"></span>'
            f'<span style="font-size:0.85em;color:#444">[{first}] ({words("strip_numbers", lang, n=n)} '
            f'−{num(top, 2, lang)} <span style="color:#2166ac">■</span> 0 <span style="color:#b2182b">■</span> '
            f'+{num(top, 2, lang)})</span></div>')


def words(key: str, lang: str, /, **values: Any) -> str:
    """The steps' words (head.steps.<key>) in `lang`."""
    return t(f"head.steps.{key}", lang, **values)


def _top(*vectors: np.ndarray) -> float:
    return max((float(np.abs(v).max()) for v in vectors if v is not None and np.size(v)), default=1.0)


def key_choices(key_labels: Sequence[str]) -> list[tuple[str, int]]:
    """The key picker's choices: "position token" (the labels the figures use), valued by position."""
    return [(f"{j} {label}", j) for j, label in enumerate(key_labels)]


def _token(label: str, lang: str) -> str:
    """A token's text (escaped: shown as text) in the language's quotation marks."""
    return words("quoted", lang, token=html.escape(str(label)))


def steps_html(ex: WorkedExample, comp: Any, key_labels: Sequence[str], query_label: str, plain: bool,
               unmasked: str = "", lang: str = ENGLISH) -> str:
    """The worked example (see the module docstring) in `lang`; `plain`: plain words, else every detail, jargon
    glossed; `unmasked`: the mask step's line when no key is masked for this query (masked.unmasked_html)."""
    lang = language(lang)
    Dh, D = len(ex.q), len(ex.x)
    q_tok = _token(query_label, lang)
    scale = (words("no_division", lang) if ex.scale == 1.0 else
             f"÷ √{round(ex.scale ** -2)} (= × {num(ex.scale, lang=lang)})")
    out = ['<div class="head-steps" style="line-height:1.45">']
    step = iter(range(1, 20))

    def head(title: str, text: str) -> None:
        out.append(f'<p style="margin:10px 0 2px"><b>{next(step)}. {title}</b> {text}</p>')

    def add(values: Any, top: float, name: str) -> None:
        out.append(strip(values, top, name, lang))

    made = words("made", lang, d=D, dh=Dh)
    if not plain:
        norm = abbr("layer's norm", words("norm_word", lang), lang)
        made += words("symbols", lang, where=words("after_norm", lang, norm=norm) if comp.pre_norm else
                      words("before_norm", lang), cross=words("from_encoder", lang) if comp.kind == "cross" else "",
                      rotary=words("rotary", lang, n=comp.rotary_dim, dh=Dh) if comp.rotary_dim else "",
                      shared=words("shared", lang, kv=comp.kv_head) if comp.n_kv_heads != comp.n_heads else "")
    head(words("where_title", lang, token=q_tok, p=ex.query), made)
    add(ex.x, _top(ex.x), words("strip_x", lang))
    if ex.q_unrotated is not None and not plain:
        add(ex.q_unrotated, _top(ex.q_unrotated, ex.q), words("strip_q_unrotated", lang))
    add(ex.q, _top(ex.q), words("strip_q", lang))
    k_top = _top(*(comp.keys[k.key] for k in ex.keys))
    for k in ex.keys:
        add(comp.keys[k.key], k_top, words("strip_k", lang, key=k.key, token=_token(key_labels[k.key], lang)))

    head(words("match_title", lang), words("match", lang, scale=scale, bonus=words("bonus", lang)
                                            if comp.position is not None else ""))
    if ex.shift:
        out.append(f"<p>{words('shift', lang, shift=num(ex.shift, lang=lang))}</p>")
    score = (words("col_score_plain", lang) if ex.scale == 1.0 else words("col_score", lang,
                                                                          scale=scale.split(" (")[0]))
    cells = [words("col_key", lang), words("col_token", lang), "q·k",
             score + (words("col_bonus", lang) if comp.position is not None else ""), words("col_mask", lang),
             words("col_exp_shift", lang, shift=num(ex.shift, lang=lang)) if ex.shift else words("col_exp", lang),
             words("col_weight", lang, sum=num(ex.exp_sum, lang=lang))]
    rows = ["<tr>" + "".join(f"<th {TABLE[1]}>{html.escape(c)}</th>" for c in cells) + "</tr>"]
    for k in ex.keys:
        why = k.blocked_by.split(",")[0]
        mask = (f"−∞ ({words(f'reason_{why}', lang) if why in REASONS else html.escape(k.blocked_by)})"
                if k.blocked_by else words("may_look", lang))
        vals = [str(k.key), _token(key_labels[k.key], lang), num(k.dot, lang=lang), num(k.score, lang=lang), mask,
                num(k.exp, lang=lang), num(k.weight, lang=lang)]
        rows.append("<tr>" + "".join(f"<td {TABLE[1]}>{v}</td>" for v in vals) + "</tr>")
    masked = words("others_masked", lang, n=ex.others_blocked) if ex.others_blocked else ""
    rows.append(f"<tr><td {TABLE[1]} colspan=5>{words('others', lang, n=ex.others_allowed, masked=masked)}</td>"
                f"<td {TABLE[1]}>{num(ex.others_exp, lang=lang)}</td><td {TABLE[1]}>"
                f"{num(ex.others_weight, lang=lang)}</td></tr>")
    rows.append(f"<tr><td {TABLE[1]} colspan=5><b>{words('all_keys', lang, n=ex.n_keys)}</b></td>"
                f"<td {TABLE[1]}><b>{words('sum', lang, sum=num(ex.exp_sum, lang=lang))}</b></td>"
                f"<td {TABLE[1]}><b>{num(ex.weight_total, lang=lang)}</b></td></tr>")
    out.append(f'<div style="overflow-x:auto"><table {TABLE[0]}>{"".join(rows)}</table></div>')
    if not any(comp.blocked_by):
        out.append(unmasked)
    if ex.exp_sum == 0:
        out.append(f"<p>{words('all_masked', lang)}</p>")
    else:
        out.append("<p>" + words("add_up", lang, terms=" + ".join(num(k.weight, lang=lang) for k in ex.keys),
                                 others=num(ex.others_weight, lang=lang), total=num(ex.weight_total, lang=lang))
                   + "</p>")

    head(words("mix_title", lang), words("mix", lang, dh=Dh))
    v_top = _top(ex.z, ex.others_value, *(k.value for k in ex.keys))
    for k in ex.keys:
        if not k.blocked_by:
            add(k.value, v_top, words("strip_v", lang, key=k.key, token=_token(key_labels[k.key], lang)))
    for k in ex.keys:
        if not k.blocked_by:
            add(k.weighted_value, v_top, words("strip_weighted", lang, w=num(k.weight, 2, lang), key=k.key))
    if ex.others_allowed:
        add(ex.others_value, v_top, words("strip_others", lang, n=ex.others_allowed))
    add(ex.z, v_top, words("strip_z", lang))

    back = words("back", lang, d=D)
    if not plain:
        back += words("back_symbols", lang, w_o=abbr("W_O", lang=lang), residual=abbr(
            "residual stream", words("residual_word", lang), lang), norm=num(float(np.linalg.norm(ex.written)),
                                                                              lang=lang))
    head(words("back_title", lang), back)
    if ex.gate == 0:
        out.append(f"<p>{words('switched_off', lang)}</p>")
    else:
        add(ex.written, _top(ex.written), words("strip_adds", lang))
    out.append("</div>")
    return "".join(out)

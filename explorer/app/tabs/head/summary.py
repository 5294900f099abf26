"""The Inside a head tab's summary above its steps, in the request's language: in plain words (`plain_summary`), or
the numbers of the head's computation with all the details (`summary_markdown`: x, the score's scale, the blocked
keys, what the head writes, and what the toggles change). Markdown; token text escaped. Shapes: none (a
HeadComputation's numbers, read only).

    plain_summary(read, comp, label, lang) -> str
    summary_markdown(read, base, toggled, label, lang) -> str (unglossed: the caller glosses it in the language)
"""

from __future__ import annotations

from typing import Any

from ...i18n.words import ENGLISH, decimal_point, t
from ...serving.errors import escape_md

CHANGES = {"padding mask off": "head.summary.padding_off", "causal mask off": "head.summary.causal_off",
           "custom mask": "head.summary.custom"}  # toggle_changes' words; a head's: "<kind> L<l> H<h> off"
MASKS = ("causal", "padding", "custom", "window")  # what blocked a key (HeadComputation.blocked_by), in words


def where(comp: Any, lang: str) -> str:
    """"cross-attention L1 H3": the head's kind (view.KIND_SHORT) in `lang`, its layer and head."""
    kind = "figure.cross" if comp.kind == "cross" else f"figure.{comp.kind}_short"
    return f"{t(kind, lang)} L{comp.layer} H{comp.head}"


def changes_in(changes: Any, lang: str) -> str:
    """What the toggles change (interpret.head_computation.toggle_changes: "causal mask off", "cross L0 H1 off"), in
    `lang`, escaped for Markdown."""
    said = []
    for change in changes:
        key = CHANGES.get(change)
        said.append(t(key, lang) if key else t("head.summary.head_off", lang, head=change.removesuffix(" off"))
                    if change.endswith(" off") else change)
    return escape_md(", ".join(said))


def plain_summary(read: Any, comp: Any, label: str, lang: str = ENGLISH) -> str:
    """The tab's summary in plain words, in `lang` (Markdown: the caller escapes nothing else)."""
    looks = ("result.head.looks_source" if comp.kind == "cross" else "result.head.looks_causal"
             if "causal" in "".join(comp.blocked_by) else "result.head.looks_own")
    shares = (t("result.head.shares", lang, n=comp.n_heads // comp.n_kv_heads - 1, kv=comp.kv_head)
              if comp.n_kv_heads != comp.n_heads else "")
    switches = (t("result.head.switches", lang, changes=changes_in(read.changes, lang)) if read.toggled is not None
                else "")
    return t("result.head.plain", lang, title=escape_md(where(comp, lang)), token=escape_md(label), p=comp.query,
             sentence=read.request.sentence, looks=t(looks, lang), shares=shares, switches=switches)


def summary_markdown(read: Any, base: Any, toggled: Any, label: str, lang: str = ENGLISH) -> str:
    """The numbers' summary (the tab's "all details" view) in `lang` (head.summary, result.head), unglossed."""
    r = toggled if toggled is not None else base

    def g(value: float, digits: int) -> str:  # significant digits, the language's decimal sign
        return decimal_point(f"{value:.{digits}g}", lang)

    kv = t("head.summary.shared", lang, kv=r.kv_head, n=r.n_heads // r.n_kv_heads) if r.n_kv_heads != r.n_heads else ""
    scale = (t("head.summary.no_scale", lang) if r.scale == 1.0 else
             f"× {g(r.scale, 4)} (1/√{round(r.scale ** -2)})")
    blocked: dict[str, int] = {}
    for why in r.blocked_by:
        if why:
            blocked[why] = blocked.get(why, 0) + 1
    masks = ", ".join(t("head.summary.blocked_by", lang, n=n, why=t(f"head.summary.mask_{why}", lang) if why in
                        MASKS else why) for why, n in blocked.items())
    lines = [t("result.head.details", lang, title=escape_md(where(r, lang)), q=r.query, token=escape_md(label),
               sentence=read.request.sentence) + kv,
             t("head.summary.x", lang, x=t("head.summary.x_pre" if r.pre_norm else "head.summary.x_post", lang),
               size=g(float((r.x ** 2).sum() ** 0.5), 3), scale=scale,
               bias=t("head.summary.bias", lang) if r.position is not None else "",
               rotary=t("head.summary.rotary", lang, n=r.rotary_dim, dh=len(r.q)) if r.rotary_dim else "",
               masks=masks or t("head.summary.none", lang)),
             t("head.summary.writes" if r.head_on else "head.summary.writes_off", lang, size=g(r.written_norm, 4))]
    if toggled is not None:
        change = abs(toggled.weights - base.weights).max()
        lines.append(t("result.head.toggles", lang, changes=changes_in(read.changes, lang), change=g(change, 3),
                       before=g(base.written_norm, 4), after=g(toggled.written_norm, 4)))
    return "\n\n".join(lines)

"""A figure's and a tab's result words in the request's language. The figures are drawn in English by explorer.viz
(which knows no language) and sent as JSON (a PlotData, page.assets.plot); `plot_in` rewrites that JSON's words: the
title, the axes' and colour bars' titles, the notes (annotations), the traces' names and the text alternative
(layout.meta.alt, page.figure_alt), each read back by i18n.messages from the English texts of `<lang>.figures.toml`
(`[figure]`: each English text its own pattern), the hover words a trace writes point by point (its meta's
"word_text": `[figure.hover.points]`, a token as it is) and a slider's words; it sets the layout's `separators`, so the
numbers Plotly writes (a hover's %{z:.3f}) take the language's decimal sign, and keeps a trace's English name in its
meta (en_name) for the page scripts. `result_in` does the same for a tab's Markdown result, paragraph by paragraph
(`[result]`). A text found in no catalogue stays as it is: tokens, model outputs and names are never translated.
Shapes: none (words only; the numbers of a figure are never read or changed).
"""

from __future__ import annotations

import functools
import re
import string
from typing import Any

import orjson

from ...viz.describe import plain
from ...viz.serialize import html_safe
from ..page.figure_alt import alt_tables_in
from .messages import masks_in, message_in, templates
from .words import ENGLISH, catalogue, language, separators, t

TEXT_KEYS = frozenset({"text", "name", "caption", "note"})  # the words a figure carries
MASK_COLUMNS = ("blocked", "blocked (toggled)")  # Inside a head's keys table: why a key is blocked ("causal")
WORD_COLUMNS = ("run", "input", "sequence")  # a table's columns whose cells are words ("baseline", "MLP input",
#                                               the Contributions table's "decoder input"), not tokens


def words_in(value: Any, lang: str) -> Any:
    """`value` (a figure's layout or trace, as JSON data) with every word of TEXT_KEYS in `lang`."""
    if isinstance(value, dict):
        said = {k: (message_in(v, lang) if isinstance(v, str) and k in TEXT_KEYS else words_in(v, lang))
                for k, v in value.items()}
        if isinstance(value.get("colorbar"), dict) and isinstance(value["colorbar"].get("ticktext"), list):
            # a colour bar's ticks are words ("allowed (1)"); an axis's are tokens, never translated
            said["colorbar"]["ticktext"] = [message_in(x, lang) if isinstance(x, str) else x
                                            for x in value["colorbar"]["ticktext"]]
        return said
    if isinstance(value, list) and value and not isinstance(value[0], (int, float, str)):
        return [words_in(v, lang) for v in value]
    return value


def plot_in(plot: Any, lang: Any) -> Any:
    """A gr.Plot's value (PlotData) with its words in `lang`; anything else (None, an update) as it is."""
    lang = language(lang)
    spec_text = getattr(plot, "plot", None)
    if lang == ENGLISH or getattr(plot, "type", None) != "plotly" or not isinstance(spec_text, str):
        return plot
    return type(plot)(type="plotly", plot=figure_json_in(spec_text, lang))


def figure_json_in(spec_text: str, lang: Any) -> str:
    """A figure's JSON text ({"data", "layout"[, "config"]}) with its words in `lang`."""
    lang = language(lang)
    if lang == ENGLISH:
        return spec_text
    spec = orjson.loads(spec_text)
    # the numbers Plotly writes itself (a hover's %{z:.3f}, the ticks) with the language's decimal sign and grouping
    spec["layout"] = {**words_in(spec.get("layout", {}), lang), "separators": separators(lang)}
    if isinstance(spec["layout"].get("sliders"), list):
        spec["layout"]["sliders"] = [slider_in(s, lang) for s in spec["layout"]["sliders"]]
    meta = spec["layout"].get("meta") if isinstance(spec["layout"].get("meta"), dict) else {}
    alt = meta.get("alt")
    if isinstance(alt, dict) and isinstance(alt.get("parts"), dict):
        alt["text"], alt["switch"] = alt_text_in(alt["parts"], lang), t("figure.described.switch", lang)
        alt["tables"] = alt_tables_in(alt.get("tables") or [], lang)  # their headers, numbers and points' words
    # a trace's own words: its name, its colour bar's (a scatter's is its marker's: the Circuit graph's score), its
    # hover text's (hovertemplate: Plotly's %{...} tokens kept as they are)
    spec["data"] = [{**trace, **words_in({k: trace[k] for k in ("name", "colorbar", "marker") if k in trace}, lang),
                     **({"hovertemplate": message_in(trace["hovertemplate"], lang)}
                        if isinstance(trace.get("hovertemplate"), str) else {}), **rows_in(trace, lang),
                     **custom_in(trace, lang), **text_in(trace, lang), **english_name(trace)}
                    for trace in spec.get("data", [])]
    if meta.get("word_axes"):
        axes_in(spec, lang)
    for key in meta.get("word_ticks") or ():  # an axis whose ticks are words ("layer 0"), not tokens
        axis = spec["layout"].get(key)
        if isinstance(axis, dict) and isinstance(axis.get("ticktext"), list):
            axis["ticktext"] = [lines_in(x, lang) for x in axis["ticktext"]]
    return html_safe(orjson.dumps(spec).decode())


def rows_in(trace: dict[str, Any], lang: str) -> dict[str, Any]:
    """A trace whose rows are named by words, not tokens (its meta's "word_rows": the Contributions strip's
    "source", "decoder input"): its y in `lang` ([column]); any other trace: nothing."""
    meta = trace.get("meta")
    if not (isinstance(meta, dict) and meta.get("word_rows") and isinstance(trace.get("y"), list)):
        return {}
    return {"y": [row_in(y, lang) for y in trace["y"]]}


@functools.cache
def _rows() -> tuple[tuple[re.Pattern[str], str], ...]:
    """A figure's row names that are words ([row]: "after L{layer}"), each its own pattern."""
    found = []
    for key, text in catalogue(ENGLISH).items():
        if key.startswith("row."):
            parts = [re.escape(lit) + (f"(?P<{name}>\\d+)" if name else "") for lit, name, _, _ in
                     string.Formatter().parse(text)]
            found.append((re.compile("".join(parts)), key))
    return tuple(found)


def custom_in(trace: dict[str, Any], lang: str) -> dict[str, Any]:
    """A trace whose hover words are in its customdata (its meta's "word_custom": Inside a head's bars, "score 0.1234",
    "blocked (causal): no score, −∞"): each read back in `lang`; any other trace: nothing."""
    meta = trace.get("meta")
    if not (isinstance(meta, dict) and meta.get("word_custom") and isinstance(trace.get("customdata"), list)):
        return {}
    return {"customdata": [message_in(x, lang) if isinstance(x, str) else x for x in trace["customdata"]]}


@functools.cache
def _slider_words() -> dict[str, str]:
    """A slider's English words ([figure.slider]: "every query", "query: ") -> their catalogue keys."""
    return {text: key for key, text in catalogue(ENGLISH).items() if key.startswith("figure.slider.")}


def slider_in(slider: Any, lang: str) -> Any:
    """A slider's words in `lang`: its current value's prefix ("query: "), the steps named by words ("every
    query") and the titles a step sets (the rollout's "…, through layer 2"); a step named by a token ("cat (3)") as it
    is."""
    if not isinstance(slider, dict):
        return slider
    words, said = _slider_words(), dict(slider)
    now = slider.get("currentvalue")
    if isinstance(now, dict) and now.get("prefix") in words:
        said["currentvalue"] = {**now, "prefix": t(words[now["prefix"]], lang)}
    if isinstance(slider.get("steps"), list):
        said["steps"] = [step_in(s, words, lang) for s in slider["steps"]]
    return said


def step_in(step: Any, words: dict[str, str], lang: str) -> Any:
    """A slider's step with its label (when it is words) and the title it sets in `lang`."""
    if not isinstance(step, dict):
        return step
    said = {**step, **({"label": t(words[step["label"]], lang)} if step.get("label") in words else {})}
    if isinstance(step.get("args"), list):
        said["args"] = [{**a, "title.text": message_in(a["title.text"], lang)} if isinstance(a, dict) and isinstance(
            a.get("title.text"), str) else a for a in step["args"]]
    return said


POINTS = ("figure.hover.points.", "figure.circuit.")  # the words a hover text writes point by point (lines_in)
CELLS = ("figure.cell_",)  # a cell's name: "layer {layer} · query {q}: {token}", "tokens {lo}–{hi}: {first} … {last}"


def cell_in(name: Any, lang: str) -> Any:
    """A heatmap cell's category name in `lang` ("layer 2 · query 5: cat" → "couche 2 · requête 5 : cat"); any other
    name (a gap's, a token's where only the other side is pooled) as it is."""
    if isinstance(name, str) and any(pattern.fullmatch(name) for pattern, _ in templates(CELLS)):
        return message_in(name, lang, CELLS)
    return name


def axes_in(spec: dict[str, Any], lang: str) -> None:
    """A figure whose cells are named by words around tokens (its layout's meta says "word_axes": the overview's "layer
    2 · query 5: cat", a long input's pooled "tokens 0–15: a … p"): every trace's x and y and every axis's tick values
    said in `lang` the same way, so that each still names its category (a gap's name as drawn)."""
    for trace in spec["data"]:
        trace.update({k: [cell_in(v, lang) for v in trace[k]] for k in ("x", "y") if isinstance(trace.get(k), list)})
    for key, axis in spec["layout"].items():
        if key.startswith(("xaxis", "yaxis")) and isinstance(axis, dict) and isinstance(axis.get("tickvals"), list):
            axis["tickvals"] = [cell_in(v, lang) for v in axis["tickvals"]]


def english_name(trace: dict[str, Any]) -> dict[str, Any]:
    """A named trace's English name kept in its meta ("en_name"): the page scripts find a trace by it ("queries",
    "weights": a click on a query), whatever the language its name is said in."""
    meta = trace.get("meta")
    if not isinstance(trace.get("name"), str) or not (meta is None or isinstance(meta, dict)):
        return {}
    return {"meta": {**(meta or {}), "en_name": trace["name"]}}


def text_in(trace: dict[str, Any], lang: str) -> dict[str, Any]:
    """A trace whose hover words are in its text or hovertext (its meta's "word_text": True, or the one of the two
    that holds them: the flow graph's and the circuit's edges, the head views' and the query-key map's tokens): each
    line (between <br>s) read back in `lang`, its tokens as they are; any other trace (whose text is tokens or numbers
    drawn on the cells): nothing."""
    meta = trace.get("meta")
    which = meta.get("word_text") if isinstance(meta, dict) else None
    keys = (which,) if isinstance(which, str) else ("text", "hovertext") if which else ()
    return {k: [lines_in(x, lang) for x in trace[k]] for k in keys if isinstance(trace.get(k), list)}


def lines_in(text: Any, lang: str) -> Any:
    """A hover text's lines, each read back in `lang` ("key “m” (2)<br>share 0.25") from the texts hovers write point by
    point and the Circuit's words they name ("EAP score"): a few dozen patterns, not every figure's (the lines view
    at 1,024 tokens has 9,000 lines)."""
    return "<br>".join(message_in(line, lang, POINTS) for line in text.split("<br>")) if isinstance(text, str) else text


def row_in(name: Any, lang: str) -> Any:
    """A row's name in `lang`: a table's word ([column]: "decoder input") or a figure's row ([row]: "after L0")."""
    if not isinstance(name, str):
        return name
    if name in _columns():
        return column_in(name, lang)
    return next((t(key, lang, **m.groupdict()) for pattern, key in _rows() if (m := pattern.fullmatch(name))), name)


def alt_text_in(parts: dict[str, Any], lang: str) -> str:
    """A figure's text alternative (viz.describe: its title, each described trace's sentence, its notes) said part by
    part in `lang`, joined as describe joins them."""
    title = plain(message_in(str(parts.get("title") or ""), lang))  # as drawn: its <br>s are the catalogue's
    sentences = [message_in(str(x), lang) for x in parts.get("sentences") or ()]
    notes = [plain(message_in(str(x), lang)) for x in parts.get("notes") or ()]
    if not sentences and notes:  # a message figure: why there is nothing to show
        return " ".join(filter(None, [title, *notes]))
    said = [f"{title}." if title and not title.endswith(".") else title, *sentences]
    if notes:
        said.append(t("figure.described.notes", lang, notes="; ".join(notes).rstrip(".")))
    return " ".join(x for x in said if x)


def result_in(markdown: str, lang: Any) -> str:
    """A tab's Markdown result in `lang`, paragraph by paragraph (a paragraph found in no catalogue: as it is)."""
    lang = language(lang)
    if lang == ENGLISH or not markdown:
        return markdown
    return "\n\n".join(message_in(p, lang) for p in markdown.split("\n\n"))


@functools.cache
def _columns() -> dict[str, str]:
    """A table's English header (or "run" cell) -> its catalogue key."""
    return {text: key for key, text in catalogue(ENGLISH).items() if key.startswith("column.")}


def column_in(name: Any, lang: str) -> Any:
    key = _columns().get(name) if isinstance(name, str) else None
    return t(key, lang) if key else name


def table_in(table: Any, lang: Any) -> Any:
    """A pandas DataFrame with its headers (and the words of its "run" column) in `lang`; its cells, tokens and
    numbers, as they are."""
    lang = language(lang)
    if lang == ENGLISH:
        return table
    said = table.assign(**{c: table[c].map(lambda x: column_in(x, lang)) for c in WORD_COLUMNS if c in table.columns},
                        **{c: table[c].map(lambda x: masks_in(x, lang)) for c in MASK_COLUMNS if c in table.columns})
    return said.rename(columns=lambda c: column_in(c, lang))


def updates_in(updates: Any, lang: Any) -> Any:
    """A handler's updates (component -> value) with every plot's, Markdown result's and table's words in `lang`."""
    lang = language(lang)
    if lang == ENGLISH or not isinstance(updates, dict):
        return updates
    # a DataFrame first: it has a `plot` accessor too
    return {c: table_in(v, lang) if hasattr(v, "columns") and hasattr(v, "rename") else plot_in(v, lang)
            if hasattr(v, "plot") else result_in(v, lang) if isinstance(v, str) else v for c, v in updates.items()}

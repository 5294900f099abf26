"""The most common error messages of a Run, of a model change, of the tabs' buttons and of a link in the page's
language: a handler's exception becomes English words (serving.errors.user_message); those listed here are read back
by their pattern and said in the language of the request (`reporting` finds it on the handler's form, RunForm.lang,
or in the page's last Run, kept.Shown's request; a link's notices: link.opening). The tabs' refusals and notices
(`<lang>.refusals.toml`, `[refuse]`) need no hand-written pattern: each English text is its own pattern, its
`{placeholders}` what varies; a number in a value is written the language's way, and a value named `why` or `err` (a
reason from deeper down) is itself read back. A message not listed stays in English (docs/languages.md)."""

from __future__ import annotations

import functools
import html
import re
import string
from typing import Any

from ..serving.errors import escape_md
from .words import ENGLISH, catalogue, counted, language, number, t

TEMPLATED = ("refuse.", "figure.", "result.", "source.", "endpoint.")  # the catalogue sections whose English texts are their own patterns
# a lesson file's errors, for the teacher only: their "{file}: {why}" would read any "a: b" text, so they are read
# back by `lesson_error_in` alone
LESSON_ERRORS = (*TEMPLATED, "lesson_error.")
# placeholders holding other words read back too (a reason from deeper down, a figure's title or axis); "cells": a
# figure's text alternative's strongest cells, each read back ("‘a’ attends most to ‘b’, 0.62; ...")
NESTED = frozenset({"why", "err", "reads", "where", "kind", "run", "measure", "rows", "columns", "title", "rest",
                    "notes", "explanation", "clicked", "method", "moved", "baseline", "ok", "task", "points",
                    "metric", "exact", "size_words", "off_heads",
                    "change_words", "objective", "role_title", "cell_query", "cell_key",
                    "looks", "shares", "switches",
                    "named", "state", "hint", "limit_for", "asks", "refusal", "miss", "token_words", "origin",
                    "scale",  # the computation figure's note: "× 0.25" (figure.inside.scale)
                    "axis"})  # a point figure's text alternative: "73 points along {axis}" (figure.described)
SPANNING = NESTED | {"cells", "items", "tokens_listed", "families", "said", "weighted", "token"}  # "said": a point
# figure's points; a token may end in "&gt;"
FIELDS = frozenset({"file", "file2", "repo"})  # a file or repo named first ("x.json in y: …"): no ": " of a frame
# a count and its noun ("1 point", "3 rows": a text alternative's), said with the language's plural rule
COUNTED = frozenset({"count", "count_rows", "count_columns"})
# a token (a hover's "key {token} (2)", a pooled cell's "{first} … {last}"): never translated, nor read as a number
AS_IS = frozenset({"token", "first", "last"})
# a number a hover text writes after a token ("H0: → {token} {weight}"): only a number, so a token may hold spaces
NUMERIC = frozenset({"weight", "fraction", "renormalised"})
NUMBER_TEXT = r"[-+−]?\d[\d,.]*(?:e[-+−]?\d+)?"
IDENT = frozenset({"key"})  # a link's or a file's key (layer, d_sae): one word, never a frame's "⚠️" before it
# an English number worth rewriting: with a decimal point or thousands commas ("0.62", "12,345"); a bare integer (a
# layer, a token id) reads the same in every language
_NUMBER = re.compile(r"([-+−]?)((?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+))")
_MORE = re.compile(r"(.*) \(and ([\d,]+) more\)", re.DOTALL)
_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+!|~])")  # a Markdown character escape_md escaped
_SCIENTIFIC = re.compile(r"([-+−]?)(\d+(?:\.\d+)?)(e[-+−]?\d+)")  # "3.4e−06": its mantissa the language's way

# (the English message as a pattern, its catalogue key; the pattern's named groups are the key's placeholders)
MESSAGES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Type a sentence first \(the input is empty\)\."), "errors.empty"),
    (re.compile(r"Sentence (?P<n>\d) gives no tokens for this model\."), "errors.no_tokens"),
    (re.compile(r"This page's session was lost: reload the page\."), "errors.session_lost"),
    (re.compile(r"head L(?P<layer>\d+) H(?P<head>\d+) does not exist in the (?P<kind>\w+) attention "
                r"\((?P<layers>\d+) layers x (?P<heads>\d+) heads\)"), "errors.no_head"),
    # a model change and the tabs' buttons pressed before what they need (notices.toml [refusal])
    (re.compile(r"Could not load (?P<source>'.*'): (?P<why>.*)", re.DOTALL), "refusal.could_not_load"),
    (re.compile(r"Choose a second model to compare with \(a shipped name, a Hub id or an allowed folder\)\."),
     "refusal.second_model"),
    (re.compile(r"Attribute first, then choose a head \(or click one in the map or the graph\) to open it\."),
     "refusal.attribute_first"),
    (re.compile(r"Rank the heads by their effect first: then the top one can be switched off\."),
     "refusal.rank_first"),
    (re.compile(r"Read the features first \(or type a latent\), then switch it\."), "refusal.read_first"),
    # a link's notices (link.state, link.opening; notices.toml [link])
    (re.compile(r"unknown key (?P<key>.+)"), "link.unknown_key"),
    (re.compile(r"(?P<key>\S+) given twice \(the first one is used\)"), "link.twice"),
    (re.compile(r"only the first (?P<n>\d+) of its (?P<m>\d+) keys were read"), "link.first_keys"),
    (re.compile(r"model (?P<model>.+?) could not be loaded: (?P<why>.+)", re.DOTALL), "link.not_loaded"),
    (re.compile(r"a built model has no name a link can carry, so the link opens the starting model"), "link.built"),
)


@functools.cache
def templates(sections: tuple[str, ...] = TEMPLATED) -> tuple[tuple[re.Pattern[str], str], ...]:
    """(pattern, key) of every English text of `sections`, the most specific (longest literal text) first."""
    found = []
    for key, text in catalogue(ENGLISH).items():
        if not key.startswith(sections):
            continue
        parts, seen = [], set()
        for literal, name, _, _ in string.Formatter().parse(text):
            parts.append(re.escape(literal))
            if name is not None:  # a name used twice is the same text both times
                # a value holds no "; " (the next item of a list), but words read back may
                parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>.*?)" if name in SPANNING else
                             f"(?P<{name}>(?:(?!: |; ).)*?)" if name in FIELDS else f"(?P<{name}>[\\w.]+)" if name in
                             IDENT else f"(?P<{name}>[\\d,]+ [^\\W\\d]+)" if name in COUNTED else
                             f"(?P<{name}>{NUMBER_TEXT})" if name in NUMERIC else
                             f"(?P<{name}>(?:(?!; ).)*?)")
                seen.add(name)
        literal_chars = sum(len(lit) for lit, _, _, _ in string.Formatter().parse(text))
        found.append((-literal_chars, key, re.compile("".join(parts), re.DOTALL)))
    return tuple((pattern, key) for _, key, pattern in sorted(found))


@functools.cache
def needles(sections: tuple[str, ...] = TEMPLATED) -> dict[str, str]:
    """Each text of `sections`' longest literal part ("key {token} (position {position})" -> " (position "): a message
    that lacks it cannot match the text's pattern, so message_in tests it first (hover texts run to thousands)."""
    return {key: max((lit for lit, _, _, _ in string.Formatter().parse(text)), key=len, default="")
            for key, text in catalogue(ENGLISH).items() if key.startswith(sections)}


@functools.cache
def _masks() -> frozenset[str]:
    """The masks' names a key can be blocked by (HeadComputation.blocked_by): the catalogue's [mask] keys."""
    return frozenset(key.removeprefix("mask.") for key in catalogue(ENGLISH) if key.startswith("mask."))


def masks_in(value: Any, lang: Any) -> Any:
    """Why a key is blocked ("causal", "padding, custom": HeadComputation.blocked_by) in `lang`; else as it is."""
    parts = value.split(", ") if isinstance(value, str) and value else []
    return ", ".join(t(f"mask.{p}", lang) for p in parts) if parts and set(parts) <= _masks() else value


def _value_in(name: str, value: str, lang: str, sections: tuple[str, ...] = TEMPLATED) -> str:
    if name in AS_IS:
        return value
    if name == "why" and (said := masks_in(value, lang)) != value:
        return said
    if name.startswith("file") and " in " in value:  # "config.json in my-model" (file_reads.describe): the file as is
        file, _, folder = value.partition(" in ")
        return t("file_words.in_repo" if folder == "the repo" else "file_words.in_folder", lang, name=file,
                 folder=folder)
    if name in NESTED:
        return message_in(value, lang, sections)
    if name == "names" and (m := _MORE.fullmatch(value)):  # file_reads.few: "a, b (and 3 more)"
        return t("file_words.and_more", lang, names=m.group(1), n=number(int(m.group(2).replace(",", "")), lang))
    if name == "numbered":  # a list of names and numbers ("L0 H1 = 0.93, L1 H2 = 0.88"): its numbers the language's way
        return _NUMBER.sub(lambda m: _value_in("", m.group(0), lang), value)
    if name in ("families", "family"):  # "GPT-2 (gpt2); Llama-family (llama, …)"; "a Llama-family model"
        return families_in(value, lang, "family_words.family" if name == "families" else "family_words.of")
    if name in COUNTED and (m := _counts().get(value.rpartition(" ")[2])):  # "1 point": the plural rule
        return counted(int(value.rpartition(" ")[0].replace(",", "")), m, lang)
    if name == "said":  # a point figure's points, each named by its own words (figure.point)
        return "; ".join(message_in(point, lang, sections) for point in value.split("; "))
    if name == "weighted":  # tokens each with its number ("m 0.52, a 0.31"): the tokens as they are
        return ", ".join(f"{token} {_value_in('', n, lang)}" if token else n for token, _, n in
                         (item.rpartition(" ") for item in value.split(", ")))
    if name == "cells":
        return "; ".join(message_in(cell, lang, sections) for cell in value.split("; "))
    if name == "items":  # a list of items each read back ("previous L1 H0 \\(0.19\\), self L1 H3 \\(0.24\\)")
        return ", ".join(message_in(item, lang, sections) for item in value.split(", "))
    if name == "row":  # a row named by words, as a table's cell ("decoder input": [column])
        key = next((k for k, v in catalogue(ENGLISH).items() if k.startswith("column.") and v == value), None)
        return t(key, lang) if key else value
    if name in ("unit", "units") and f"unit.{value}" in catalogue(ENGLISH):  # "character": one; "characters": several
        return t(f"unit.{value}{'s' if name == 'units' else ''}", lang)
    if m := _NUMBER.fullmatch(value):  # its sign as written ("−0.95", "+0.52"), the rest the language's way
        sign, digits = m.group(1), len(m.group(2).partition(".")[2])
        return sign + number(float(m.group(2).replace(",", "")), lang, digits=digits)
    if m := _SCIENTIFIC.fullmatch(value):
        sign, digits = m.group(1), len(m.group(2).partition(".")[2])
        return sign + number(float(m.group(2)), lang, digits=digits) + m.group(3)
    return value


@functools.cache
def _counts() -> dict[str, str]:
    """A counted noun as English writes it ("point", "points": `count.<noun>` with "{n} " before it) -> the noun."""
    return {text.partition("{n} ")[2]: key.split(".")[1] for key, text in catalogue(ENGLISH).items()
            if key.startswith("count.")}


def families_in(listed: str, lang: str, key: str = "family_words.family") -> str:
    """A list of model families (importers.FAMILIES: "GPT-2 (gpt2); Llama-family (llama, mistral, qwen2)"), or one, in
    `lang`: a proper name (GPT-2, BERT) and the model_types as they are, "X-family" the language's way with `key`
    ("famille Llama"; inside a phrase, family_words.of: "configuration de la famille Llama")."""
    before, _, after = catalogue(ENGLISH)[key].partition("{name}")
    said = []
    for item in listed.split("; "):
        name, paren, types = item.partition(" (")
        if len(name) > len(before + after) and name.startswith(before) and name.endswith(after):
            name = t(key, lang, name=name[len(before):len(name) - len(after)])
        said.append(name + paren + types)
    return t("family_words.between", lang).join(said)


def message_in(message: str, lang: Any = ENGLISH, sections: tuple[str, ...] = TEMPLATED) -> str:
    """`message` in `lang` when it is one of MESSAGES or a text of `sections`, else as it is."""
    lang = language(lang)
    if lang == ENGLISH or not message:
        return message
    # a lesson file's texts first: "unknown key 'x' (the keys: …)" is its own, not a link's "unknown key …"
    patterns = MESSAGES + templates(sections) if sections == TEMPLATED else templates(sections) + MESSAGES
    needs = needles(sections)
    for pattern, key in patterns:
        if (need := needs.get(key)) and need not in message:  # cheap: a message without it cannot match
            continue
        if m := pattern.fullmatch(message):  # formatted even without values: a template's "{{" is one "{"
            values = {k: _value_in(k, v or "", lang, sections) for k, v in m.groupdict().items()}
            return t(key, lang).format(**values)
    # a text a tab made safe for Markdown as a whole (escape_md: a note, a notice): read back as the code wrote it
    plain = html.unescape(_ESCAPED.sub(r"\1", message))
    if plain != message and (said := message_in(plain, lang, sections)) != plain:
        return escape_md(said)
    return message


def lesson_error_in(error: str, lang: Any = ENGLISH) -> str:
    """A lesson file's error (explorer.app.page.lesson_files: "month.toml in lessons: step 2: `hint` is missing") in
    `lang`; the file's name and what it quotes as they are."""
    return message_in(error, lang, LESSON_ERRORS)


def language_of(args: tuple[Any, ...]) -> str:
    """The page's language carried by a handler's arguments (a form with a `lang` field, else the page's last Run:
    a kept.Shown's request), else English."""
    carried = [getattr(a, "lang", None) for a in args] + [getattr(getattr(a, "request", None), "lang", None)
                                                          for a in args]
    return next((language(lang) for lang in carried if isinstance(lang, str)), ENGLISH)


def notices_line(notices: list[str], ending: str, lang: Any = ENGLISH) -> str:
    """A link's notices in one line in `lang` ("" for none): "Link: a; b. <ending>" (`ending`: a catalogue key)."""
    if not notices:
        return ""
    return t("link.line", lang, notices="; ".join(message_in(n, lang) for n in notices), ending=t(ending, lang))

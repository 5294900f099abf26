"""The page's own words in the chosen language: the layout is written in English once (shared by every session);
`page_texts` walks the built page for its words (each component's label, info and placeholder, a button's text,
a static Markdown's text), each found in the English catalogue by value (`english_keys`), and `relabel` gives the
updates that put them in another language, sent to one page when its `lang` setting changes (a link's `lang=`, the
browser's language on load, or the menu). A component whose value the events write (the state line, the model's
description) is `WRITTEN`: its words come from the handler that writes it, in the request's language.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from ..page.glossary import glossed
from ..page.layout import example_choices
from ..page.model_panel import describe, headline
from ..serving.session import get_model
from .headers import tables_in
from .words import ENGLISH, catalogue, language, t

PROPS = ("label", "info", "placeholder")  # the page's words every component may carry
VALUED = (gr.Markdown, gr.Button, gr.HTML)  # and whose value is words (a static one's)
# Components whose value (a menu: its choices) the events write (they start empty, or with words a handler replaces,
# in the request's language): never relabelled here, and the catalogue test does not ask for their words. The
# Lessons menu: page.lesson_events writes its titles in the page's language, and the note on lesson files not loaded.
WRITTEN = frozenset({"model-info", "headline", "status", "link-notice", "state-line", "why-step",
                     "features-switch-state", "lessons", "lesson-refused"})
# Menus whose choices are the model's words (examples, models, kinds, heads, SAEs) or a language's own name.
CHOSEN_AS_IS = frozenset({"ex1", "ex2", "source", "model2", "kind", "kind2", "features-sae", "page-lang", "pair"})


@dataclass(frozen=True)
class Text:
    """One word of the page: a component, which of its properties, the English text it was laid out with."""

    component: Any
    prop: str  # "label", "info", "placeholder", "value" or "choices" (one Text per choice: `value` is its value)
    english: str
    value: Any = None  # a choice's value (never translated: the API's and the links' word); or the text in every
    #                    language, lang -> words, of a component made with them (`in_languages`)


def page_texts(demo: gr.Blocks) -> list[Text]:
    """Every English text of the page's layout (static: what the page was built with)."""
    found = []
    for block in demo.blocks.values():
        for prop in PROPS:
            value = getattr(block, prop, None)
            if isinstance(value, str) and value.strip():
                found.append(Text(block, prop, value))
        found += choice_texts(block)
        in_languages = getattr(block, "in_languages", None)  # a text made per language (the API tab's: page_wired)
        if isinstance(in_languages, dict):
            found.append(Text(block, "value", in_languages[ENGLISH], in_languages))
        elif isinstance(block, VALUED) and getattr(block, "elem_id", None) not in WRITTEN:
            value = getattr(block, "value", None)
            if isinstance(value, str) and value.strip():
                found.append(Text(block, "value", value))
    return found


def choice_texts(block: Any) -> list[Text]:
    """A menu's or radio's choices, when the catalogue holds any of them (the others, such as a model's examples, are
    said as they are: CHOSEN_AS_IS; a lesson's title is written in the language by its events: WRITTEN)."""
    choices = getattr(block, "choices", None)
    if not choices or getattr(block, "elem_id", None) in CHOSEN_AS_IS | WRITTEN:
        return []
    pairs = [tuple(c) if isinstance(c, (tuple, list)) else (c, c) for c in choices]
    if not any(isinstance(label, str) and label in english_keys() for label, _ in pairs):
        return []
    return [Text(block, "choices", str(label), value) for label, value in pairs]


@functools.cache
def english_keys() -> dict[str, str]:
    """English text -> its key, for every string of the English catalogue and its glossed form (a tab's help is laid
    out glossed: page.glossary)."""
    index: dict[str, str] = {}
    english = catalogue(ENGLISH)
    for key in sorted(english, key=lambda k: not k.startswith("page.")):  # the layout's own first ("off": a choice)
        # a table's header ("class"), or a mask's name in Inside a head ("custom"): never a word of the layout (a mode
        # named class, the preset menu's "custom")
        if key.startswith(("column.", "mask.")):
            continue
        text = english[key]
        index.setdefault(text, key)
        index.setdefault(glossed(text), key)
    return index


def translated(english: str, lang: str) -> str | None:
    """`english` (as laid out) in `lang`, glossed as it was; None when the catalogue does not hold it."""
    key = english_keys().get(english)
    if key is None:
        return None
    text = t(key, lang)
    return glossed(text, lang) if english != catalogue(ENGLISH)[key] else text


def relabel(texts: Iterable[Text], lang: Any) -> dict[Any, Any]:
    """The component updates that put `texts` in `lang` (English puts them back)."""
    lang = language(lang)
    props: dict[Any, dict[str, Any]] = {}
    for text in texts:
        words = text.value.get(lang) if isinstance(text.value, dict) else translated(text.english, lang)
        if text.prop == "choices":
            props.setdefault(text.component, {}).setdefault("choices", []).append((words or text.english, text.value))
        elif words is not None:
            props.setdefault(text.component, {})[text.prop] = words
    return {component: gr.update(**p) for component, p in props.items()}


class LanguageEvents:
    """A page's `lang` setting changed (the menu, a link's `lang=`, the browser's language on load): its words in
    that language. Unnamed: no HTTP API endpoint (an API client reads English labels from `client.view_api()`)."""

    def __init__(self, app: Any):
        self.app, self.page = app, app.page

    @functools.cached_property
    def texts(self) -> list[Text]:
        """The layout's words, read at the first change of language: the page is built and wired then (the API tab
        makes its text once every endpoint is wired)."""
        return page_texts(self.page.demo)

    def relabel(self, lang: Any) -> dict[Any, Any]:
        return relabel(self.texts, lang)

    def model_words(self, lang: Any, session: Any) -> dict[Any, Any]:
        """The words about the session's model that a model change wrote (the headline, its description in the
        sidebar, the examples menus' first line), in `lang`; nothing when the model is gone."""
        lang = language(lang)
        try:
            loaded = get_model(session, self.app.ctx)
        except Exception:  # noqa: BLE001 - the page's own events say what went wrong with the model
            return {}
        examples, i = self.app.info_of(loaded).examples, self.page.inputs
        return {i.ex1: gr.update(choices=example_choices(examples, "sentence 1", lang)),
                i.ex2: gr.update(choices=example_choices(examples, "sentence 2", lang)),
                self.page.headline: headline(loaded, lang), self.page.model.model_md: describe(loaded, lang)}

    def tables(self, lang: Any, *shown: Any) -> list[Any]:
        """The page's tables with their headers in `lang` (a result's, or the layout's before a first result)."""
        return tables_in(lang, list(shown))

    def wire(self) -> None:
        page, lang = self.page, self.page.setting("lang")
        outputs = list(dict.fromkeys(text.component for text in page_texts(page.demo)))  # the same components
        quiet = dict(show_progress="hidden", api_visibility="private")
        model_outputs = [page.inputs.ex1, page.inputs.ex2, page.headline, page.model.model_md]
        # (a model change writes them in the language of the page's last Run: page.model_events)
        tables = [b for b in page.demo.blocks.values() if isinstance(b, gr.Dataframe) and b.visible is not False]
        lang.change(self.relabel, [lang], outputs, **quiet).then(self.model_words, [lang, page.session],
                                                                  model_outputs, **quiet).then(
            self.tables, [lang, *tables], tables, **quiet)

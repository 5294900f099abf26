"""The most common error messages of a Run in the page's language: a handler's exception becomes English words
(serving.errors.user_message); those listed here are read back by their pattern and said in the language of the
request (`reporting` finds it on the handler's form: RunForm.lang). A message not listed stays in English
(docs/languages.md, "Still in English")."""

from __future__ import annotations

import re
from typing import Any

from .words import ENGLISH, language, t

# (the English message as a pattern, its catalogue key; the pattern's named groups are the key's placeholders)
MESSAGES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Type a sentence first \(the input is empty\)\."), "errors.empty"),
    (re.compile(r"Sentence (?P<n>\d) gives no tokens for this model\."), "errors.no_tokens"),
    (re.compile(r"This page's session was lost: reload the page\."), "errors.session_lost"),
    (re.compile(r"head L(?P<layer>\d+) H(?P<head>\d+) does not exist in the (?P<kind>\w+) attention "
                r"\((?P<layers>\d+) layers x (?P<heads>\d+) heads\)"), "errors.no_head"),
)


def message_in(message: str, lang: Any = ENGLISH) -> str:
    """`message` in `lang` when it is one of MESSAGES, else as it is."""
    lang = language(lang)
    if lang == ENGLISH:
        return message
    for pattern, key in MESSAGES:
        if m := pattern.fullmatch(message):
            return t(key, lang, **m.groupdict())
    return message


def language_of(args: tuple[Any, ...]) -> str:
    """The page's language carried by a handler's arguments (a form with a `lang` field), else English."""
    return next((language(a.lang) for a in args if isinstance(getattr(a, "lang", None), str)), ENGLISH)

"""What every handler of the page shares: the flag that keeps an event out of the HTTP API, and `reporting`, which
runs a handler with its request's share of the cores, says its figures' and results' words in the language its form
carries (i18n.result_words) and turns an exception into a message on the status line.
`reporting` wraps methods of an object with `ctx` (an AppContext) and `status` (the status line component)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import gradio as gr

from ..i18n.result_words import updates_in
from ..i18n.messages import language_of, message_in
from .errors import escape_md, user_message

PRIVATE = dict(api_visibility="private")  # an event the page uses, not part of the HTTP API


def reporting(handler: Callable) -> Callable:
    """An `Events` handler computes with its share of the cores (explorer.app.serving.cores), and an exception in it
    becomes a warning and a message in the status line; nothing else changes (a handler that yields updates keeps
    those it yielded before the error)."""
    def failed(self: Any, err: Exception, args: tuple[Any, ...] = ()) -> dict:
        message = message_in(user_message(err), language_of(args))  # in the page's language, when a form says it
        gr.Warning(message)
        return {self.status: "⚠️ " + escape_md(message)}

    if inspect.isgeneratorfunction(handler):
        @functools.wraps(handler)
        def steps(self: Any, *args: Any, **kwargs: Any) -> Iterator[dict]:
            with self.ctx.cores.share() as use:
                try:
                    lang = language_of(args)
                    for update in handler(self, *args, **kwargs):
                        yield updates_in(update, lang)
                        use()  # resumed, perhaps on another worker thread: its torch threads are its own
                except Exception as err:  # noqa: BLE001 - every error becomes a message
                    yield failed(self, err, args)
        return steps

    @functools.wraps(handler)
    def run(self: Any, *args: Any, **kwargs: Any) -> dict:
        with self.ctx.cores.share():
            try:
                return updates_in(handler(self, *args, **kwargs), language_of(args))
            except Exception as err:  # noqa: BLE001 - every error becomes a message
                return failed(self, err, args)
    return run

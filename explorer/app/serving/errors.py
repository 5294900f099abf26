"""What the person using the app is told when something goes wrong.

`AppError` is a problem they can fix (its message is shown in the page); `user_message` turns any
exception into one short line (an unexpected error's traceback goes to the server log, never to the
page); `escape_md` makes any text safe for a Markdown box (HTML shown literally, Markdown inert).
"""

from __future__ import annotations

import html
import logging
import re
from typing import Any

from ...checkpoints import CheckpointError

log = logging.getLogger(__name__)
_MARKDOWN_SYNTAX = re.compile(r"([\\`*_{}\[\]()#+!|~])")


class AppError(Exception):
    """A problem the person using the app can fix; the message is shown in the page."""


def escape_md(text: Any) -> str:
    """Text for a Markdown box: HTML shown literally, Markdown syntax characters neutralised."""
    return _MARKDOWN_SYNTAX.sub(r"\\\1", html.escape(str(text), quote=False))


def user_message(err: BaseException) -> str:
    """A short message for the page; unexpected errors are logged with their traceback."""
    if isinstance(err, (AppError, CheckpointError)):
        return str(err)
    log.error("unexpected error in an app handler", exc_info=err)
    return f"Something went wrong ({type(err).__name__}). The details are in the server log."

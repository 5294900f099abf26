"""No uploads: the app takes no files, so Gradio's upload routes answer 403 instead of writing what they are sent.

Gradio serves `POST /gradio_api/upload` to any client whether or not the page has a file input, and keeps each file it
receives in its cache folder with no size limit unless one is set (measured on Gradio 6.31: one 10 MB POST left 10 MB,
and nothing deleted it), so one visitor could fill the server's disk; `/gradio_api/process_recording` (the screen
recorder of Gradio's footer) writes whatever it is sent to the temp folder too. No component of the page uploads
anything (the Circuit tab's file of pairs is read in the browser into a text box: explorer.app.tabs.circuit.tab),
so this ASGI middleware refuses both in words; every other request passes through untouched.
"""

from __future__ import annotations

from typing import Any

from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

REFUSED = ("/gradio_api/upload", "/gradio_api/process_recording")
MESSAGE = "This app takes no files: uploads are turned off."


class NoUploads:
    """ASGI middleware: a request to one of Gradio's upload routes gets 403 and MESSAGE, unread."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].rstrip("/").endswith(REFUSED):
            await PlainTextResponse(MESSAGE, status_code=403)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def upload_middleware() -> list[Any]:
    """The FastAPI `middleware` that installs the guard (for launch's `app_kwargs`)."""
    return [Middleware(NoUploads)]

"""A link too long to open gets a page in words, not a bare "Internal Server Error".

Gradio builds the page's root URL with httpx, which refuses a URL over 65,536 characters (measured: a GET of / with a
66,000-character URL answers 500). A copied link never gets there (link.length.fit_length), but a link made by hand or
cut and pasted may: this ASGI middleware answers such a request for the page itself with a short HTML page saying what
happened and linking to the app. Every other request passes through untouched.
"""

from __future__ import annotations

import html
from typing import Any

from starlette.middleware import Middleware
from starlette.types import ASGIApp, Receive, Scope, Send

MAX_URL = 65_536  # httpx.URL's limit: the longest URL Gradio's page route opens

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Transformer Explorer: this link is too long</title>
<style>body{{font-family:system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em;line-height:1.5}}</style>
</head><body>
<h1>This link is too long to open</h1>
<p>It is {length:,} characters long; the app opens links of at most {limit:,} characters. The sentence it carries
(<code>s1</code> or <code>s2</code>) is probably very long: a link made with the app's <b>Copy link</b> button is always
short enough, because it cuts the sentence to fit and says so.</p>
<p><a href="{home}">Open Transformer Explorer</a> and paste the sentence into the page instead.</p>
</body></html>
"""


def url_length(scope: Scope) -> int:
    """The length of the URL a request was made to, as Gradio rebuilds it (scheme, host, path, query)."""
    host = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"), "")
    path = scope.get("root_path", "") + scope.get("path", "")
    query = scope.get("query_string", b"")
    return len(f"{scope.get('scheme', 'http')}://{host}{path}") + (len(query) + 1 if query else 0)


class LongLinkGuard:
    """ASGI middleware: a GET of the page (`/`) whose URL is longer than MAX_URL gets `PAGE` (status 414)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "GET" or scope.get("path") != "/" or \
                url_length(scope) <= MAX_URL:
            await self.app(scope, receive, send)
            return
        home = html.escape(scope.get("root_path", "") + "/", quote=True)
        body = PAGE.format(length=url_length(scope), limit=MAX_URL, home=home).encode()
        await send({"type": "http.response.start", "status": 414,
                    "headers": [(b"content-type", b"text/html; charset=utf-8"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def guard_middleware() -> list[Any]:
    """The FastAPI `middleware` that installs the guard (for launch's `app_kwargs`)."""
    return [Middleware(LongLinkGuard)]

"""A link too long to open (explorer.app.link.guard): the page answers in words, with a link to the app, instead of
Gradio's bare "Internal Server Error"; every other request passes through. (httpx itself refuses such URLs, so the
middleware is driven with ASGI messages.)"""

from __future__ import annotations

import asyncio
from urllib.parse import quote

import pytest

from explorer.app.link.guard import MAX_URL, LongLinkGuard

pytestmark = pytest.mark.event_loop  # asyncio.run / its own Playwright: in a thread of its own


async def the_app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"the app"})


def get(path: str, query: str, method: str = "GET") -> tuple[int, str]:
    """(status, body) of one request through the guard in front of `the_app`."""
    scope = {"type": "http", "method": method, "path": path, "root_path": "", "scheme": "http",
             "query_string": query.encode(), "headers": [(b"host", b"127.0.0.1:7860")]}
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(LongLinkGuard(the_app)(scope, receive, send))
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:]).decode()


def test_a_link_too_long_gets_a_page_in_words():
    base = len("http://127.0.0.1:7860/?")
    assert get("/", "s1=" + "x" * (MAX_URL - base - 3)) == (200, "the app")  # exactly the longest that opens
    query = "s1=" + quote("日本語" * 3000) + "&tab=" + quote("<script>alert(1)</script>")  # 9,000 CJK characters
    status, text = get("/", query)
    assert status == 414 and "This link is too long to open" in text and f"at most {MAX_URL:,} characters" in text
    assert '<a href="/">Open Transformer Explorer</a>' in text and "Copy link" in text
    assert "<script>" not in text and "%E6" not in text  # nothing of the link is echoed


def test_other_requests_pass_through():
    long_query = "x=" + "y" * 70_000
    assert get("/gradio_api/info", long_query) == (200, "the app")  # not the page: untouched
    assert get("/", long_query, method="POST") == (200, "the app")  # not a GET

"""explorer.app.page.idle_timers: the page served at `/` starts its <head> with the script that stops Gradio's leaked
timer loops, ahead of the page's own scripts, with a right Content-Length; nothing else served is touched. Its
effect in Chromium (an idle page's trackers ask for no frame, a Run's timer still counts) is tested in
test_browser_lm.py."""

from __future__ import annotations

import gzip
import urllib.request

import gradio as gr
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from explorer.app.page.idle_timers import STOP_HIDDEN_TIMERS_JS, FirstInHead
from tests.app.browser import served

PAGE = "<!doctype html><html><head><script>window.first = 1;</script></head><body><head></head></body></html>"


async def page(request):
    return HTMLResponse(PAGE)


async def streamed(request):
    async def parts():
        yield PAGE[:24].encode()  # "<head>" split between two parts
        yield PAGE[24:].encode()

    return StreamingResponse(parts(), media_type="text/html")


async def zipped(request):
    return Response(gzip.compress(PAGE.encode()), media_type="text/html", headers={"content-encoding": "gzip"})


def client(front=page) -> TestClient:
    """`front` serves `/`; the same page is served at /other."""
    routes = [Route("/", front, methods=["GET", "HEAD"]), Route("/other", page),
              Route("/data", lambda r: JSONResponse({"head": "<head>"}))]
    return TestClient(Starlette(routes=routes, middleware=[Middleware(FirstInHead, html="<i>fix</i>")]))


def test_the_page_gets_the_html_first_in_its_head_once():
    response = client().get("/")
    assert response.text == PAGE.replace("<head>", "<head><i>fix</i>", 1)
    assert int(response.headers["content-length"]) == len(response.content)


def test_other_responses_pass_untouched():
    c = client()
    assert c.get("/other").text == PAGE
    assert c.get("/data").json() == {"head": "<head>"}
    assert c.head("/").text == ""


def test_a_page_sent_in_parts_is_joined_and_a_compressed_one_left_alone():
    whole = client(streamed).get("/")  # a body sent in parts reaches the client whole, with the script
    assert whole.text == PAGE.replace("<head>", "<head><i>fix</i>", 1)
    assert client(zipped).get("/").text == PAGE  # TestClient decodes gzip: the page as it was, without the script


def test_the_app_page_starts_with_the_fix(free_port):
    """Gradio's own page, launched as the app launches (launch_kwargs): the script comes before Gradio's."""
    with gr.Blocks() as demo:
        gr.Textbox()
    with served(demo, free_port()) as url, urllib.request.urlopen(url) as response:
        html = response.read().decode()
    assert html.index("<script>" + STOP_HIDDEN_TIMERS_JS) == html.index("<script")  # the page's first script

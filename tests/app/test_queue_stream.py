"""explorer.app.page.queue_stream in Chromium, against a scripted server (a fake `fetch` installed before the fix):
`close_stream` never reaches the page, whose stream stays open for it; the server's connection is let go and the
next join, once answered, gets a new one before the page reads that answer (so a join answered after the server
closed, the race, finds a stream); a stream ended without `close_stream` ends for the page. The order of every step is set by the script, not by timing."""

from __future__ import annotations

import pytest

from explorer.app.page.queue_stream import QUEUE_STREAM_JS
from tests.app.browser import new_page

pytestmark = pytest.mark.browser

# A server whose answers the test hands out: joins wait until `answerJoin(id)`; each /queue/data request opens a
# stream the test writes frames to (`send(frame)`) and ends (`end()`). `server.streams` counts the streams opened.
FAKE_SERVER = """
window.server = { streams: 0, joins: [], current: null };
window.fetch = (input) => {
  const url = typeof input === 'string' ? input : input.url;
  if (url.includes('/queue/join')) {
    return new Promise((resolve) => server.joins.push((id) => resolve(new Response(JSON.stringify({event_id: id}),
                                                                                {headers: {'content-type': 'application/json'}}))));
  }
  server.streams += 1;
  const encoder = new TextEncoder();
  let controller;
  const body = new ReadableStream({ start(c) { controller = c; } });
  server.current = { send: (m) => controller.enqueue(encoder.encode('data: ' + JSON.stringify(m) + '\\n\\n')),
                     end: () => controller.close() };
  return Promise.resolve(new Response(body, {headers: {'content-type': 'text/event-stream'}}));
};
window.answerJoin = (id) => server.joins.shift()(id);
"""
# The page's side, as Gradio's client does it: join through fetch, read the stream's messages in order.
CLIENT = """
window.read = [];
window.join = async () => (await (await fetch('/gradio_api/queue/join', {method: 'POST'})).json()).event_id;
window.listen = async () => {
  const response = await fetch(new Request('http://x/gradio_api/queue/data?session_hash=s'));
  const reader = response.body.getReader(), decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) { read.push('END'); return; }
    text += decoder.decode(value, { stream: true });
    const frames = text.split('\\n\\n'); text = frames.pop();
    for (const f of frames) { const m = JSON.parse(f.slice(5)); read.push(m.msg + (m.event_id ? ':' + m.event_id : '')); }
  }
};
"""


@pytest.fixture
def page(browser):
    context, page = new_page(browser)
    page.set_content("<html><head></head><body></body></html>")
    page.evaluate(f"() => {{ {FAKE_SERVER}\n{QUEUE_STREAM_JS}\n{CLIENT} }}")
    try:
        yield page
    finally:
        context.close()


def step(page, js: str) -> None:
    page.evaluate(f"async () => {{ {js} }}")


def test_a_close_is_never_handed_on_and_a_join_answered_after_it_gets_a_new_stream(page):
    """The race: B's join is in flight when the server, with nothing pending, closes the stream."""
    step(page, "window.a = join(); answerJoin('A'); await a; listen();")
    page.wait_for_function("() => server.streams === 1")
    step(page, "window.b = join();")  # B's join is sent; its answer is not back yet
    step(page, "server.current.send({msg: 'process_completed', event_id: 'A'}); "
               "server.current.send({msg: 'close_stream'}); server.current.end();")
    page.wait_for_function("() => read.length === 1")
    step(page, "answerJoin('B'); await b;")  # the page reads B's answer only once a stream is open again
    assert page.evaluate("() => server.streams") == 2
    step(page, "server.current.send({msg: 'heartbeat'}); server.current.send({msg: 'process_completed', event_id: 'B'});"
               " server.current.send({msg: 'close_stream'}); server.current.end();")
    page.wait_for_function("() => read.length === 3")
    assert page.evaluate("() => read") == ["process_completed:A", "heartbeat", "process_completed:B"]  # never closed


def test_an_idle_page_lets_the_connection_go_until_its_next_join(page):
    step(page, "window.a = join(); answerJoin('A'); await a; listen();")
    page.wait_for_function("() => server.streams === 1")
    step(page, "server.current.send({msg: 'process_completed', event_id: 'A'}); "
               "server.current.send({msg: 'close_stream'}); server.current.end();")
    page.wait_for_function("() => read.length === 1")
    assert page.evaluate("() => [server.streams, read]") == [1, ["process_completed:A"]]  # no stream held open
    step(page, "window.c = join(); answerJoin('C'); await c; server.current.send({msg: 'process_completed', "
               "event_id: 'C'});")
    page.wait_for_function("() => read.length === 2")
    assert page.evaluate("() => [server.streams, read]") == [2, ["process_completed:A", "process_completed:C"]]


def test_a_stream_ended_without_close_ends_for_the_page(page):
    """An error: the server ends the stream with no close_stream; the page sees it end, as without the fix."""
    step(page, "listen();")
    page.wait_for_function("() => server.streams === 1")
    step(page, "server.current.send({msg: 'unexpected_error', message: 'x'}); server.current.end();")
    page.wait_for_function("() => read.includes('END')")
    assert page.evaluate("() => read") == ["unexpected_error", "END"]


def test_only_the_close_message_is_held_back(page):
    """An answer whose data holds the words "close_stream" is an answer."""
    step(page, "listen();")
    page.wait_for_function("() => server.streams === 1")
    step(page, "server.current.send({msg: 'process_completed', event_id: 'D', output: {data: ['close_stream']}});")
    page.wait_for_function("() => read.length === 1")
    assert page.evaluate("() => read") == ["process_completed:D"]

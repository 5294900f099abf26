"""explorer.app.page.queue_stream in Chromium, against a scripted server (a fake `fetch` installed before the fix):
a `close_stream` that arrives while a join is in flight, or while a joined event has no answer yet, is held back and
the next stream is opened by the fix, so the page reads every answer on one stream that never closes early; with
nothing waiting, `close_stream` passes at once. The order of every step is set by the script, not by timing."""

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


def test_a_close_read_while_a_join_is_in_flight_is_held_and_the_next_stream_opened(page):
    step(page, "window.a = join(); answerJoin('A'); await a; listen();")
    page.wait_for_function("() => server.streams === 1")
    step(page, "window.b = join();")  # B's join is sent; its answer is not back yet
    step(page, "server.current.send({msg: 'process_completed', event_id: 'A'}); "
               "server.current.send({msg: 'close_stream'}); server.current.end();")
    page.wait_for_function("() => server.streams === 2")  # the fix opened the next stream; the page saw no close
    assert page.evaluate("() => read") == ["process_completed:A"]
    step(page, "answerJoin('B'); await b; server.current.send({msg: 'process_completed', event_id: 'B'}); "
               "server.current.send({msg: 'close_stream'}); server.current.end();")
    page.wait_for_function("() => read.includes('END')")
    assert page.evaluate("() => read") == ["process_completed:A", "process_completed:B", "close_stream", "END"]
    assert page.evaluate("() => server.streams") == 2


def test_a_close_read_while_an_answer_is_awaited_is_held(page):
    """B was joined (its id read) but its answer is still to come when the server closes the stream."""
    step(page, "window.a = join(); answerJoin('A'); await a; window.b = join(); answerJoin('B'); await b; listen();")
    step(page, "server.current.send({msg: 'process_completed', event_id: 'A'}); "
               "server.current.send({msg: 'close_stream'}); server.current.end();")
    page.wait_for_function("() => server.streams === 2")
    step(page, "server.current.send({msg: 'heartbeat'}); server.current.send({msg: 'process_completed', event_id: 'B'});"
               " server.current.send({msg: 'close_stream'}); server.current.end();")
    page.wait_for_function("() => read.includes('END')")
    assert page.evaluate("() => read") == ["process_completed:A", "heartbeat", "process_completed:B", "close_stream",
                                           "END"]


def test_an_answer_read_before_its_join_returns_counts_as_answered(page):
    """The server can answer an event before the page reads its join's answer: that event waits no more."""
    step(page, "listen(); window.c = join();")
    page.wait_for_function("() => server.streams === 1")
    step(page, "server.current.send({msg: 'process_completed', event_id: 'C'});")
    page.wait_for_function("() => read.length === 1")
    step(page, "answerJoin('C'); await c; server.current.send({msg: 'close_stream'}); server.current.end();")
    page.wait_for_function("() => read.includes('END')")
    assert page.evaluate("() => [read, server.streams]") == [["process_completed:C", "close_stream", "END"], 1]


def test_with_nothing_waiting_a_close_passes_at_once(page):
    step(page, "window.a = join(); answerJoin('A'); await a; listen();")
    page.wait_for_function("() => server.streams === 1")
    step(page, "server.current.send({msg: 'process_completed', event_id: 'A'}); "
               "server.current.send({msg: 'close_stream'}); server.current.end();")
    page.wait_for_function("() => read.includes('END')")
    assert page.evaluate("() => [read, server.streams]") == [["process_completed:A", "close_stream", "END"], 1]

"""A fix for a race in Gradio's (6.31) browser client that leaves a page waiting for ever for an event's answer.

The race. A page's events reach it over one stream per page (`/gradio_api/queue/data`). When the last pending event
of the page's session completes, the server sends `close_stream` and ends that stream; the client, on reading it,
marks its stream closed. After each join (`/gradio_api/queue/join`) the client opens a new stream only if it thinks
none is open. A join the server takes just after it sent `close_stream`, whose answer the page reads before it reads
`close_stream`, finds the stream "open", so no stream is opened; then `close_stream` is read and closes it. The
event's messages wait on the server for a stream nobody opens: the page waits with the server idle (seen as a
browser test waiting out its hang guard about once per full suite on a loaded 2-core machine, in a different test
each time; tests/hang_report.py showed the session's undelivered messages).

The fix. A script placed first in the page (by the same middleware as idle_timers) wraps `window.fetch`, which the
client calls for both, so that the client's stream, once open, never closes while the page lives: `close_stream` is
never handed on; when the server ends its stream the connection is let go, and the next one is opened by the script
as soon as a join is answered (before the client reads that answer), on the same stream the client reads. The server
ends a stream only when nothing of the page is pending, so no message waits on it longer than the join that brings
it. A stream the server ends without `close_stream` (an error) ends for the client as it would have. A second race
of the same kind was seen with a first version that still handed `close_stream` on when nothing seemed to wait.
"""

from __future__ import annotations

QUEUE_STREAM_JS = """(() => {
  const realFetch = window.fetch.bind(window);
  let reopen = null;  // of the client's stream (the last it opened): connect it to the server again if let go
  const urlOf = (input) => typeof input === 'string' ? input : (input instanceof URL ? input.href : input.url);
  const isClose = (frame) => frame.length < 300 && frame.split('\\n').some((line) => {
    if (!line.startsWith('data:')) return false;
    try { return JSON.parse(line.slice(5)).msg === 'close_stream'; } catch (e) { return false; }
  });
  const join = async (input, init) => {
    const response = await realFetch(input, init);
    if (reopen) await reopen();  // the event's messages may wait on the server for a stream: give it one first
    return response;
  };
  const stream = async (input, init) => {
    const request = new Request(input, init);
    const first = await realFetch(request.clone());
    if (!first.ok || !first.body) return first;
    let reader = first.body.getReader(), connecting = null, wake = null, text = '', closed = false;
    const connect = () => connecting || (connecting = realFetch(request.url, {
      headers: request.headers, signal: request.signal, credentials: request.credentials, cache: 'no-store',
    }).then((next) => { if (next.ok && next.body) reader = next.body.getReader(); })
      .finally(() => { connecting = null; if (wake) { wake(); wake = null; } }));
    reopen = async () => { if (!reader && !request.signal.aborted) await connect(); };
    const decoder = new TextDecoder(), encoder = new TextEncoder();
    const body = new ReadableStream({
      async pull(controller) {
        for (;;) {
          while (!reader) await new Promise((resolve) => { wake = resolve; });
          const { value, done } = await reader.read();
          if (done) {
            reader = null; text = '';
            if (closed) { closed = false; continue; }  // let go after close_stream: the next join reconnects
            controller.close(); return;  // ended without close_stream (an error): as Gradio would
          }
          text += decoder.decode(value, { stream: true });
          const frames = text.split('\\n\\n');
          text = frames.pop();
          const passed = frames.filter((frame) => !(isClose(frame) && (closed = true)));
          if (passed.length) { controller.enqueue(encoder.encode(passed.map((f) => f + '\\n\\n').join(''))); return; }
        }
      },
      cancel(reason) { return reader && reader.cancel(reason); },
    });
    return new Response(body, { status: first.status, statusText: first.statusText, headers: first.headers });
  };
  window.fetch = (input, init) => {
    const url = urlOf(input) || '';
    if (url.includes('/queue/join')) return join(input, init);
    if (url.includes('/queue/data')) return stream(input, init);
    return realFetch(input, init);
  };
})();"""

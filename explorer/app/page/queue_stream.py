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
client calls for both: it counts the joins in flight and the events joined whose `process_completed` the page has
not read; a `close_stream` read while any exist is held back, and once the server has ended that stream the wrapper
opens the next one itself and hands its messages on the same stream the client is reading, so the client never sees
its stream closed while it still waits for an answer. Every other request, and every other message, passes through
as it was. An event joined more than `STALE_S` ago no longer holds a stream open (a page left waiting that long has
other trouble, and a stream held for ever would take one of the browser's six connections to the server).
"""

from __future__ import annotations

STALE_S = 600

QUEUE_STREAM_JS = """(() => {
  const realFetch = window.fetch.bind(window);
  const waiting = new Map();  // event id -> when it was joined: its process_completed not read yet
  const early = new Set();    // event ids completed before their join's answer was read
  let joining = 0;            // joins sent whose answer (and event id) is not read yet
  const staleMs = STALE_MS;
  const urlOf = (input) => typeof input === 'string' ? input : (input instanceof URL ? input.href : input.url);
  const messageOf = (frame) => {
    for (const line of frame.split('\\n')) {
      if (line.startsWith('data:')) { try { return JSON.parse(line.slice(5)); } catch (e) { return null; } }
    }
    return null;
  };
  const stillWaiting = () => {
    const now = Date.now();
    for (const [id, since] of waiting) if (now - since > staleMs) waiting.delete(id);
    return joining > 0 || waiting.size > 0;
  };
  const join = async (input, init) => {
    joining += 1;
    try {
      const response = await realFetch(input, init);
      try {
        const id = (await response.clone().json() || {}).event_id;
        if (id && !early.delete(id)) waiting.set(id, Date.now());
      } catch (e) { /* not JSON: an error answer, no event joined */ }
      return response;
    } finally { joining -= 1; }
  };
  const stream = async (input, init) => {
    const request = new Request(input, init);
    const first = await realFetch(request.clone());
    if (!first.ok || !first.body) return first;
    let reader = first.body.getReader(), text = '', held = false;
    const decoder = new TextDecoder(), encoder = new TextEncoder();
    const body = new ReadableStream({
      async pull(controller) {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) {
            if (!held) { controller.close(); return; }
            held = false; text = '';
            const next = await realFetch(request.url, { headers: request.headers, signal: request.signal,
                                                        credentials: request.credentials, cache: 'no-store' });
            if (!next.ok || !next.body) { controller.close(); return; }
            reader = next.body.getReader();
            continue;
          }
          text += decoder.decode(value, { stream: true });
          const frames = text.split('\\n\\n');
          text = frames.pop();
          const passed = [];
          for (const frame of frames) {
            const message = messageOf(frame);
            if (message && message.msg === 'process_completed' && message.event_id
                && !waiting.delete(message.event_id)) early.add(message.event_id);
            if (message && message.msg === 'close_stream' && stillWaiting()) { held = true; continue; }
            passed.push(frame + '\\n\\n');
          }
          if (passed.length) { controller.enqueue(encoder.encode(passed.join(''))); return; }
        }
      },
      cancel(reason) { return reader.cancel(reason); },
    });
    return new Response(body, { status: first.status, statusText: first.statusText, headers: first.headers });
  };
  window.fetch = (input, init) => {
    const url = urlOf(input) || '';
    if (url.includes('/queue/join')) return join(input, init);
    if (url.includes('/queue/data')) return stream(input, init);
    return realFetch(input, init);
  };
})();""".replace("STALE_MS", str(STALE_S * 1000))

"""A watchdog for a race in Gradio's (6.31) browser client that can leave a page waiting for ever for an event's answer.

The race. A page's events reach it over one stream per session (`GET .../queue/data`). When the session's last
pending event completes, the server sends `close_stream` and ends the stream; the client marks its stream closed on
reading it. After each join (`POST .../queue/join`) the client opens a stream only if it thinks none is open. A join
the server takes just after it sent `close_stream`, whose answer the page reads before `close_stream`, opens none;
then `close_stream` closes the old one, and that event's messages wait in the session's queue on the server for a
stream nobody opens (docs/tests.md, "Gradio's queue-stream race").

The watchdog. A script placed first in the page (idle_timers.page_middleware) wraps `window.fetch`, which the client
calls for both, and only watches: each join's answer (read from a clone) adds its event id to a pending set; each
stream is teed, the client reading one branch untouched and in time, the script reading the other for the ids of
`process_completed` frames (they leave the set) and for the stream's end. When an event is still pending and no
stream has been open for a second, the script clicks a hidden button (`watchdog_button`) whose do-nothing event goes
through the queue: its join finds the client's stream closed, so the client opens one, and the server hands over
what waits. At most `TRIES` clicks per stuck event, a second apart; then a console warning. A page sets
`window.explorerStreamWatchdog = 'off'` to run without it (the test that shows the hang), and back to recover;
`window.explorerStreamWatchdogState()` says what it sees (streams open, events pending, clicks made, joins answered).
"""

from __future__ import annotations

import gradio as gr

BUTTON_ID = "stream-watchdog"
TRIES = 5  # clicks per stuck event: one reopens the stream; more only if a click's own join met the race again
FIRED = "explorer: stream watchdog reopened the queue stream"  # the console's line at each click (tests count them)

STREAM_WATCHDOG_JS = f"""(() => {{
  const realFetch = window.fetch;
  const pending = new Map();  // event id -> clicks made for it
  const done = new Set();  // ids seen completed (a completion may be read before its join's clone)
  let streams = 0, quietSince = performance.now(), timer = null, fired = 0, joins = 0;
  const trail = [];  // the last stream events, for a hang's report: [ms, what, detail]
  const note = (what, detail) => {{ trail.push([Math.round(performance.now()), what, detail]); trail.splice(0, trail.length - 80); }};
  window.explorerStreamWatchdogState = () => ({{streams, pending: pending.size, fired, joins}});  // read by tests
  window.explorerStreamTrail = () => trail.map((entry) => entry.join(' ')).join('\\n');  // read by tests' hang report
  const urlOf = (input) => typeof input === 'string' ? input : (input instanceof URL ? input.href : input.url);
  const arm = () => {{ if (!timer && pending.size && !streams) timer = setTimeout(check, 1000); }};
  function check() {{
    timer = null;
    if (streams || !pending.size) return;
    if (window.explorerStreamWatchdog === 'off') {{ timer = setTimeout(check, 1000); return; }}  // a test's switch
    const wait = 1000 - (performance.now() - quietSince);
    if (wait > 0) {{ timer = setTimeout(check, wait); return; }}
    const stuck = [...pending].filter(([, tries]) => tries < {TRIES});
    const button = document.getElementById('{BUTTON_ID}');
    if (!stuck.length || !button) {{
      console.warn('explorer: events waiting with no queue stream open', [...pending.keys()]);
      pending.clear(); return;
    }}
    for (const [id, tries] of stuck) pending.set(id, tries + 1);
    fired += 1;
    console.info('{FIRED}');
    button.click();  // its join finds no stream open: the client opens one, which brings what waits
    quietSince = performance.now();
    arm();
  }}
  const joined = (response) => response.clone().json().then((answer) => {{
    const id = answer && answer.event_id;
    joins += 1;
    note('joined', String(id).slice(0, 8));
    if (id && !done.delete(id)) {{ pending.set(id, 0); arm(); }}
  }}).catch(() => {{}});
  // A completion starts a frame: `data: {{"msg":"process_completed","event_id":"..."` (orjson, compact). Inside an
  // event's data the same words are escaped (\\"msg\\"), so they never match; a tail is kept for a frame split in two.
  const completed = /data: ?\\{{"msg": ?"process_completed", ?"event_id": ?"([^"]+)"/g;
  const frames = /data: ?\\{{"msg": ?"(\\w+)"(?:, ?"event_id": ?"([^"]{{0,8}}))?/g;  // every frame's kind, for the trail
  const watch = async (reader) => {{
    const decoder = new TextDecoder();
    let tail = '';
    try {{
      for (;;) {{
        const {{ value, done: end }} = await reader.read();
        if (end) break;
        const text = tail + decoder.decode(value, {{ stream: true }});
        for (const match of text.matchAll(completed)) if (!pending.delete(match[1])) done.add(match[1]);
        for (const match of text.matchAll(frames))  // ending in this chunk: not noted before
          if (match.index + match[0].length > tail.length) note('frame', match.slice(1).join(' '));
        if (done.size > 100) done.clear();  // ids no join of this page named: never waited for
        tail = text.slice(-200);
      }}
    }} catch (error) {{ note('stream error', error && error.name); }}  // the client aborts after close_stream: an ordinary end
    note('stream end', streams - 1);
    streams -= 1; quietSince = performance.now(); arm();
  }};
  const stream = async (input, init) => {{
    streams += 1;
    note('stream open', streams);
    let response;
    // A stream that fails, is refused or is aborted before its answer keeps the pending events pending: an abort can
    // come from the race itself (close_stream read just then), and for a truly broken one the clicks are bounded.
    try {{ response = await realFetch(input, init); }} catch (error) {{
      note('stream refused', error && error.name);
      streams -= 1; quietSince = performance.now(); arm(); throw error;
    }}
    if (!response.ok || !response.body) {{ streams -= 1; quietSince = performance.now(); arm(); return response; }}
    const [theirs, mine] = response.body.tee();  // both branches get each chunk as it arrives
    watch(mine.getReader());
    return new Response(theirs, {{ status: response.status, statusText: response.statusText, headers: response.headers }});
  }};
  window.fetch = (input, init) => {{
    const url = urlOf(input) || '';
    if (url.includes('/queue/data')) return stream(input, init);
    const answer = realFetch(input, init);
    if (url.includes('/queue/join')) {{
      note('join', String(init && init.body).match(/"fn_index": ?(\\d+)/)?.[1]);
      answer.then(joined, () => {{}});
    }}
    return answer;
  }};
}})();"""

# The button is clicked by the script only: out of the layout, the accessibility tree and the tab order (it must stay
# in the DOM to be clicked, so it is hidden by CSS, not `visible=False`); MARK_JS adds the attributes that say so.
CSS = f"\n#{BUTTON_ID} {{display: none !important}}\n"
MARK_JS = f"""(() => {{
  const button = document.getElementById('{BUTTON_ID}');
  if (button) {{ button.setAttribute('aria-hidden', 'true'); button.tabIndex = -1; }}
}})();"""


def _nothing() -> None:
    """The watchdog button's event: nothing; only its passage through the queue matters."""


def watchdog_button() -> gr.Button:
    """The hidden button the watchdog clicks (inside the page's gr.Blocks), its queued do-nothing event wired: no
    inputs, no outputs, no progress shown, each click an event, not part of the HTTP API."""
    button = gr.Button("", elem_id=BUTTON_ID, min_width=0, scale=0)
    # "multiple": a click while an earlier one's event waits (stuck as well) still joins; Gradio's default drops it.
    button.click(_nothing, None, None, queue=True, show_progress="hidden", trigger_mode="multiple",
                 api_visibility="private")
    return button

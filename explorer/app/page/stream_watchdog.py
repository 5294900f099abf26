"""The page's queue stream kept whole: two faults of Gradio's (6.31) browser client that leave a page waiting for ever
or drawing nothing, worked around by a script placed first in the page (idle_timers.page_middleware) that wraps
`window.fetch`, which the client calls for its joins (`POST .../queue/join`) and its stream (`GET .../queue/data`).

1. A lost stream. A page's events reach it over one stream per session. When the session's last pending event
completes, the server sends `close_stream` and ends the stream; the client marks its stream closed on reading it.
After each join the client opens a stream only if it thinks none is open. A join the server takes just after it sent
`close_stream`, whose answer the page reads before `close_stream`, opens none; then `close_stream` closes the old
one, and that event's messages wait on the server for a stream nobody opens (docs/tests.md). The watchdog: each
join's answer (read from a clone) adds its event id to a pending set, each `process_completed` frame takes it out;
when an event is still pending and no stream has been open for a second, the script clicks a hidden button
(`watchdog_button`) whose do-nothing event goes through the queue: its join finds the client's stream closed, so the
client opens one, and the server hands over what waits. At most `TRIES` clicks per stuck event, a second apart.

2. Updates lost in place. A generator's event (the page's Run: its updates, then a last "keep" update so that its
closing message carries no second copy of every figure) sends its later updates as diffs, and the client applies
each diff *in place* to the objects of the update before. Frames of an event read before its join answer (the server
answered the Run before the page read the answer: seen under load) are kept by the client and replayed at once, so
the Run's updates become "keep" before the page draws them: no heatmap, empty tables (the load-time hang of
docs/tests.md). The script passes each stream on whole frame by frame and rewrites a generator's diff that reaches
inside a value into the whole value it makes (`["replace", [], value]`, kept per event from the frames before), so
the client makes a new object and never changes one the page was given.

Switches for the tests: `window.explorerStreamWatchdog = 'off'` (no clicks), `window.explorerStreamWhole = 'off'` (no
rewrite); `window.explorerStreamWatchdogState()` says what it sees (streams open, events pending, clicks, joins) and
`window.explorerStreamTrail()` its last 400 joins, streams and frames (a hang's report prints both; 80 were too few
to show when a hung Run's join was answered, four Runs back).
"""

from __future__ import annotations

import gradio as gr

BUTTON_ID = "stream-watchdog"
TRIES = 5  # clicks per stuck event: one reopens the stream; more only if a click's own join met the race again
FIRED = "explorer: stream watchdog reopened the queue stream"  # the console's line at each click (tests count them)

STREAM_WATCHDOG_JS = """(() => {
  const realFetch = window.fetch;
  const pending = new Map();  // event id -> clicks made for it
  const done = new Set();  // ids seen completed (a completion may be read before its join's answer)
  let streams = 0, quietSince = performance.now(), timer = null, fired = 0, joins = 0;
  const trail = [];  // the last stream events, for a hang's report: [ms, what, detail]
  const note = (what, detail) => { trail.push([Math.round(performance.now()), what, detail]); trail.splice(0, trail.length - 400); };
  window.explorerStreamWatchdogState = () => ({streams, pending: pending.size, fired, joins});  // read by tests
  window.explorerStreamTrail = () => trail.map((entry) => entry.join(' ')).join('\\n');  // read by tests' hang report
  const urlOf = (input) => typeof input === 'string' ? input : (input instanceof URL ? input.href : input.url);
  const arm = () => { if (!timer && pending.size && !streams) timer = setTimeout(check, 1000); };
  function check() {
    timer = null;
    if (streams || !pending.size) return;
    if (window.explorerStreamWatchdog === 'off') { timer = setTimeout(check, 1000); return; }  // a test's switch
    const wait = 1000 - (performance.now() - quietSince);
    if (wait > 0) { timer = setTimeout(check, wait); return; }
    const stuck = [...pending].filter(([, tries]) => tries < TRIES);
    const button = document.getElementById('BUTTON_ID');
    if (!stuck.length || !button) {
      console.warn('explorer: events waiting with no queue stream open', [...pending.keys()]);
      pending.clear(); return;
    }
    for (const [id, tries] of stuck) pending.set(id, tries + 1);
    fired += 1;
    console.info('FIRED');
    button.click();  // its join finds no stream open: the client opens one, which brings what waits
    quietSince = performance.now();
    arm();
  }
  // A frame is `data: {"msg": "...", "event_id": "..."...}` and a blank line (orjson: msg first). Inside an event's
  // data the same words are escaped (\\"msg\\"), so only a frame's own head matches.
  const head = /^data: ?\\{"msg": ?"(\\w+)"(?:, ?"event_id": ?"([^"]+)")?/;
  const joined = (response) => response.clone().json().then((answer) => {
    const id = answer && answer.event_id;
    joins += 1;
    note('joined', String(id).slice(0, 8));
    if (id && !done.delete(id)) { pending.set(id, 0); arm(); }
  }).catch(() => {});
  // Gradio's client applies a generator's later updates (diffs) to the objects of its earlier ones in place, objects
  // the page may not have drawn yet when the frames come together: a value followed by a no-op update ("keep") is
  // then drawn as nothing. Each such diff is sent on as the whole value it makes (a new object), kept per event.
  const events = new Map();  // event id -> {first: its first update's frame, later: edits since, values: parsed or null}
  const apply = (value, [action, path, change]) => {
    if (!path.length) return action === 'replace' ? change : value + change;
    let parent = value;
    for (const key of path.slice(0, -1)) parent = parent[key];
    const key = path[path.length - 1];
    if (action === 'replace') parent[key] = change;
    else if (action === 'append') parent[key] += change;
    else if (action === 'add') Array.isArray(parent) ? parent.splice(Number(key), 0, change) : (parent[key] = change);
    else if (action === 'delete') Array.isArray(parent) ? parent.splice(Number(key), 1) : delete parent[key];
    return value;
  };
  const dataOf = (frame) => {
    const message = JSON.parse(frame.slice(frame.indexOf('{')));
    return [message, message.success && message.output && Array.isArray(message.output.data) ? message.output.data : null];
  };
  // A diff that makes a value a bare "keep" (every key deleted, `__type__: update` added) is that whole value: no need
  // to know the value before (the first update may be megabytes: it is parsed only when a diff needs it).
  const KEEP = { __type__: 'update' };
  const keeps = (edits) => edits.some(([action]) => action === 'add') && edits.every(([action, path, change]) =>
    path.length === 1 && (action === 'delete' || (action === 'add' && path[0] === '__type__' && change === 'update')));
  const whole = (frame, kind, id) => {
    if (kind === 'process_completed') events.delete(id);
    if (kind !== 'process_generating' || !id || window.explorerStreamWhole === 'off') return frame;
    const event = events.get(id);
    if (!event) { events.set(id, { first: frame, later: [], values: null }); return frame; }
    const [message, data] = dataOf(frame);
    if (!data) return frame;
    const edits = data.slice(), inside = edits.map((e) => e.some(([, path]) => path.length));
    event.later.push(edits);
    if (event.values || edits.some((e, i) => inside[i] && !keeps(e))) {  // the values are needed: parse, bring up to date
      event.values = event.values || dataOf(event.first)[1];
      event.later.forEach((earlier) => earlier.forEach((e, i) => { event.values[i] = e.reduce(apply, event.values[i]); }));
      event.later = [];
    }
    edits.forEach((e, i) => { if (inside[i]) data[i] = [['replace', [], keeps(e) ? KEEP : event.values[i]]]; });
    return inside.some(Boolean) ? 'data: ' + JSON.stringify(message) + '\\n\\n' : frame;
  };
  // The client reads each stream through this one, whole frames in order, as they come.
  const stream = async (input, init) => {
    streams += 1;
    note('stream open', streams);
    let response;
    // A stream that fails, is refused or is aborted before its answer keeps the pending events pending: an abort can
    // come from the race itself (close_stream read just then), and for a truly broken one the clicks are bounded.
    try { response = await realFetch(input, init); } catch (error) {
      note('stream refused', error && error.name);
      streams -= 1; quietSince = performance.now(); arm(); throw error;
    }
    if (!response.ok || !response.body) { streams -= 1; quietSince = performance.now(); arm(); return response; }
    const reader = response.body.getReader(), decoder = new TextDecoder(), encoder = new TextEncoder();
    let tail = '', finished = false;
    const finish = (how) => {
      if (finished) return;
      finished = true;
      note('stream end', how);
      streams -= 1; quietSince = performance.now(); arm();
    };
    const body = new ReadableStream({
      async pull(out) {  // enqueues something or ends: a pull that gives nothing is not called again
        try {
          let text = '';
          for (;;) {
            const { value, done: end } = await reader.read();
            if (end) {
              tail += decoder.decode();
              if (tail) out.enqueue(encoder.encode(tail));
              out.close(); finish('closed'); return;
            }
            text = decoder.decode(value, { stream: true });
            if ((tail.slice(-1) + text).includes('\\n\\n')) break;
            tail += text;  // a long frame: read on
          }
          const frames = (tail + text).split('\\n\\n');
          tail = frames.pop();
          const passed = frames.map((frame) => {
            const [, kind, id] = frame.match(head) || [];
            if (kind) note('frame', kind + ' ' + (id || '').slice(0, 8));
            if (kind === 'process_completed' && id && !pending.delete(id)) done.add(id);
            try { return whole(frame + '\\n\\n', kind, id); } catch (error) { return frame + '\\n\\n'; }
          });
          if (done.size > 100) done.clear();  // ids no join of this page named: never waited for
          if (passed.length) out.enqueue(encoder.encode(passed.join('')));
        } catch (error) {  // the client aborts a stream after its close_stream: an ordinary end
          out.error(error); finish(error && error.name);
        }
      },
      cancel(reason) { reader.cancel(reason).catch(() => {}); finish('cancelled'); },
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
  window.fetch = (input, init) => {
    const url = urlOf(input) || '';
    if (url.includes('/queue/data')) return stream(input, init);
    const answer = realFetch(input, init);
    if (url.includes('/queue/join')) {
      note('join', String(init && init.body).match(/"fn_index": ?(\\d+)/)?.[1]);
      answer.then(joined, () => {});
    }
    return answer;
  };
})();""".replace("BUTTON_ID", BUTTON_ID).replace("TRIES", str(TRIES)).replace("FIRED", FIRED)

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

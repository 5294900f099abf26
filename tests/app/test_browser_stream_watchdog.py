"""explorer.app.page.stream_watchdog on the served default app: a page left in the state Gradio's queue-stream race
leaves it in (its stream closed by `close_stream` while its Run's messages wait on the server) waits for ever without
the watchdog, and with it gets its Run. The state is made, not waited for: Playwright answers the page's next
`/queue/data` request with a lone `close_stream` (the server never sees that request), later streams reach the
server. The watchdog's button is hidden from the layout, the keyboard and screen readers."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from explorer.app.page.stream_watchdog import BUTTON_ID, STREAM_WATCHDOG_JS
from tests.app.browser import IDLE_JS, opened, record_runs
from tests.hang import until
from tests.hang_report import WATCHDOG_FIRED

pytestmark = pytest.mark.browser

CLOSED = 'data: {"msg":"close_stream"}\n\n'
STUCK_MS = 2000  # how long the page without the watchdog is seen waiting (an absence: any wait shows it, keep it short)
BUTTON = f"""() => {{ const b = document.getElementById('{BUTTON_ID}');
  return b && [b.getAttribute('aria-hidden'), b.tabIndex, getComputedStyle(b).display]; }}"""
STATE = "() => window.explorerStreamWatchdogState()"


def close_streams(page) -> dict:
    """From now on, while `blocked["on"]`, each queue stream the page opens gets a lone `close_stream` (the server
    never sees the request); then they reach the server. `blocked["closed"]` counts the streams closed so."""
    blocked = {"on": True, "closed": 0}

    def answer(route) -> None:
        if blocked["on"]:
            blocked["closed"] += 1
            route.fulfill(status=200, headers={"content-type": "text/event-stream"}, body=CLOSED)
        else:
            route.continue_()

    page.route(re.compile(r"/queue/data\?"), answer)
    return blocked


def test_a_page_whose_stream_was_closed_gets_its_run_through_the_watchdog(default_app, browser, monkeypatch):
    with opened(default_app, browser) as (page, errors):
        assert page.evaluate(BUTTON) == ["true", -1, "none"]  # in the DOM, out of sight, focus and the a11y tree
        before = page.evaluate(STATE)
        page.evaluate("() => { window.explorerStreamWatchdog = 'off'; }")
        blocked = close_streams(page)
        # A stream may be open, idle (Gradio opens one for a join answered after its event's end was read): one
        # queued event's end ends it (nothing else pending), and every stream opened since gets only close_stream.
        page.evaluate(f"() => document.getElementById('{BUTTON_ID}').click()")
        page.wait_for_function(f"() => {{ const s = ({STATE})(); return s.joins > {before['joins']} && !s.streams; }}")
        runs = record_runs(monkeypatch)
        page.locator("#run").click()
        runs.wait_for(lambda run: True, "after the click")  # computed: its messages wait on the server
        page.wait_for_function(f"() => !({IDLE_JS})()")  # the Run's timer shows: the page waits for it
        with pytest.raises(PlaywrightTimeout):  # without the watchdog it would wait for ever
            page.wait_for_function(IDLE_JS, timeout=STUCK_MS)
        assert blocked["closed"] >= 1 and page.evaluate(STATE)["fired"] == before["fired"]

        blocked["on"] = False
        fired = len(WATCHDOG_FIRED)
        page.evaluate("() => { window.explorerStreamWatchdog = 'on'; }")
        page.wait_for_function(IDLE_JS)  # the Run's last update applied
        assert page.evaluate(STATE)["fired"] == before["fired"] + 1  # one click, said in the console:
        assert len(WATCHDOG_FIRED) == fired + 1
        assert page.locator("#output-summary").inner_text().strip()  # the Run's outputs, drawn
    assert errors == [], errors


def page_run_fn_indexes(url: str) -> set[int]:
    """The fn_index of each of the page's Runs (its generator events `analyze_page*`: the Run button, the load's, a
    model change's, ...) on the app at `url`: their joins name them."""
    import httpx

    dependencies = httpx.get(f"{url.rstrip('/')}/config").json()["dependencies"]
    return {d["id"] for d in dependencies if str(d.get("api_name")).startswith("analyze_page")
            and d["types"]["generator"]}


KEEP_OPEN = "a pending event that never ends: the test's"


def hold_the_runs_answer(page, url: str) -> dict:
    """The page's Run's join answer reaches it only once the server has sent the Run's last message on the page's
    stream (its event no longer pending): the page reads the Run's updates before it knows the Run, the order that met
    under load left its figures empty (Gradio's client keeps such updates and replays them at once).

    The page's stream must stay open for that: Gradio closes a session's stream when its last pending event ends,
    and the page opens one only on a join answer, so a stream closed just before the Run's join would never carry
    the Run's messages (the held answer waited out the hang guard so). From the page's first join on, the session
    holds one more pending event id (`KEEP_OPEN`, never run), so its stream is never closed; and the Run's join waits
    until every earlier event of the page has ended, so each try takes the order that used to hang (without
    `KEEP_OPEN` it hangs every time). `held["session"]` names the session, for `release` to take it back."""
    from tests.hang_report import SERVED

    queue = next(d for d in SERVED if d.local_url == url)._queue
    runs, held = page_run_fn_indexes(url), {"runs": 0, "session": None, "queue": queue}

    def answer(route) -> None:
        body = json.loads(route.request.post_data or "{}")
        if body.get("fn_index") in runs:  # the order that closed the stream: every earlier event ended first
            until(lambda: not queue.pending_event_ids_session.get(body["session_hash"], set()) - {KEEP_OPEN},
                  "the page's earlier events to end")
        response = route.fetch()  # the server has the event pending: the session's set exists
        if held["session"] is None:
            held["session"] = body["session_hash"]
            queue.pending_event_ids_session.setdefault(held["session"], set()).add(KEEP_OPEN)
            held["first"] = body.get("fn_index") not in runs
        if body.get("fn_index") in runs:
            event = response.json()["event_id"]
            until(lambda: not any(event in ids for ids in list(queue.pending_event_ids_session.values())),
                  "the Run's last message to be sent")
            held["runs"] += 1
        route.fulfill(response=response)

    page.route(re.compile(r"/queue/join"), answer)
    return held


def release(held: dict) -> None:
    """Take back the session's never-ending event id: nothing of the test is left in the shared app's queue."""
    if held["session"] is not None:
        held["queue"].pending_event_ids_session.get(held["session"], set()).discard(KEEP_OPEN)


TOKENS_SHOWN = "() => document.querySelectorAll('#tokens tbody tr').length"


@pytest.mark.parametrize("whole", ["on", "off"])
def test_a_runs_updates_read_before_its_join_answer_are_all_drawn(default_app, browser, whole):
    """With the page's rewrite of a generator's later updates into whole values (stream_watchdog, on), a Run whose
    updates come before its join answer draws its heatmap and its tables; without it (off) Gradio's client turns the
    Run's first update into the last one's "keep" before the page applies it: no heatmap, no token row."""
    from tests.app.browser import FIRST_RUN_JS, new_page

    context, page = new_page(browser, viewport={"width": 1280, "height": 800})
    held = hold_the_runs_answer(page, default_app)
    try:
        page.add_init_script(f"window.explorerStreamWhole = '{whole}'")
        page.goto(default_app)
        page.wait_for_function(FIRST_RUN_JS)  # the Run's text is written (a string: never changed in place)
        assert held["runs"] == 1 and held["first"] is True  # another event's join opened the stream first
        if whole == "on":
            page.wait_for_selector("#head-plot .js-plotly-plot")
            assert page.evaluate(TOKENS_SHOWN) > 0
        else:
            assert page.evaluate(TOKENS_SHOWN) == 0
    finally:
        release(held)
        context.close()


# Gradio 6.31's client (@gradio/client, minified names kept) applying a generator's diffs: Tt/Et/Dt.
GRADIO_DIFFS = """function Dt(e,t,n,r){if(t.length===0){if(n==='replace')return r;if(n==='append')return e+r;throw Error(n)}
let i=e;for(let e=0;e<t.length-1;e++)i=i[t[e]];let a=t[t.length-1];switch(n){case'replace':i[a]=r;break;
case'append':i[a]+=r;break;case'add':Array.isArray(i)?i.splice(Number(a),0,r):i[a]=r;break;
case'delete':Array.isArray(i)?i.splice(Number(a),1):delete i[a];break}return e}
function Et(e,t){return t.forEach(([t,n,r])=>{e=Dt(e,n,t,r)}),e}
function Tt(e,t,n){e[t]?n.data.forEach((r,i)=>{let a=Et(i<e[t].length?e[t][i]:null,r);e[t][i]=a,n.data[i]=a}):
(e[t]=[],n.data.forEach((n,r)=>{e[t][r]=n}))}"""
# A Run-like event: figures and a table, then a "keep" of them and a new second figure, then one more change.
FRAMES = [
    {"msg": "process_generating", "event_id": "e1", "success": True, "output": {"data": [
        {"type": "plotly", "plot": "P1"}, {"headers": ["a"], "data": [[1]]}, "summary", {"type": "plotly", "plot": "Q1"}]}},
    {"msg": "process_generating", "event_id": "e1", "success": True, "output": {"data": [
        [["delete", ["type"], None], ["delete", ["plot"], None], ["add", ["__type__"], "update"]],
        [["delete", ["headers"], None], ["delete", ["data"], None], ["add", ["__type__"], "update"]],
        [["replace", [], {"__type__": "update"}]], [["replace", ["plot"], "Q2"]]]}},
    {"msg": "process_generating", "event_id": "e1", "success": True, "output": {"data": [
        [], [], [], [["replace", ["plot"], "Q3"]]]}},
    {"msg": "process_completed", "event_id": "e1", "success": True, "output": {"data": [{"__type__": "update"}] * 4}},
    {"msg": "close_stream"},
]


def test_the_page_passes_a_generators_diffs_on_as_whole_values(browser):
    """What each update of a generator's event is once Gradio's client has read them all back to back (as it does for
    frames read before their event's join answer): through the page's stream (in chunks of 16 bytes),
    each update stays what it was sent as; the frames as sent end with the first update turned into the later ones."""
    from tests.app.browser import new_page

    context, page = new_page(browser)
    try:
        text = "".join(f"data: {json.dumps(f)}\n\n" for f in FRAMES)
        read = page.evaluate(f"""async ([text, script]) => {{
          {GRADIO_DIFFS}
          // in chunks of 16 bytes: most hold no frame's end (a long frame comes so)
          window.fetch = async () => new Response(new ReadableStream({{ start(c) {{
            for (let at = 0; at < text.length; at += 16) c.enqueue(new TextEncoder().encode(text.slice(at, at + 16)));
            c.close(); }} }}));
          const raw = await (await window.fetch('/queue/data')).text();
          eval(script);  // the page's script wraps fetch
          const passed = await (await window.fetch('/gradio_api/queue/data?session_hash=s')).text();
          return [raw, passed].map((stream) => {{
            const diffs = {{}}, updates = [];
            for (const frame of stream.split('\\n\\n').filter(Boolean)) {{
              const message = JSON.parse(frame.slice(frame.indexOf('{{')));
              if (message.msg === 'process_generating') {{ Tt(diffs, 'e1', message.output); updates.push(message.output.data); }}
            }}
            return JSON.stringify(updates);
          }});
        }}""", [text, STREAM_WATCHDOG_JS])
        keep = {"__type__": "update"}
        plot = {"type": "plotly", "plot": "Q3"}
        assert json.loads(read[0])[0] == [keep, keep, "summary", plot]  # Gradio's own: the first update is lost
        assert json.loads(read[1]) == [FRAMES[0]["output"]["data"], [keep, keep, keep, {"type": "plotly", "plot": "Q2"}],
                                       [keep, keep, keep, plot]]
    finally:
        context.close()

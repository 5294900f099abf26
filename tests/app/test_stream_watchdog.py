"""explorer.app.page.stream_watchdog as served: its script is in the page's first script, before Gradio's client, and
the page holds its hidden button, whose one event goes through the queue, shows nothing, changes nothing and is not
part of the HTTP API. What it does in Chromium: test_browser_stream_watchdog.py."""

from __future__ import annotations

import json
import urllib.request

from explorer.app.page.stream_watchdog import BUTTON_ID, CSS, STREAM_WATCHDOG_JS
from tests.hang import HANG_S


def read(url: str) -> str:
    with urllib.request.urlopen(url, timeout=HANG_S) as response:
        return response.read().decode()


def test_the_page_carries_the_watchdog_and_its_hidden_button(default_app):
    html = read(default_app)
    first = html.index("<script")
    assert first < html.index(STREAM_WATCHDOG_JS) < html.index("</script>", first)  # in the first script
    config = json.loads(read(default_app.rstrip("/") + "/config"))
    [button] = [c for c in config["components"] if c["props"].get("elem_id") == BUTTON_ID]
    assert button["type"] == "button" and button["props"].get("visible") is not False  # in the DOM: CSS hides it
    [event] = [d for d in config["dependencies"] if [button["id"], "click"] in d["targets"]]
    assert event["queue"] is not False and event["outputs"] == [] and event["inputs"] == []
    assert event["show_progress"] == "hidden" and event["api_visibility"] == "private"
    assert event["trigger_mode"] == "multiple"  # a click while an earlier one waits, stuck too, still joins
    assert CSS.strip() in config["css"]

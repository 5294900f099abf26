"""The page's followers of a Run as one event (explorer.app.page.after_run): each follower gets its own inputs, an
update stands against a later follower's gr.skip(), an error in one becomes the status line's message while the
others still run, and the built page follows each of its Runs with exactly one such event."""

from __future__ import annotations

import gradio as gr
import pytest

from explorer.app.page.after_run import AfterRun
from explorer.app.serving.errors import AppError


@pytest.fixture
def parts():
    with gr.Blocks():
        status, a, b, text, quiet_text = gr.Markdown(), gr.Textbox(), gr.Textbox(), gr.Markdown(), gr.Markdown()
    return status, a, b, text, quiet_text


def test_each_follower_gets_its_own_inputs_and_an_update_stands_against_a_later_skip(parts):
    status, a, b, text, quiet_text = parts
    after = AfterRun(status)
    after.add(lambda x, y: {status: f"{x}+{y}", a: x}, [a, b], [status, a, text])
    after.add(lambda y: {status: gr.skip(), b: y * 2}, [b], [status, b, quiet_text], quiet=True)
    assert after.inputs == [a, b, b] and after.outputs == [status, a, text, b, quiet_text]
    assert after.run("1", "2", "3") == {status: "1+2", a: "1", b: "33"}
    assert after.progress == [text]  # the first text of each follower that shows progress, the status line aside


def test_an_error_in_one_follower_is_the_status_and_the_others_still_run(parts):
    status, a, b, *_ = parts
    after = AfterRun(status)

    def broken(x):
        raise AppError("no such head")

    after.add(broken, [a], [status])
    after.add(lambda y: {b: y}, [b], [b])
    updates = after.run("1", "2")
    assert updates[b] == "2" and "no such head" in updates[status] and updates[status].startswith("⚠️")


def test_a_follower_added_after_the_runs_are_wired_is_refused(parts):
    status, a, *_ = parts
    after = AfterRun(status)
    with gr.Blocks():
        button = gr.Button()
        after.then(button.click(lambda: None))
    with pytest.raises(AssertionError, match="would miss them"):
        after.add(lambda x: {}, [a], [a])


def test_the_page_follows_each_run_with_one_event(page_events):
    ev = page_events
    fns = list(ev.page.demo.fns.values())
    followers = [fn for fn in fns if (fn.name or "").startswith("after_run")]
    assert len(followers) == len(ev.runs) and len(ev.after_run.followers) == 5 + (ev.page.lesson is not None)
    for fn in followers:  # every follower's own inputs and outputs, the shown tab's summary greyed while it runs
        assert len(fn.inputs) == len(ev.after_run.inputs) and fn.show_progress_on

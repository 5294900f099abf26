"""explorer.app.page.gradio_fixes: a component that is left unchanged (skipped) and then given a value, again and
again, keeps one entry in the session (Gradio 6.31 stored each replacement under a new id, with its value).
The event runs through Gradio's own processing (`Blocks.process_api`, what the queue calls), without a server."""

from __future__ import annotations

import asyncio

import gradio as gr
import pytest
from gradio.state_holder import SessionState

from explorer.app.page import gradio_fixes

pytestmark = pytest.mark.event_loop  # asyncio.run / its own Playwright: in a thread of its own


def alternate(value: str, n: int) -> dict:
    return {n_box: n + 1, **({value_box: value} if n % 2 else {})}  # value_box: a value, then left unchanged


with gr.Blocks() as demo:
    value_box = gr.Textbox()
    n_box = gr.Number(0, precision=0)
    gr.Button().click(alternate, [value_box, n_box], [value_box, n_box])


def session_entries(calls: int) -> int:
    """Components and config entries one session holds after `calls` events."""
    (fn,) = demo.fns.values()
    state = SessionState(demo)

    async def run() -> None:
        for n in range(calls):
            await demo.process_api(fn, ["x" * 1000, n], state=state)

    asyncio.run(run())
    return len(state.blocks_config.blocks) + len(state.config_values)


def test_skip_then_value_keeps_one_entry_per_component(monkeypatch):
    monkeypatch.setattr(SessionState, "__setitem__", gradio_fixes._original_setitem)
    assert session_entries(20) >= 2 * len(demo.blocks) + 10  # Gradio alone: two entries more per skip and value
    gradio_fixes.keep_one_entry_per_component()
    assert session_entries(20) == session_entries(2) == 2 * len(demo.blocks)


def session_after(calls: int, text: str) -> SessionState:
    (fn,) = demo.fns.values()
    state = SessionState(demo)

    async def run() -> None:
        for n in range(calls):
            await demo.process_api(fn, [text, n], state=state)

    asyncio.run(run())
    return state


def test_a_session_keeps_no_copy_of_the_values_it_sent(monkeypatch):
    """Gradio copies every value a session sends or receives into that session's config (for deep links); the
    app keeps none: a long text sent through the box is nowhere in the session afterwards."""
    text = "a value the page sent " * 200
    monkeypatch.setattr(SessionState, "_update_value_in_config", gradio_fixes._original_update_value)
    assert text in repr(session_after(2, text).config_values)  # Gradio alone keeps it (the last event sent it)
    gradio_fixes.keep_one_entry_per_component()
    assert text not in repr(session_after(2, text).config_values)

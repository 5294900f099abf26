"""explorer.app.serving.api_inputs.quiet_refusals: a best-effort page event (the address bar's link) whose inputs are
refused ends without a notice on the page; every other event's refusal is shown, naming the input."""

from __future__ import annotations

import asyncio

import gradio as gr
import pytest

from explorer.app.serving import api_inputs

pytestmark = pytest.mark.event_loop  # asyncio.run / its own Playwright: in a thread of its own


def refusal(fn) -> gr.Error:
    """The error of `fn`'s event given a head switch that is not among the group's (none) choices."""
    api_inputs.install()
    with gr.Blocks() as demo:
        switches = gr.CheckboxGroup(choices=[], label="Encoder self-attention")
        gr.Button().click(fn, [switches], None)
    block_fn = next(iter(demo.fns.values()))
    with pytest.raises(gr.Error) as caught:
        asyncio.run(demo.preprocess_data(block_fn, [["L0 H0"]], None))
    return caught.value


def test_a_quiet_event_is_refused_without_a_notice():
    error = refusal(api_inputs.quiet_refusals(lambda heads: heads))
    assert "heads: got ['L0 H0']" in error.message and error.visible is False


def test_any_other_event_shows_its_refusal():
    error = refusal(lambda heads: heads)
    assert "is not a choice" in error.message and error.visible is True


def test_the_address_bar_link_is_quiet():
    """As a lesson link opens on another model, the address event can carry the old model's switches (seen)."""
    from explorer.app.link.opening import LinkEvents

    assert LinkEvents.address.quiet_refusals is True

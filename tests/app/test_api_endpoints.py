"""The page's named endpoints read from the wired page (explorer.app.tabs.api.endpoints): what Gradio serves as the
HTTP API, listed on the API tab and in docs/http-api.md's table (kept up to date by scripts/docs_tables.py); a tab
added to the page has its endpoint listed without a change to the API tab."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
import pytest

from explorer.app.forms import endpoint, form_inputs
from explorer.app.tabs.api.endpoints import (REQUIRED, Endpoint, Parameter, Return, endpoint_list, endpoints,
                                             endpoints_table)
from explorer.app.tabs.base import Tab, TabEvents
from scripts.docs_tables import ENDPOINTS_MARK, app_demo, http_api_table

ROOT = Path(__file__).resolve().parents[2]


def test_a_public_named_event_is_listed_in_order_with_its_parameters_returns_and_line():
    """Private and undocumented events are left out; a parameter without a value is required; an unlabelled return
    is named by its elem_id, else its kind; without an api_description, the docstring's first sentence."""
    def echo(text, times):
        """Say it back. The rest of the docstring is not the line."""
        return text * int(times or 1), ""

    with gr.Blocks() as demo:
        text, times = gr.Textbox("hi", label="Text"), gr.Number(label="Times", precision=0)
        out, plain, button = gr.Markdown(elem_id="echo-out"), gr.Markdown(), gr.Button()
        for name, more in (("secret", dict(api_visibility="private")), ("echo", dict(api_description="Echo it.")),
                           ("hidden", dict(api_visibility="undocumented")), ("documented", {})):
            button.click(echo, [text, times], [out, plain], api_name=name, **more)
    found = endpoints(demo)
    params, returns = (Parameter("text", "str", "hi"), Parameter("times", "int", REQUIRED)), (
        Return("echo-out", "Markdown"), Return("Markdown", "Markdown"))
    assert found == (Endpoint("/echo", "Echo it.", params, returns), Endpoint("/documented", "Say it back.", params,
                                                                              returns))
    assert endpoint_list(found) == "- `/echo(text, times)`: Echo it.\n- `/documented(text, times)`: Say it back."
    assert endpoints_table(found).splitlines()[2] == ("| `/echo` | `text`: str = 'hi', `times`: int | "
                                                      "echo-out (Markdown), Markdown | Echo it. |")


@pytest.fixture(scope="module")
def served():
    return app_demo()


def test_docs_http_api_table_is_the_pages(served):
    """docs/http-api.md's table, after its marker line, is the one the served page's endpoints make: run
    `python scripts/docs_tables.py` after adding or changing an endpoint."""
    doc = (ROOT / "docs" / "http-api.md").read_text()
    after = doc.split(ENDPOINTS_MARK, 1)[1].split("\n", 1)[1]
    table = http_api_table(served)
    assert after == table or after.startswith(table + "\n"), "run python scripts/docs_tables.py"  # then a blank line
    assert all(f"| `{e.name}` |" in table for e in endpoints(served))


def test_every_endpoint_has_its_one_line_where_it_is_wired_and_the_api_tab_lists_it(served):
    """Each named event of the app carries its line (`api_description`, what view_api shows), one sentence that the
    listing keeps whole; the API tab's text lists every endpoint with its parameters in order."""
    found = {e.name: e for e in endpoints(served)}
    wired = {f"/{fn.api_name}": fn.api_description for fn in served.fns.values() if fn.api_visibility == "public"}
    assert set(found) == set(wired) and len(found) >= 18
    for name, line in wired.items():
        assert isinstance(line, str) and line == found[name].description, name
        assert line.endswith(".") and "\n" not in line and len(line) <= 120, name
    text = next(b.value for b in served.blocks.values() if getattr(b, "elem_id", None) == "api-text")
    assert endpoint_list(tuple(found.values())) in text and "api_name=\"/analyze\"" in text  # the example stays
    assert "- `/lens(sentence1, lang)`: Logit lens" in text


# ------------------------------------------------------------------ a tab added to the page


@dataclass(frozen=True)
class EchoForm:
    """/echo's parameters."""

    session: Any
    sentence1: Any
    times: Any = 2


@dataclass
class EchoParts:
    times: gr.Number
    button: gr.Button
    out: gr.Markdown


class EchoEvents(TabEvents):
    def echo(self, form: EchoForm) -> dict:
        return {self.status: "", self.parts.out: " ".join([str(form.sentence1)] * int(form.times))}


class EchoTab(Tab):
    """A button tab as docs/architecture.md's "How to add a tab" describes one, with its own endpoint."""

    id, title, help = "echo", "Echo", "Sentence 1 said back. Only for this test."
    result, button = "echo-out", "echo-run"

    def layout(self, start: Any) -> EchoParts:
        return EchoParts(gr.Number(2, label="Times", precision=0), gr.Button("Echo", elem_id="echo-run"),
                         gr.Markdown(elem_id="echo-out"))

    def wire(self, parts: EchoParts, app: Any) -> EchoEvents:
        ev = EchoEvents(app, parts)
        parts.button.click(endpoint(EchoForm, ev.echo, "echo"), form_inputs(EchoForm, app.page, own=parts),
                           [app.status, parts.out], api_name="echo", api_description="Sentence 1 said back.")
        return ev


def test_a_new_tabs_endpoint_is_listed_on_the_api_tab_and_in_the_table(ctx):
    """A page with one more button tab: its endpoint is on the API tab (with no change to tabs/api/) and in the
    table, with its parameters in order and their defaults, beside the app's own."""
    from explorer.app.demo import starting_point
    from explorer.app.events import PageEvents
    from explorer.app.page.layout import layout
    from explorer.app.serving.session import Session
    from explorer.app.tabs import TABS

    page = layout(starting_point(ctx, "date-translator", "cpu"), Session("date-translator", "cpu"),
                  (*TABS, EchoTab()))
    with page.demo:
        PageEvents(page, ctx).wire()
    found = {e.name: e for e in endpoints(page.demo)}
    assert found["/echo"] == Endpoint("/echo", "Sentence 1 said back.",
                                      (Parameter("sentence1", "str", "samedi 21 novembre 2026"),
                                       Parameter("times", "int", 2)),
                                      (Return("status", "Markdown"), Return("echo-out", "Markdown")))
    assert {"/analyze", "/lens", "/download_view"} < set(found)
    assert "- `/echo(sentence1, times)`: Sentence 1 said back.\n" in page.parts["api"].text.value
    assert ("| `/echo` | `sentence1`: str = 'samedi 21 novembre 2026', `times`: int = 2 | status (Markdown), "
            "echo-out (Markdown) | Sentence 1 said back. |") in endpoints_table(tuple(found.values()))

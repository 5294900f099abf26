"""Every part of the page a help text names exists on the page under that name: a section, a button or a control named
in a tab's help, a lesson, or one of the app's messages (module-level texts of explorer.app), by its label.

A name is a capitalised phrase in curly quotes (“Sample”, “Switch these heads off”) or a place in the old form
"(Language model, left)". The page is built for an encoder-decoder and a language model (tiny-gpt2), whose sections
differ ("Generated output" and "Language model"): a text any model shows may name only what both pages have."""

from __future__ import annotations

import importlib
import pkgutil
import re

import gradio as gr
import pytest

import explorer.app
from explorer.app.page.lessons import LESSONS
from explorer.app.tabs import TABS

QUOTED = re.compile(r"“([A-Z][^”]*)”")
PLACED = re.compile(r"\(([A-Z][\w ]+), (?:left|right|above|below)\)")


def app_texts() -> dict[str, str]:
    """Where -> text: each tab's help, each lesson's text, each module-level text of explorer.app."""
    texts = {f"help of {t.id}": t.help for t in TABS}
    texts.update({f"lesson {x.title}": x.text for x in LESSONS})
    for info in pkgutil.walk_packages(explorer.app.__path__, "explorer.app."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, str) and name.isupper() and " " in value:
                texts[f"{info.name}.{name}"] = value
    return texts


def names_in(text: str) -> set[str]:
    return {*QUOTED.findall(text), *PLACED.findall(text)}


def page_labels(ctx, model: str) -> set[str]:
    """Every label the page shows for `model`: components', buttons', sections' and tabs'."""
    from explorer.app.demo import starting_point
    from explorer.app.events import PageEvents
    from explorer.app.page.layout import layout
    from explorer.app.page.model_panel import model_info
    from explorer.app.serving.session import Session, get_model

    session = Session(model, "cpu")
    page = layout(starting_point(ctx, model, "cpu"), session, TABS)
    with page.demo:
        events = PageEvents(page, ctx)
        events.wire()
    labels = set()
    for block in page.demo.blocks.values():
        for attr in ("label", "value") if isinstance(block, gr.Button) else ("label",):
            if isinstance(getattr(block, attr, None), str):
                labels.add(getattr(block, attr))
    # what a model change writes: the language model's section is named after the model
    updates = events.model_updates(session, get_model(session, ctx), "")
    labels |= {u["label"] for u in updates.values() if isinstance(u, dict) and isinstance(u.get("label"), str)}
    assert model_info(get_model(session, ctx)).examples
    return labels


@pytest.fixture(scope="module")
def labels(ctx, lm_folder) -> set[str]:
    from explorer.app.serving.registry import ModelRegistry
    from explorer.app.serving.session import AppContext

    lm = AppContext(ModelRegistry(), (str(lm_folder),))  # tiny-gpt2: a language model
    translator, language = page_labels(ctx, "date-translator"), page_labels(lm, "tiny-gpt2")
    assert "Generated output" in translator - language and "Language model" in language - translator
    return translator & language  # a text shown with any model names what both pages have


def test_the_names_are_found_in_texts():
    """The patterns find the names they are meant to (a test that cannot fail is a defect)."""
    assert names_in("Tick “Sample” (Language model, left) to draw; the month's “3”") == {"Sample", "Language model"}
    assert any(names_in(text) for text in app_texts().values())


def test_every_part_a_help_text_names_is_on_the_page(labels):
    assert "Sample (off: greedy, the most probable token)" in labels
    missing = {}
    for where, text in app_texts().items():
        for name in names_in(text):
            if not any(label == name or label.startswith(name + " (") for label in labels):
                missing.setdefault(where, []).append(name)
    assert not missing, missing

"""How the page opens and is drawn (explorer.app.page.display, link.opening): one sentence unless the link names a
second, the display's two settings in the page and in links, the lessons' class view, the first heatmap's title, the
examples' labels. In Chromium: tests/app/test_browser_class.py and test_browser_phone.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from explorer.app.link.opening import LinkEvents
from explorer.app.page.display import MODES, SIZES, display_js
from explorer.app.page.display_css import DISPLAY_CSS
from explorer.app.page.layout import EXAMPLE_LABEL_CHARS, example_choices, example_label
from explorer.app.page.lessons import LESSONS
from explorer.app.serving.session import Session


def opened(page_events, query: dict[str, str]) -> dict:
    return LinkEvents(page_events).open_page(Session("date-translator", "cpu"), SimpleNamespace(query_params=query))


def value(updates: dict, component):
    v = updates.get(component, getattr(component, "value", None))
    return v.get("value") if isinstance(v, dict) else v


@pytest.mark.parametrize("query, second", [({}, ""), ({"layer": "1"}, ""), ({"s2": "3 May 2024"}, "3 May 2024"),
                                           ({"s1": "lundi 3 mars 2025", "s2": ""}, "")])
def test_the_page_opens_on_one_sentence_unless_its_link_names_a_second(page_events, query, second):
    """The simplest view first; /analyze's default for sentence2 (the model's second example) stays as API callers
    know it."""
    page = page_events.page
    updates = opened(page_events, query)
    assert value(updates, page.setting("sentence2")) == second
    assert value(updates, page.setting("sentence1")) == query.get("s1", "samedi 21 novembre 2026")
    assert page.setting("sentence2").value == "21. November 2026"
    assert value(updates, page.visible_tab) in (None, "attention")


def test_a_link_sets_the_size_and_the_class_view(page_events):
    page = page_events.page
    updates = opened(page_events, {"size": "projector", "mode": "class"})
    assert value(updates, page.setting("size")) == "projector" and value(updates, page.setting("mode")) == "class"
    assert updates[page.inputs.link_notice] == ""
    refused = opened(page_events, {"size": "huge"})
    assert "size 'huge' is not one of normal, projector" in refused[page.inputs.link_notice]
    assert list(page.setting("size").choices) == [(label, size) for size, label in SIZES.items()]
    assert [c[1] for c in page.setting("mode").choices] == list(MODES)


def test_every_lesson_opens_a_class_view():
    assert all("&mode=class" in lesson.query for lesson in LESSONS)


def test_the_display_script_carries_its_css_and_numbers():
    script = display_js()
    assert "FONT" not in script and "HEIGHT" not in script and "= CSS;" not in script
    assert "1.5" in script and "1.3" in script and '#mask-plot' in script
    assert 'html:root[data-mode=\\"class\\"] #views .tab-wrapper' in script
    assert DISPLAY_CSS.count("{") == DISPLAY_CSS.count("}")


def test_the_first_heatmap_says_with_toggles_only_when_one_is_in_force(app):
    _, loaded = app.load("date-translator")
    view = app.View("cross", 0, 0, 1)
    plain = app.analyze(loaded, app.DATE1, view=view)
    assert plain.figure("head").layout.title.text.startswith("Attention: cross-attention L0 H0")
    heads = {**app.all_heads(loaded), "cross": ["L0 H0"]}
    toggled = app.analyze(loaded, app.DATE1, toggles=app.toggles(heads), view=view)
    assert toggled.figure("head").layout.title.text.startswith("With toggles: cross-attention L0 H0")


def test_a_long_example_gets_a_short_label_and_its_whole_text():
    long = "t145 t140 t282 t278 t203 t268 t167 t230 t275 t285 t18 t9 t145 t140"
    label = example_label(long)
    assert len(label) == EXAMPLE_LABEL_CHARS and label.endswith("…") and long.startswith(label[:-1])
    assert example_label("21/11/2026") == "21/11/2026"
    assert example_choices([long, "21/11/2026"], "sentence 1")[1:] == [(label, long), ("21/11/2026", "21/11/2026")]

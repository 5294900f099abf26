"""The page side of the link (explorer.app.link.opening) without a browser: where a copied link points, and the
page's query read with its repeated keys."""

from __future__ import annotations

from types import SimpleNamespace

from starlette.datastructures import QueryParams

from explorer.app.link.opening import copy_link_js, query_pairs, space_page
from tests.app.browser import TAB_LINK_EXTRA


def test_a_copied_link_points_to_the_space_page_on_a_space(monkeypatch):
    monkeypatch.delenv("SYSTEM", raising=False)
    assert space_page() == "" and '"" ||' in copy_link_js()  # the page's own address
    monkeypatch.setenv("SYSTEM", "spaces")
    monkeypatch.setenv("SPACE_ID", "owner/transformer-explorer")
    assert space_page() == "https://huggingface.co/spaces/owner/transformer-explorer"
    assert '"https://huggingface.co/spaces/owner/transformer-explorer" ||' in copy_link_js()
    for odd in ("owner/x'; alert(1); '", "../../x", "a/b/c", ""):
        monkeypatch.setenv("SPACE_ID", odd)
        assert space_page() == "", odd


def test_the_pages_query_keeps_repeated_keys():
    request = SimpleNamespace(query_params=QueryParams("layer=1&layer=2&__theme=dark&s1=a%20b"))
    assert query_pairs(request) == [("layer", "1"), ("layer", "2"), ("__theme", "dark"), ("s1", "a b")]
    assert query_pairs(SimpleNamespace(query_params={"head": "3"})) == [("head", "3")]
    assert query_pairs(None) == [] and query_pairs(SimpleNamespace()) == []


def test_a_link_naming_a_model_alone_opens_its_own_example_and_names_it_in_the_picker(page_events):
    """`?model=induction-gpt` without a sentence: the model's own first example (not the starting model's date, which
    it reads as "t23 t23 …"), and the model picker names the model loaded, not the starting one."""
    from explorer.app.link.opening import LinkEvents
    from explorer.app.page.model_panel import model_info
    from explorer.app.serving.session import Session, get_model

    ev = page_events
    page, link = ev.page, LinkEvents(ev)

    def opened(query):
        updates = link.open_page(Session("date-translator", "cpu"), SimpleNamespace(query_params=QueryParams(query)))
        return lambda c: (v.get("value") if isinstance(v := updates.get(c), dict) else v)

    value = opened("model=induction-gpt")
    examples = model_info(get_model(value(page.session), ev.ctx)).examples
    assert value(page.setting("sentence1")) == examples[0] and examples[0].startswith("t")
    assert value(page.setting("sentence2")) == ""  # the page opens on one sentence when the link names no s2
    assert value(page.model.source) == "induction-gpt"
    value = opened("model=induction-gpt&s1=t1%20t2&s2=t3")  # sentences in the link stand
    assert (value(page.setting("sentence1")), value(page.setting("sentence2"))) == ("t1 t2", "t3")
    value = opened("model=induction-gpt&s1=t1%20t2")  # one sentence: no second one (not the starting model's)
    assert (value(page.setting("sentence1")), value(page.setting("sentence2"))) == ("t1 t2", "")
    value = opened("model=induction-gpt&s2=t3")
    assert (value(page.setting("sentence1")), value(page.setting("sentence2"))) == (examples[0], "t3")
    value = opened("layer=1")  # no model: the page's own sentences stay
    assert value(page.setting("sentence1")) is None


def test_the_model_picker_names_the_model_a_load_chose(page_events):
    ev = page_events
    m = ev.page.model
    updates = ev.models.load_model("date-translator", "date-gpt", "cpu", "3 May 2024", "")
    assert updates[m.source]["value"] == "date-gpt"


def test_a_link_to_any_tab_selects_it_and_the_load_presses_its_button(page_events):
    """`?tab=<id>` for every tab of the page (tabs.TABS): the page load selects the tab and writes no notice, and the
    load's last step (opening.run_tab_js, after the first Run) presses that tab's own button: every tab with a button
    it does not compute on opening, and no other. The browser test (test_browser_link) opens one tab of each kind this
    way and awaits its result; the every-tab browser test (test_browser_a11y_tabs) computes each tab by its button."""
    import json
    import re

    from explorer.app.link.opening import LinkEvents
    from explorer.app.serving.session import Session
    from explorer.app.tabs import TABS

    ev = page_events
    page, link = ev.page, LinkEvents(ev)
    for tab in TABS:
        query = f"tab={tab.id}{TAB_LINK_EXTRA.get(tab.id, '')}"
        updates = link.open_page(Session("date-translator", "cpu"), SimpleNamespace(query_params=QueryParams(query)))
        assert updates[page.tab_strip]["selected"] == tab.id, tab.id
        assert updates[page.inputs.link_notice] == "", (tab.id, updates[page.inputs.link_notice])
    pressing = [fn.js for fn in page.demo.fns.values() if fn.js and "button.click()" in fn.js and "[tab]" in fn.js]
    assert len(pressing) == 1, "one step of the page load presses the linked tab's button"
    pressed = json.loads(re.search(r"const id = (\{.*?\})\[tab\]", pressing[0], re.S).group(1))
    assert pressed == {t.id: t.button for t in TABS if t.button and not t.opens_computed}
    assert all(t.result for t in TABS)  # what the browser test awaits for each

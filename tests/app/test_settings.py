"""A page-wide setting is one entry of the table (explorer.app.page.settings.SETTINGS): the page built with the entry
docs/architecture.md adds ("How to add a page-wide setting", run here as written) takes it as /analyze's last
parameter and moves no other endpoint's, lays it out in its place, runs again on its event, and a link carries it
both ways. Also: the table's own rules, and a setting name the page does not have fails when the page is built."""

from __future__ import annotations

import contextlib
import io
from types import SimpleNamespace
from urllib.parse import parse_qsl

import gradio as gr
import pytest

from explorer.app.forms import PageView, RunForm, form_inputs
from explorer.app.link.opening import LinkEvents
from explorer.app.page.settings import SETTINGS, VIEW, Setting, check_table
from explorer.app.serving.session import Session
from explorer.app.tabs.api.endpoints import endpoints
from tests.markdown import ROOT, example_of

HEADING = "How to add a page-wide setting"


@pytest.fixture(scope="module")
def example():
    """The docs' new setting and the table with it, as the example makes them."""
    code, _ = example_of(ROOT / "docs" / "architecture.md", HEADING)
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, f"docs/architecture.md: {HEADING}", "exec"), namespace)
    return namespace["TOP"], namespace["table"]


@pytest.fixture(scope="module")
def with_setting(ctx, example):
    """The page on the shipped date-translator with the docs' setting, every event wired (as build_demo does)."""
    from explorer.app.demo import starting_point
    from explorer.app.events import PageEvents
    from explorer.app.page.layout import layout
    from explorer.app.tabs import TABS

    page = layout(starting_point(ctx, "date-translator", "cpu"), Session("date-translator", "cpu"), TABS,
                  example[1])
    with page.demo:
        ev = PageEvents(page, ctx)
        ev.wire()
    return ev


def test_the_real_table_is_analyzes_parameters_and_the_shared_part_its_start():
    names = [s.name for s in SETTINGS]
    assert [f for f in RunForm.__dataclass_fields__] == ["session", *names]
    assert list(PageView.__dataclass_fields__) == names[:len(PageView.__dataclass_fields__)]
    check_table(SETTINGS)


def test_it_is_the_last_parameter_of_analyze_and_moves_no_other_endpoints(with_setting, page_events, example):
    top, _ = example
    new = {e.name: e for e in endpoints(with_setting.page.demo)}
    old = {e.name: e for e in endpoints(page_events.page.demo)}
    assert list(new) == list(old)
    *before, last = new["/analyze"].parameters
    assert tuple(before) == old["/analyze"].parameters
    assert (last.name, last.default) == (top.name, top.default)
    for name in old:
        if name != "/analyze":
            assert new[name].parameters == old[name].parameters, name
    # /analyze takes it: a call with it answers like one without it (what it means for a Run is the Run's code)
    analyze = next(fn for fn in with_setting.page.demo.fns.values() if fn.api_name == "analyze")
    values = [7 if x is with_setting.page.setting(top.name) else getattr(x, "value", None) for x in analyze.inputs]
    values[0] = Session("date-translator", "cpu")
    out = analyze.fn(*values)
    assert not str(out[with_setting.status]).startswith("⚠️"), out[with_setting.status]


def test_the_page_lays_it_out_in_its_place(with_setting, example):
    top, _ = example
    page = with_setting.page
    component = page.setting(top.name)
    assert isinstance(component, gr.Slider) and component.elem_id == "top-tokens" and top.place == VIEW
    config = page.demo.get_config_file()
    controls = next(b._id for b in page.demo.blocks.values() if getattr(b, "elem_id", None) == "controls")

    def find(node, wanted):
        if node["id"] == wanted:
            return node
        return next((found for child in node.get("children", []) if (found := find(child, wanted))), None)

    def order(node):
        return [node["id"], *(i for child in node.get("children", []) for i in order(child))]

    settings = {c._id for c in page.settings.values()}
    column = [i for i in order(find(config["layout"], controls)) if i in settings]
    # the last of the view group: right after "Heatmaps show", before the language model's group
    assert column.index(component._id) == column.index(page.setting("measure")._id) + 1
    assert component._id not in order(find(config["layout"], page.controls.lm_controls._id))


def test_its_event_runs_the_page_again(with_setting, example):
    top, _ = example
    component = with_setting.page.setting(top.name)
    runs = [fn for fn in with_setting.page.demo.fns.values() if (component._id, top.rerun) in
            [(t[0], t[1]) for t in fn.targets]]
    assert len(runs) == 1 and runs[0].fn.__name__ == "analyze_page" and component in runs[0].inputs
    assert form_inputs(with_setting.run_form, with_setting.page)[-1] is component


def test_a_link_carries_it_both_ways(with_setting, example):
    top, table = example
    ev, page = with_setting, with_setting.page
    link = LinkEvents(ev)
    component = page.setting(top.name)
    assert component in link.restored and component in link.link_inputs()
    values = [7 if x is component else getattr(x, "value", None) for x in link.link_inputs()]
    values[0] = Session("date-translator", "cpu")
    query = link.copy_link(*values)[page.inputs.link_query]
    assert query.endswith("&top=7") and not link.copy_link(*values)[page.inputs.link_notice]
    opened = link.open_page(Session("date-translator", "cpu"), SimpleNamespace(query_params=dict(parse_qsl(query))))
    assert opened[component] == 7 and not opened[page.inputs.link_notice]
    refused = link.open_page(Session("date-translator", "cpu"), SimpleNamespace(query_params={"top": "99"}))
    assert component not in refused and "top '99' is not between 1 and 20" in refused[page.inputs.link_notice]


def test_a_table_the_page_cannot_build_is_refused():
    extra = Setting("extra", lambda start: gr.Number(0), VIEW)
    with pytest.raises(ValueError, match="without a default"):
        check_table((*SETTINGS, extra))  # after settings with defaults: /analyze could not keep table order
    with pytest.raises(ValueError, match="not one of"):
        check_table((*SETTINGS, Setting("extra", extra.make, "sidebar", default=0)))
    with pytest.raises(ValueError, match="named twice"):
        check_table((*SETTINGS, SETTINGS[-1]))


def test_a_setting_the_page_does_not_have_fails_when_named(page_events):
    with pytest.raises(KeyError, match="no setting 'windw'"):
        page_events.page.setting("windw")


def test_sampling_numbers_rerun_on_leaving_the_field_and_enter_leaves_it(page_events):
    """Temperature, top-k, top-p and seed run the page again as every other control does: on leaving the field (not at
    every digit: "0.8" would run at 0 first), and Enter leaves it (a script, no second Run)."""
    from explorer.app.page.settings import BLUR_ON_ENTER

    page = page_events.page
    sampling = [s for s in SETTINGS if s.place == "sampling"]
    assert [s.name for s in sampling] == ["temperature", "top_k", "top_p", "seed"]
    for s in sampling:
        component = page.setting(s.name)
        events = [(fn, t[1]) for fn in page.demo.fns.values() for t in fn.targets if t[0] == component._id]
        runs = [fn for fn, event in events if event == "blur"]
        assert s.rerun == "blur" and len(runs) == 1 and runs[0].fn.__name__ == "analyze_page"
        enter = [fn for fn, event in events if event == "submit"]
        assert len(enter) == 1 and enter[0].fn is None and enter[0].js == BLUR_ON_ENTER
        assert not [fn for fn, event in events if event in ("input", "change") and fn.fn is not None
                    and fn.fn.__name__ == "analyze_page"]

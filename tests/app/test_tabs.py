"""Every tab of the page (explorer.app.tabs.TABS) is one module that says everything about it: walked here, each is
laid out, wired, linkable and documented; and nothing else in the app holds a table keyed by tab ids."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from explorer.app.link.docs import keys_table
from explorer.app.link.state import LinkState, parse_link
from explorer.app.tabs import RUN_FIGURES, TABS, tabs_table

ROOT = Path(__file__).resolve().parents[2]
IDS = [t.id for t in TABS]


def listeners(page_events) -> list:
    """(trigger component ids, event name, handler name, api_name) of every event of the page."""
    blocks = page_events.page.demo
    out = []
    for fn in blocks.fns.values():
        names = [(target[0], target[1]) for target in fn.targets]
        out.append((names, getattr(fn.fn, "__name__", ""), fn.api_name))
    return out


@pytest.mark.parametrize("tab", TABS, ids=IDS)
def test_every_tab_is_laid_out(page_events, tab):
    page = page_events.page
    gr_tab = page.tabs[tab.id]
    assert gr_tab.id == tab.id and gr_tab.label == tab.title
    assert page.parts[tab.id] is not None
    ids = {getattr(b, "elem_id", None) for b in page.demo.blocks.values()}
    assert tab.result in ids, f"{tab.id}: its result #{tab.result} is not on the page"
    if tab.id != "api":
        assert tab.help and tab.help[0].isupper() and tab.help.rstrip().endswith((".", ")"))


@pytest.mark.parametrize("tab", TABS, ids=IDS)
def test_every_tab_is_wired(page_events, tab):
    """A tab drawn by the Run has its plots among /analyze's outputs; a tab with its own button has an event on it;
    opening any tab is an event (it draws that tab's figures of the last Run)."""
    ev, page = page_events, page_events.page
    events = listeners(ev)
    opened = [fn for targets, fn, _ in events if (page.tabs[tab.id]._id, "select") in targets]
    assert opened, f"{tab.id} has no select event"
    for figure in tab.figures:
        assert ev.plots[figure.name] in ev.analysis_outputs
    if tab.button:
        button = next(b for b in page.demo.blocks.values() if getattr(b, "elem_id", None) == tab.button)
        assert any((button._id, "click") in targets for targets, _, _ in events), f"#{tab.button} has no click"
    assert tab.figures or tab.button or tab.id in ("positions", "compare", "api"), tab.id


@pytest.mark.parametrize("tab", TABS, ids=IDS)
def test_every_tab_is_linkable_and_documented(tab):
    state, notices = parse_link(f"tab={tab.id}", check_model=str, tabs=TABS)
    assert state == LinkState(values={"tab": tab.id}) and notices == []
    for key in tab.link_keys:
        assert f"| `{key.key}` |" in keys_table(TABS)
    assert keys_table(TABS) in (ROOT / "docs" / "link.md").read_text(), "run python scripts/docs_tables.py"
    assert f"| **{tab.title}** | `{tab.id}` |" in tabs_table()
    assert tabs_table() in (ROOT / "docs" / "app.md").read_text(), "run python scripts/docs_tables.py"


def test_the_run_figures_are_the_tabs():
    assert list(RUN_FIGURES.by_tab) == [t.id for t in TABS if t.figures]
    assert RUN_FIGURES.first_looks("overview") == [(TABS[1].figures[0],), (TABS[1].figures[1],)]


def test_no_table_keyed_by_tab_ids_outside_the_tabs():
    """Outside explorer/app/tabs, no dict or tuple holds two or more tab ids (the ten tables a tab once needed)."""
    found = []
    for path in (ROOT / "explorer" / "app").rglob("*.py"):
        if "tabs" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            keys = node.keys if isinstance(node, ast.Dict) else node.elts if isinstance(node, (ast.Tuple, ast.List,
                                                                                                 ast.Set)) else []
            ids = [k.value for k in keys if isinstance(k, ast.Constant) and k.value in IDS]
            if len(ids) >= 2:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {ids}")
    assert found == []


def test_a_tab_is_one_module():
    """Each tab is the object TAB of its own module, named by its id: `tabs/<id>.py`, or `tabs/<id>/tab.py` for a tab
    with modules of its own (its package exports TAB)."""
    for tab in TABS:
        assert type(tab).__module__ in (f"explorer.app.tabs.{tab.id}", f"explorer.app.tabs.{tab.id}.tab")
        assert importlib.import_module(f"explorer.app.tabs.{tab.id}").TAB is tab
        assert re.fullmatch(r"[a-z]+", tab.id)

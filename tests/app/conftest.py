"""Fixtures of the app tests: one shared app context (registry), helpers to build or load a model into it
and to analyse text with page-style settings (head labels as on the page)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

SMALL = dict(preset="custom", n_layers=2, n_heads=4, d_model=32, d_ff=64, norm="pre-norm", positional="sinusoidal",
             seed=0)
DATE1, DATE2 = "samedi 21 novembre 2026", "3 May 2024"


@pytest.fixture(scope="module")
def ctx():
    from explorer.app.serving.registry import ModelRegistry
    from explorer.app.serving.session import AppContext

    return AppContext(ModelRegistry())


@pytest.fixture(scope="module")
def page_events(ctx):
    """The page on the shipped date-translator, every event wired (as build_demo does)."""
    from explorer.app.demo import starting_point
    from explorer.app.events import PageEvents
    from explorer.app.page.layout import layout
    from explorer.app.serving.session import Session
    from explorer.app.tabs import TABS

    page = layout(starting_point(ctx, "date-translator", "cpu"), Session("date-translator", "cpu"), TABS)
    with page.demo:
        ev = PageEvents(page, ctx)
        ev.wire()
    return ev


@pytest.fixture(scope="module")
def app(ctx):
    """Page-level helpers: build(arch, **fields), load(name), heads(labels per kind), analyze(...)."""
    from explorer.app.serving.build import BuildSpec
    from explorer.app.page.head_labels import head_labels, parse_heads
    from explorer.app.serving.session import build_session, load_session
    from explorer.app.run.toggles import Toggles
    from explorer.app.run.view import View
    from explorer.app.tabs import analyze

    def build(arch="encoder-decoder", **over):
        return build_session(BuildSpec(**{**SMALL, "arch": arch, **over}), "cpu", ctx)

    def load(name, **kw):
        return load_session(name, "cpu", ctx, **kw)

    def all_heads(loaded):
        """kind -> every head label, as the page's checkboxes start."""
        return {k: head_labels(*lh) for k, lh in loaded.config.attention_kinds().items()}

    def toggles(heads=None, **masks):
        """Toggles from page-style head labels: kind -> labels that are on."""
        on = None if heads is None else {k: parse_heads(v) for k, v in heads.items()}
        return Toggles(heads_on=on, **masks)

    def run(loaded, text1, text2=None, toggles=None, view=None):
        return analyze(loaded, text1, text2, toggles or Toggles(), view or View())

    return SimpleNamespace(build=build, load=load, all_heads=all_heads, toggles=toggles, analyze=run, View=View,
                           DATE1=DATE1, DATE2=DATE2, SMALL=SMALL)

"""explorer.notebook.show: the page's figures (the same Plotly JSON the page's /analyze sends for the same inputs),
the Run's numbers on `.data`, plotly.js inline (no address outside the output), token text as text, and bad
arguments in words."""

from __future__ import annotations

import numpy as np
import pytest

import explorer.notebook as nb
from explorer.notebook import plotly_js
from explorer.notebook.static import table_html
from tests.notebook.conftest import DATE


def page_figures(loaded, heads_off_cross):
    """The page's /analyze on date-translator (every tab's figures), with the cross heads `heads_off_cross` off."""
    from explorer.app.demo import starting_point
    from explorer.app.events import PageEvents
    from explorer.app.forms import RunForm
    from explorer.app.page.head_labels import head_label, head_labels
    from explorer.app.page.layout import layout
    from explorer.app.serving.kept import Shown
    from explorer.app.serving.registry import ModelRegistry
    from explorer.app.serving.session import AppContext, Session
    from explorer.app.tabs import TABS

    ctx, session = AppContext(ModelRegistry()), Session("date-translator", "cpu")
    ctx.registry.get(session.key, lambda: loaded)  # the same model object as the notebook's
    page = layout(starting_point(ctx, "date-translator", "cpu"), session, TABS)
    with page.demo:
        ev = PageEvents(page, ctx)
        ev.wire()
    kinds = loaded.config.attention_kinds()
    enc, dec, cross = (head_labels(*kinds[k]) for k in ("encoder", "decoder", "cross"))
    cross = [c for c in cross if c not in {head_label(*h) for h in heads_off_cross}]
    form = RunForm(session, DATE, "", True, True, "none", 0, 2, enc, dec, cross, "cross", 1, 0, 1, tab="all")
    updates = list(ev.analyze(form, Shown()))[0]
    return {name: updates[plot].plot for name, plot in ev.plots.items() if plot in updates}


def test_the_figures_are_the_pages_own_json_and_the_numbers_the_runs(translator):
    shown = nb.show(translator, DATE, kind="cross", layer=1, head=0, heads_off=[(0, 0), (0, 1)])
    page = page_figures(translator, [(0, 0), (0, 1)])
    assert list(shown.figures) == ["overview", "head", "mask", "baseline", "difference"]
    for name, spec in shown.figures.items():
        assert spec == page[name], name
    d = shown.data
    assert d["weights"].shape == (len(d["queries"]), len(d["keys"])) and d["head_on"]  # L1 H0 is on
    np.testing.assert_allclose(d["weights"][d["mask"]].reshape(len(d["queries"]), -1).sum(-1), 1, atol=1e-5)
    # layer 0's heads off change what layer 1 reads
    assert d["baseline_weights"] is not None and not np.allclose(d["weights"], d["baseline_weights"], atol=1e-4)
    assert [r[1] for r in d["output"]["rows"]] == ["baseline", "toggled"]


def test_the_output_carries_plotly_js_and_fetches_nothing(date_gpt):
    shown = nb.show(date_gpt, DATE + " =", layer=2, heads_off=[(2, 0)])
    html = shown._repr_mimebundle_()["text/html"]
    assert "plotly.js v" in html and html.count("window.Plotly.newPlot") == 1
    ours = html.replace(plotly_js.script(), "")  # plotly.js itself names addresses it never fetches here
    assert len(ours) < len(html) and "src=" not in ours and "http" not in ours
    assert shown.data["output"]["changed"] and "2046-11-21" in html  # L2 H0 off changes 2026 into 2046
    assert "2046-11-21" in shown._repr_mimebundle_()["text/plain"]


def test_token_text_is_text_never_html():
    out = table_html(["token"], [["<img src=x onerror=alert(1)>"]])
    assert "<img" not in out and "&lt;img src=x onerror=alert(1)&gt;" in out


def test_bad_arguments_are_said_in_words(date_gpt):
    with pytest.raises(ValueError, match=r"head L9 H0 does not exist in the decoder attention \(4 layers x 4 heads\)"):
        nb.show(date_gpt, DATE, heads_off=[(9, 0)])
    with pytest.raises(ValueError, match="no 'cross' attention; it has decoder"):
        nb.show(date_gpt, DATE, kind="cross")
    with pytest.raises(TypeError, match="not int"):
        nb.show(3, DATE)

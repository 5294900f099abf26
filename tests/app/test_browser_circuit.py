"""The Circuit tab in headless Chromium on the starting model (date-translator): a generated month task finds its
circuit, the graph is drawn with nodes and edges (the K/Q/V inputs in its legend) and the curve beside it; "Keep only
this circuit" unticks exactly the heads the summary names and the page's Run says so on the state line; a file of pairs
is read in the browser into the pairs box, with no request to Gradio's upload route. No console errors."""

from __future__ import annotations

import re

import pytest

from tests.app.browser import IDLE_JS, opened

pytestmark = pytest.mark.browser

TEXT = "id => { const el = document.querySelector('#' + id); return el ? el.innerText : ''; }"
# The circuit graph as drawn: its edge lines (scatter traces in lines mode with an SVG path each) and its node markers.
GRAPH = """() => { const gd = document.querySelector('#circuit-graph .js-plotly-plot');
  if (!gd || !gd._fullData) return null;
  const lines = gd._fullData.filter(t => t.mode === 'lines').length;
  const nodes = gd._fullData.filter(t => t.name === 'circuit nodes').reduce((n, t) => n + t.x.length, 0);
  const legend = gd._fullData.filter(t => t.showlegend !== false && t.type === 'scatter').map(t => t.name);
  const paths = gd.querySelectorAll('.scatterlayer .trace .js-line').length;
  const points = gd.querySelectorAll('.scatterlayer .trace .point').length;
  return {lines, nodes, legend, paths, points}; }"""
CURVE = """() => { const gd = document.querySelector('#circuit-curve .js-plotly-plot');
  return !!gd && !!gd._fullData && gd._fullData.some(t => t.name === 'pairs that found it'); }"""
UNTICKED = """id => [...document.querySelectorAll('#' + id + ' input[type=checkbox]')].filter(b => !b.checked).length"""
PAIRS = "lundi 3 mars 2025,lundi 3 juin 2025,2025-03,2025-06\nmardi 8 juin 1999,mardi 8 mars 1999,1999-06,1999-03\n"


@pytest.fixture(scope="module")
def app_url(default_app):
    return default_app


def test_a_generated_task_draws_its_circuit_and_keep_sets_the_switches(app_url, browser):
    with opened(app_url, browser) as (page, errors):
        uploads = []
        page.on("request", lambda r: uploads.append(r.url) if "/upload" in r.url else None)
        page.locator("#views").get_by_role("tab", name="Circuit").click()
        page.locator("#circuit-method").get_by_text("EAP (one gradient)").click()
        for box, value in (("circuit-generated", "8"), ("circuit-held", "2"), ("circuit-edges", "40")):
            field = page.locator(f"#{box} input[type=number]")
            field.fill(value)
            field.press("Enter")
        page.locator("#circuit-run").click()
        page.wait_for_function(f"() => ({TEXT})('circuit-summary').includes('faithfulness')")
        page.wait_for_function(f"() => {{ const g = ({GRAPH})(); return !!g && g.paths > 0 && g.points > 0; }}")
        page.wait_for_function(CURVE)
        page.wait_for_function(IDLE_JS)
        graph = page.evaluate(GRAPH)
        summary = page.evaluate(TEXT, "circuit-summary")
        edges = int(re.search(r"([\d,]+) of 529 edges", summary).group(1).replace(",", ""))
        assert graph["lines"] == edges <= 40 and graph["nodes"] >= 2, (graph, summary)
        assert graph["legend"] and all(n.startswith("into ") for n in graph["legend"]), graph  # which input each feeds
        assert page.locator("#circuit-table").inner_text().count("cross.") + \
            page.locator("#circuit-table").inner_text().count("encoder.") > 0
        # Keep only this circuit: the heads the summary names as outside it are unticked, and the Run says so.
        off = int(re.search(r"Heads in no edge of the circuit \((\d+) of 24\)", summary).group(1))
        assert off > 0, summary
        page.locator("#circuit-keep").click()
        page.wait_for_function(f"() => ({TEXT})('state-line').startsWith('Toggles:')")
        page.wait_for_function(IDLE_JS)
        unticked = sum(page.evaluate(UNTICKED, box) for box in ("enc-heads", "dec-heads", "cross-heads"))
        assert unticked == off, (unticked, off)
        assert " off" in page.evaluate(TEXT, "state-line")
        # A file of pairs: read in the browser into the pairs box (the task switches to typed), never uploaded.
        page.locator("#circuit-file-input").set_input_files(
            files=[{"name": "pairs.csv", "mimeType": "text/csv", "buffer": PAIRS.encode()}])
        page.wait_for_function("() => document.querySelector('#circuit-pairs textarea').value.includes('mardi 8 juin')")
        page.wait_for_function("() => document.querySelector('#circuit-file-note').innerText.includes('2 lines')")
        assert page.locator('#circuit-task input[value="typed"]').is_checked()
        # A file over the bound is not read: the note says so and the box keeps what it had.
        page.locator("#circuit-file-input").set_input_files(
            files=[{"name": "big.csv", "mimeType": "text/csv", "buffer": b"a,b\n" * 20_000}])
        page.wait_for_function("() => document.querySelector('#circuit-file-note').innerText.includes('at most')")
        assert "mardi 8 juin" in page.locator("#circuit-pairs textarea").input_value()
        assert uploads == [] and errors == [], (uploads, errors)

"""docs/examples/notebook.ipynb runs from top to bottom in a kernel (nbclient) on the shipped date-gpt, and its HTML
export (nbconvert) keeps the static figures: the view's divs, plotly.js inline and the calls that draw them."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbconvert import HTMLExporter

from tests.hang import SUBPROCESS_S

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "notebook.ipynb"


@pytest.mark.long
def test_the_example_notebook_runs_and_its_html_export_keeps_the_figures(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the kernel imports the repo's explorer
    nb = nbformat.read(EXAMPLE, as_version=4)
    NotebookClient(nb, timeout=SUBPROCESS_S, kernel_name="python3",
                   resources={"metadata": {"path": str(EXAMPLE.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    html_views = [o for o in outputs if "text/html" in o.get("data", {})]
    assert len(html_views) == 1  # show(); the widgets are widget views
    widgets = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(widgets) == 3
    texts = "\n".join(str(o.get("data", {}).get("text/plain", "")) for o in outputs)
    assert "2046-11-21" in texts  # head L2 H0 off, in show() and in the widget
    body, _ = HTMLExporter().from_notebook_node(nb)
    for name in ("overview", "head", "mask", "baseline", "difference"):
        assert re.search(f"data-figure=[\"']{name}[\"']", body), name  # (the export writes its own quotes)
    assert "plotly.js v" in body and "window.Plotly.newPlot" in body

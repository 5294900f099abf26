"""The notebook views in JupyterLab 4 and Notebook 7 under the session's Chromium, offline: every http(s) request
outside the Jupyter server is aborted. A small notebook on the shipped date-gpt runs; `show`'s figures are drawn
(plotly svg with a heatmap), and a head switch of the `switches` widget reruns the model in the kernel and changes
the output in place (L2 H0 off: "2026-11-21" becomes "2046-11-21"). Then the same notebook in Notebook 7."""

from __future__ import annotations

import nbformat
import pytest

from tests.app.browser import new_page
from tests.notebook.jupyter_server import jupyter_lab

pytestmark = pytest.mark.browser
TEXT = "samedi 21 novembre 2026 ="
CELLS = ["import explorer\nimport explorer.notebook as nb\nmodel = explorer.load('date-gpt', 'cpu')",
         f"nb.show(model, {TEXT!r}, layer=2)",
         f"w = nb.switches(model, {TEXT!r}, layer=2)\nw"]
HEATMAP = "image, .hm"  # what plotly draws a heatmap with (an image, or a layer of cells), inside .heatmaplayer


def write_notebook(folder):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, folder / "views.ipynb")


def offline(page, base: str, outside: list[str]) -> None:
    """Abort every request that does not go to the Jupyter server (and note it)."""
    def route(r):
        if r.request.url.startswith(base) or not r.request.url.startswith("http"):
            return r.continue_()
        outside.append(r.request.url)
        return r.abort()
    page.route("**/*", route)


def view_and_switch(page) -> None:
    """`show`'s three figures drawn; the widget drawn, then L2 H0 switched off: the output changes in place."""
    page.locator(".explorer-view .js-plotly-plot .heatmaplayer").locator(HEATMAP).first.wait_for(state="attached")
    drawn = page.eval_on_selector_all(".explorer-view .js-plotly-plot", "els => els.map(e => e.dataset.figure)")
    assert drawn == ["overview", "head", "mask"]  # no toggle: no baseline or difference
    widget = page.locator(".explorer-widget[data-runs='1']")
    widget.locator(".js-plotly-plot .heatmaplayer").locator(HEATMAP).first.wait_for(state="attached")
    assert "2026-11-21" in widget.locator(".explorer-tables").inner_text()
    widget.locator("input[data-head='heads_off:decoder:2,0']").uncheck()
    rows = page.locator(".explorer-widget[data-runs='2'] .explorer-tables tbody tr")
    rows.nth(1).wait_for()
    assert "2046-11-21" in rows.nth(1).inner_text() and "2026-11-21" in rows.nth(0).inner_text()


@pytest.mark.long
def test_the_views_draw_and_a_switch_changes_the_output_in_jupyterlab_offline(browser, tmp_path, free_port):
    write_notebook(tmp_path)
    with jupyter_lab(tmp_path, free_port()) as (base, token):
        context, page = new_page(browser, viewport={"width": 1400, "height": 1000})
        outside: list[str] = []
        try:
            offline(page, base, outside)
            page.goto(f"{base}lab/tree/views.ipynb?token={token}")
            page.wait_for_function("window.jupyterapp && document.querySelector('.jp-Notebook .jp-Cell')")
            page.get_by_text("Python 3 (ipykernel) | Idle").wait_for()
            page.locator(".jp-Notebook .jp-Cell").first.click()
            page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
            view_and_switch(page)
            page.screenshot(path=str(tmp_path / "jupyterlab.png"))
            # Notebook 7 on the same server: the same notebook, run from its menu (Run > Run All Cells)
            page.goto(f"{base}notebooks/views.ipynb?token={token}")
            page.wait_for_selector("text=Kernel status: Idle", state="attached")
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            view_and_switch(page)
            page.screenshot(path=str(tmp_path / "notebook7.png"))
            assert outside == [], f"requests outside the Jupyter server: {outside[:5]}"
        finally:
            context.close()

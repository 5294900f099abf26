"""`show(model, text, ...)`: the page's Run of a model on a sentence, drawn inline in a notebook as the app draws it:
the attention overview (All heads), the chosen head, the mask, the head without the toggles and the difference
(when a toggle is in force), and the output table, baseline vs toggled. The figures are the app's own
(explorer.app.tabs' figure functions on `explorer.app.tabs.analyze`, serialised by `viz.figure_json` with the
page's plot config), so their Plotly JSON equals the page's for the same inputs.

The HTML carries plotly.js inline (explorer.notebook.plotly_js): it draws with no network, in an exported HTML
file too. Shapes: Tq query / Tk key length of the chosen kind, L layers, H heads.
"""

from __future__ import annotations

import html
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..app.page.assets import plot_json
from ..app.tabs import analyze
from . import plotly_js
from .arguments import HeadsOff, kind_of, loaded_model, toggles, view

FIGURES = ("overview", "head", "mask", "baseline", "difference")  # the page's names (tabs' RunFigure names)
TOGGLED_ONLY = ("baseline", "difference")  # shown only when a toggle is in force (the page says so in words)


@dataclass
class Shown:
    """A drawn view: `.data` (the numbers), `.figures` (name -> the page's Plotly JSON text), `.analysis` (the app's
    result, for its other figures: `.analysis.figure("rollout")`). Displays itself in a notebook."""

    data: dict[str, Any]
    figures: dict[str, str]
    analysis: Any = field(repr=False, default=None)

    def html(self, include_plotlyjs: bool = True) -> str:
        return page_html(self.figures, self.data, include_plotlyjs)

    def _repr_html_(self) -> str:
        return self.html()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/html": self.html(), "text/plain": summary_text(self.data)}


def figure_jsons(analysis: Any, toggled: bool) -> dict[str, str]:
    """name -> JSON text, exactly what the page's gr.Plot gets (explorer.app.page.assets.plot)."""
    names = [n for n in FIGURES if toggled or n not in TOGGLED_ONLY]
    return {name: plot_json(analysis.figure(name, keep=False)) for name in names}


def numbers(analysis: Any) -> dict[str, Any]:
    """The Run's numbers: the chosen head with and without the toggles, the mask it applied, the tokens and the
    output table, and each layer's largest attention change."""
    inp = analysis.reduction("attention")
    tog, base = inp.toggled, inp.baseline
    return {"view": analysis.view, "queries": list(tog.queries), "keys": list(tog.keys),
            "weights": np.asarray(tog.weights), "mask": np.asarray(tog.mask), "head_on": inp.head_on,
            "baseline_weights": None if base is None else np.asarray(base.weights),
            "tokens": {"headers": list(analysis.tokens[0]), "rows": analysis.tokens[1]},
            "output": {"headers": analysis.output.headers, "rows": analysis.output.rows,
                       "changed": analysis.output.changed, "summary": analysis.output.summary},
            "state": analysis.state, "notices": analysis.status, "change_by_layer": analysis.change_by_layer}


def show(model: Any, text: str, text2: str | None = None, *, kind: str = "", layer: int = 0, head: int = 0,
         sentence: int = 1, measure: str = "weights", heads_off: HeadsOff = None, padding: bool = True,
         causal: bool = True, custom: str = "none", block_token: int = 0, window: int = 2,
         tokenizer: Any = None) -> Shown:
    """The page's Run on `text` (and `text2`), drawn inline. `heads_off`: (layer, head) pairs of `kind` (or a dict
    kind -> pairs) switched off; the masks as the page's switches (padding, causal, custom: none / block token /
    local window / no self)."""
    loaded = loaded_model(model, tokenizer)
    k = kind_of(loaded, kind)
    tg = toggles(loaded, k, heads_off, padding, causal, custom, block_token, window)
    analysis = analyze(loaded, text, text2, tg, view(k, layer, head, sentence, measure))
    toggled = analysis.reduction("attention").baseline is not None
    return Shown(numbers(analysis), figure_jsons(analysis, toggled), analysis)


def table_html(headers: list[Any], rows: list[list[Any]]) -> str:
    """A table whose cells are text (token text is never HTML)."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table class='explorer-table'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def summary_text(data: dict[str, Any]) -> str:
    words = data["output"]["summary"].replace("**", "")
    return f"{data['state']}\n{words}".strip()


def page_html(figures: dict[str, str], data: dict[str, Any], include_plotlyjs: bool = True) -> str:
    """One self-contained block: a div per figure, the output table, plotly.js (once per page) and the calls
    that draw the figures (their JSON is HTML-safe: viz.serialize.html_safe)."""
    uid = "explorer-" + uuid.uuid4().hex[:12]
    divs = "".join(f"<div class='explorer-plot' id='{uid}-{name}' data-figure='{name}'></div>" for name in figures)
    out = data["output"]
    words = html.escape(summary_text(data)).replace("\n", "<br>")
    specs = "{" + ",".join(f"{json.dumps(name)}:{spec}" for name, spec in figures.items()) + "}"
    draw = (f"(function(){{const figs={specs};for(const [name,f] of Object.entries(figs)){{"
            f"const el=document.getElementById('{uid}-'+name);if(el)window.Plotly.newPlot(el,f.data,f.layout,"
            f"f.config);}}}})();")
    lib = f"<script type='text/javascript'>{plotly_js.script()}</script>" if include_plotlyjs else ""
    return (f"<div class='explorer-view' id='{uid}'>{divs}<p>{words}</p>{table_html(out['headers'], out['rows'])}"
            f"{lib}<script type='text/javascript'>{draw}</script></div>")

"""The plotly.js bundles the figures must draw with, as classic scripts (for test pages and screenshots).

- `gradio_plotly_js()`: the plotly.js the installed Gradio serves to gr.Plot (3.3.1 for Gradio 6.31),
  taken out of its frontend chunk `PlotlyPlot-*.js`, where it sits as a UMD module in a CommonJS wrapper;
- `plotly_py_js()`: the bundle of the installed plotly.py (4.1.1 for plotly 7.1), used by `fig.to_html`.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

_WRAPPER = re.compile(r"\(\((\w+),(\w+)\)=>\{\(function\(")  # (exports, module) => { (function(root, factory) ...
_END = re.compile(r"return window\.Plotly=(\w+),\1\}\)")


def gradio_plotly_js() -> str | None:
    """Gradio's plotly.js as a script that sets window.Plotly, or None if its chunk is not found."""
    spec = importlib.util.find_spec("gradio")  # its files only: importing gradio takes seconds
    if spec is None or spec.origin is None:
        return None
    chunks = sorted((Path(spec.origin).parent / "templates" / "frontend" / "assets").glob("PlotlyPlot-*.js"))
    for chunk in chunks:
        text = chunk.read_text(encoding="utf-8")
        start, end = _WRAPPER.search(text), _END.search(text)
        if start and end and end.start() > start.end():
            exports, module = start.group(1), start.group(2)
            body = text[start.end() - len("(function("):end.end()]
            return f"(function({exports},{module}){{{body}}})({{}},{{exports:{{}}}});"
    return None


def plotly_py_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()

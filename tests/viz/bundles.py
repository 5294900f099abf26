"""The plotly.js bundles the figures must draw with, as classic scripts (for test pages and screenshots).

- `gradio_plotly_js()`: the plotly.js the installed Gradio serves to gr.Plot (3.3.1 for Gradio 6.31),
  taken out of its frontend chunk (benchmarks/assets.py, which the browser benchmark uses too);
- `plotly_py_js()`: the bundle of the installed plotly.py (4.1.1 for plotly 7.1), used by `fig.to_html`.
"""

from __future__ import annotations

from benchmarks.assets import gradio_plotly_js

__all__ = ["gradio_plotly_js", "plotly_py_js"]


def plotly_py_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()

"""plotly.js for the notebook views, read from the plotly package itself (its package_data/plotly.min.js): no
CDN, no network. `script()` is the source as an inline <script> body that loads it once per page (a second view
in the same page reuses window.Plotly); `source()` the plain text for the widget's module."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import plotly


@functools.cache
def source() -> str:
    """plotly.min.js as shipped in the plotly package (about 4.8 MB; read once per kernel)."""
    return (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text(encoding="utf-8")


def version() -> str:
    found = re.search(r"plotly\.js v([0-9][0-9.]*)", source()[:200])
    return found.group(1) if found else "unknown"


@functools.cache
def script() -> str:
    """The source guarded to run once per page, safe inside <script> ("</" cannot end the element early)."""
    return "if (!window.Plotly) {\n" + source().replace("</", "<\\/") + "\n}\n"

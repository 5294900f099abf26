"""The text of a figure as plotly.js reads it, for escaping checks.

`"<script" not in fig.to_json()` cannot fail: Plotly's JSON writes "<" as "\\u003c". The strings below are the
figure's own (tick labels, category names, titles, annotations, hover templates, text and customdata arrays, of the
data and the layout; the template holds no text of ours), decoded from that JSON, so a label typed as "<b>x</b>" is
found there as "<b>x</b>" if it was left raw and as "&lt;b&gt;x&lt;/b&gt;" if it was escaped.
"""

from __future__ import annotations

import json
from typing import Any


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)


def figure_strings(fig: Any) -> list[str]:
    """Every string of the figure's data and layout (template left out), as plotly.js receives it."""
    spec = json.loads(fig.to_json())
    spec.get("layout", {}).pop("template", None)
    out: list[str] = []
    _strings(spec.get("data", []), out)
    _strings(spec.get("layout", {}), out)
    return out


def containing(fig: Any, text: str) -> list[str]:
    """The figure's strings that contain `text`."""
    return [s for s in figure_strings(fig) if text in s]

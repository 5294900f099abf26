"""The notebook widgets' common part: an anywidget whose controls are described by a spec (`Control`s), whose
`values` the front end writes on every change, and whose outputs (`figures`: the page's Plotly JSON; `tables`;
`texts`) the kernel computes again in place, from the model actually run (`compute`, one per view). `.data` holds
the numbers of the last computation; a problem with the values is shown in words (`error`), never a traceback.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import anywidget
import traitlets

from ..app.serving.errors import AppError
from . import plotly_js
from .widget_js import WIDGET_JS


@dataclass(frozen=True)
class Control:
    """One control: `type` is "check", "select", "number", "text" or "heads" (a grid of switches, its value the
    (layer, head) pairs switched off)."""

    name: str
    label: str
    type: str
    options: list[Any] = field(default_factory=list)
    layers: int = 0
    heads: int = 0


@dataclass
class Drawn:
    """What one computation shows: the page's figures (JSON text), tables, texts, and its numbers."""

    figures: list[str]
    tables: list[dict[str, Any]]
    texts: list[str]
    data: dict[str, Any]


def whole(values: dict[str, Any], name: str) -> int:
    """A control's value as a whole number; ValueError naming the control otherwise."""
    value = values.get(name)
    try:
        if isinstance(value, bool) or float(value) != int(float(value)):
            raise ValueError
        return int(float(value))
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a whole number, got {str(value)[:20]!r}") from None


def table(title: str, headers: list[Any], rows: list[list[Any]]) -> dict[str, Any]:
    """A table for the front end; cells as plain values (JSON), drawn as text."""
    return {"title": title, "headers": [str(h) for h in headers],
            "rows": [[c if isinstance(c, (int, float, str)) or c is None else str(c) for c in r] for r in rows]}


class ViewWidget(anywidget.AnyWidget):
    """A view with controls; subclasses define `compute(values) -> Drawn`."""

    _esm = traitlets.Unicode("").tag(sync=True)
    controls = traitlets.List().tag(sync=True)
    values = traitlets.Dict().tag(sync=True)
    figures = traitlets.List().tag(sync=True)
    tables = traitlets.List().tag(sync=True)
    texts = traitlets.List().tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    busy = traitlets.Bool(False).tag(sync=True)
    runs = traitlets.Int(0).tag(sync=True)  # outputs sent so far: the front end redraws on each

    def __init__(self, controls: list[Control], values: dict[str, Any]):
        module = "const PLOTLY_SOURCE = " + json.dumps(plotly_js.source()) + ";\n" + WIDGET_JS
        super().__init__(_esm=module, controls=[asdict(c) for c in controls], values=values)
        self.data: dict[str, Any] = {}
        self.observe(lambda _change: self.refresh(), names="values")
        self.refresh()

    def compute(self, values: dict[str, Any]) -> Drawn:
        raise NotImplementedError

    def refresh(self) -> None:
        """Compute again from `values` and send the outputs (or the problem in words)."""
        self.busy = True
        try:
            drawn = self.compute(dict(self.values))
        except (AppError, ValueError, TypeError) as err:
            self.error = str(err)
        else:
            self.data = drawn.data
            with self.hold_sync():
                self.error = ""
                self.figures, self.tables, self.texts = drawn.figures, drawn.tables, drawn.texts
                self.runs += 1
        finally:
            self.busy = False

    def set(self, **values: Any) -> None:
        """Change some values from Python, as the controls do (the outputs are computed again)."""
        self.values = {**self.values, **values}

"""`switches(model, text)`: the page's Run as a widget: the head switches (a grid per attention kind), the masks and
the view (kind, layer, head, sentence) as controls; every change reruns the model in the kernel and redraws in
place: the overview, the chosen head, the mask, baseline and difference, and the output, baseline vs toggled.
The figures are `static.show`'s, so the page's own."""

from __future__ import annotations

from typing import Any

from ..app.run.toggles import CUSTOM_MASKS
from ..app.run.view import MEASURES
from .arguments import kind_of, loaded_model
from .static import show
from .widget import Control, Drawn, ViewWidget, table, whole


def head_controls(loaded: Any) -> list[Control]:
    """A grid of head switches per attention kind ("heads_off:<kind>": the pairs switched off)."""
    return [Control(f"heads_off:{kind}", f"{kind} heads on", "heads", layers=n_layers, heads=n_heads)
            for kind, (n_layers, n_heads) in loaded.config.attention_kinds().items()]


def heads_off(values: dict[str, Any]) -> dict[str, list[tuple[int, int]]]:
    return {name.split(":", 1)[1]: [tuple(p) for p in pairs] for name, pairs in values.items()
            if name.startswith("heads_off:") and pairs}


class Switches(ViewWidget):
    """The page's Run with its switches (module docstring)."""

    def __init__(self, loaded: Any, text: str, text2: str | None = None, **view: Any):
        self.loaded, self.text, self.text2 = loaded, text, text2
        kinds = loaded.config.attention_kinds()
        kind = kind_of(loaded, view.pop("kind", ""))
        controls = [Control("kind", "attention", "select", list(kinds)), Control("layer", "layer", "number"),
                    Control("head", "head", "number"), Control("measure", "measure", "select", list(MEASURES)),
                    Control("padding", "padding mask", "check"), Control("causal", "causal mask", "check"),
                    Control("custom", "custom mask", "select", list(CUSTOM_MASKS)),
                    Control("block_token", "blocked position", "number"), Control("window", "window", "number")]
        if text2:
            controls.insert(3, Control("sentence", "sentence", "select", [1, 2]))
        values = {"kind": kind, "layer": 0, "head": 0, "sentence": 1, "measure": "weights", "padding": True,
                  "causal": True, "custom": "none", "block_token": 0, "window": 2, **view}
        off = values.pop("heads_off", None) or {}
        off = off if isinstance(off, dict) else {kind: off}
        values.update({f"heads_off:{k}": [list(p) for p in pairs] for k, pairs in off.items()})
        super().__init__(controls + head_controls(loaded), values)

    def compute(self, values: dict[str, Any]) -> Drawn:
        shown = show(self.loaded, self.text, self.text2, kind=values["kind"], layer=whole(values, "layer"),
                     head=whole(values, "head"), sentence=whole({"sentence": 1, **values}, "sentence"), measure=values["measure"],
                     heads_off=heads_off(values), padding=bool(values["padding"]), causal=bool(values["causal"]),
                     custom=values["custom"], block_token=whole(values, "block_token"), window=whole(values, "window"))
        out = shown.data["output"]
        texts = [shown.data["state"], out["summary"].replace("**", "")]
        return Drawn(list(shown.figures.values()), [table("Output: baseline vs toggled", out["headers"], out["rows"])],
                     texts, shown.data)


def switches(model: Any, text: str, text2: str | None = None, *, tokenizer: Any = None, **view: Any) -> Switches:
    """The widget for `model` on `text` (and `text2`); `view`: kind, layer, head, sentence, measure, heads_off,
    padding, causal, custom, block_token, window as `show` takes them."""
    return Switches(loaded_model(model, tokenizer), text, text2, **view)

"""`inside_head(model, text)`: one head step by step as a widget, as the Inside a head tab computes it
(explorer.app.tabs.head.computation: the block read as the page's Run reads it, without and with the toggles):
queries, keys, scores, the mask, the softmax and what the head writes, for one query; the strongest keys; the
block's heads as lines. Controls: kind, layer, head, query, the masks and head switches. `.data` holds both runs'
computations as the /head_computation endpoint gives them (lists; -inf as None).

Shapes: T queries, S keys of the chosen kind, H heads of the layer.
"""

from __future__ import annotations

from typing import Any

from .. import viz
from ..app.page.assets import plot_json
from ..app.run.toggles import CUSTOM_MASKS
from ..app.run.view import KIND_SHORT
from ..app.serving.limits import DEFAULT_CONTINUATION, MAX_TOKENS
from ..app.tabs.head.computation import BlockRequest, computation_json, key_table, lines_heads, read_block
from ..labels import unique_labels
from ..viz.head_computation import head_computation_figure
from .arguments import kind_of, loaded_model, toggles
from .run_widget import head_controls, heads_off
from .widget import Control, Drawn, ViewWidget, table, whole


class InsideHead(ViewWidget):
    """One head of one block, one query at a time (module docstring)."""

    def __init__(self, loaded: Any, text: str, text2: str | None = None, **view: Any):
        self.loaded, self.text, self.text2 = loaded, text, text2 or ""
        kind = kind_of(loaded, view.pop("kind", ""))
        controls = [Control("kind", "attention", "select", list(loaded.config.attention_kinds())),
                    Control("layer", "layer", "number"), Control("head", "head", "number"),
                    Control("query", "query position", "number"), Control("padding", "padding mask", "check"),
                    Control("causal", "causal mask", "check"),
                    Control("custom", "custom mask", "select", list(CUSTOM_MASKS))]
        values = {"kind": kind, "layer": 0, "head": 0, "query": -1, "sentence": 1, "padding": True, "causal": True,
                  "custom": "none", **view}
        super().__init__(controls + head_controls(loaded), values)

    def compute(self, values: dict[str, Any]) -> Drawn:
        kind = kind_of(self.loaded, values["kind"])
        off = heads_off(values)
        tg = toggles(self.loaded, kind, off, values["padding"], values["causal"], values["custom"])
        request = BlockRequest(self.text, self.text2, tg, kind, whole(values, "layer"), whole(values, "sentence"),
                               DEFAULT_CONTINUATION)
        block = read_block(self.loaded, request, MAX_TOKENS)
        head = block.head(whole(values, "head"))
        base, toggled = block.computation(head, whole(values, "query"))
        keys = unique_labels(block.key_labels)
        label = unique_labels(block.query_labels)[base.query]
        heads = lines_heads(None, head, block.n_heads)
        figures = [head_computation_figure(base, keys, label, toggled=toggled),
                   viz.head_lines(block.lines(heads, "weights"), block.query_labels, block.key_labels,
                                  [f"H{h}" for h in heads], name=viz.WEIGHT,
                                  title=f"{KIND_SHORT[block.kind]} L{block.layer}: heads as lines")]
        frame = key_table(block, base, toggled, keys)
        data = {"changes": list(block.changes), "query_labels": block.query_labels, "key_labels": block.key_labels,
                "baseline": computation_json(base), "toggled": computation_json(toggled)}
        words = (f"{KIND_SHORT[block.kind]} L{block.layer} H{head}, query {base.query} ({label}); "
                 f"toggles: {', '.join(block.changes) or 'none'}")
        return Drawn([plot_json(f) for f in figures],
                     [table("The strongest keys", list(frame.columns), frame.values.tolist())],
                     [words, *block.notices], data)


def inside_head(model: Any, text: str, text2: str | None = None, *, tokenizer: Any = None, **view: Any
                ) -> InsideHead:
    """The widget for `model` on `text`; `view`: kind, layer, head, query, sentence, masks, heads_off:<kind>."""
    return InsideHead(loaded_model(model, tokenizer), text, text2, **view)

"""The chosen head as each Run reduces it (`ATTENTION`: its matrices with and without the toggles, the mask the model
applied, whether it is on) and its heatmap with the toggles (`head_figure`): the Attention & output tab draws it, and
the All heads tab draws it large beside the grid.

Shapes: Tq query / Tk key length of the chosen kind; the values are the model's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ... import viz
from .attention_maps import HeadView, head_view, value_name
from .figures import Reduction
from .pair import Comparison
from .view import View


@dataclass(frozen=True)
class AttentionInputs:
    view: View
    toggled: HeadView
    baseline: HeadView | None  # None when nothing is toggled
    head_on: bool


def attention_inputs(cmp: Comparison, view: View) -> AttentionInputs:
    on = cmp.head_mask is None or bool(cmp.head_mask[view.kind][view.layer, view.head])
    shown = head_view(cmp.toggled, view)
    return AttentionInputs(view, shown, None if cmp.no_toggle else head_view(cmp.baseline, view, shown.mask), on)


def head_title(inp: AttentionInputs) -> str:
    """"With toggles: …" only when a toggle is in force (the baseline beside it then differs); else "Attention: …"."""
    return f"{'Attention' if inp.baseline is None else 'With toggles'}: {inp.view.where()}"


def head_figure(inp: AttentionInputs) -> Any:
    tog = inp.toggled
    return viz.head_heatmap(tog.weights, tog.queries, tog.keys, mask=tog.mask, head_off=not inp.head_on,
                            title=head_title(inp), value_name=value_name(inp.view))


ATTENTION = Reduction("attention", attention_inputs)

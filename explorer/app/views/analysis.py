"""Everything /analyze shows, built on first access: the runs happen once (`compare`), each tab's figures
only when something asks for them (a tab that is not looked at costs nothing).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import plotly.graph_objects as go

from ...checkpoints import LoadedModel
from ..compare import Comparison, compare
from ..errors import escape_md
from ..inputs import token_table
from ..limits import MAX_TOKENS
from ..toggles import Toggles
from . import View
from .attention import AttentionFigures, attention_figures, attention_kinds, overview_figure, rollout_figure
from .generation import generation_figures
from .output import OutputTable, output_table, surprisal_figure

NO_TOGGLE = "No toggle is active: switch a head off or change a mask to compare."


class Analysis:
    def __init__(self, cmp: Comparison, view: View):
        self.cmp = cmp
        self.view = view.fitted(attention_kinds(cmp.toggled), len(cmp.inputs.rows))

    @property
    def status(self) -> str:
        """Markdown: notices about the input and masks, and whether anything is toggled."""
        notes = ["⚠️ " + escape_md(n) for n in self.cmp.notices]
        return "\n\n".join(notes + ([NO_TOGGLE] if self.cmp.no_toggle else []))

    @property
    def tokens(self) -> tuple[list[str], list[list[Any]]]:
        return token_table(self.cmp.inputs)

    @cached_property
    def output(self) -> OutputTable:
        return output_table(self.cmp, self.view)

    @cached_property
    def surprisal(self) -> go.Figure:
        return surprisal_figure(self.cmp, self.view)

    @cached_property
    def attention(self) -> AttentionFigures:
        return attention_figures(self.cmp, self.view)

    @property
    def output_summary(self) -> str:
        change = ", ".join(f"L{n}: {d:.3f}" for n, d in enumerate(self.attention.change_by_layer))
        return (f"{self.output.summary}\n\nLargest change of any attention weight per layer "
                f"({self.view.kind}): {change}")

    @cached_property
    def overview(self) -> go.Figure:
        return overview_figure(self.cmp, self.view)

    @cached_property
    def generation(self) -> tuple[go.Figure, go.Figure]:
        return generation_figures(self.cmp, self.view)

    @cached_property
    def rollout(self) -> go.Figure:
        return rollout_figure(self.cmp, self.view)


def analyze(loaded: LoadedModel, text1: str | None, text2: str | None, toggles: Toggles, view: View | None = None,
            max_tokens: int = MAX_TOKENS, new_tokens: int | None = None) -> Analysis:
    return Analysis(compare(loaded, text1, text2, toggles, max_tokens, new_tokens), view or View())

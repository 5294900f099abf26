"""Everything /analyze shows. The runs are reduced to what each tab draws (one head's matrices, the overview's
pooled tiles, the head-averaged attention for rollout, the generation steps of the chosen head, the output
table) and the full attention is let go; each tab's figures are drawn when asked for. So a result kept for the
session's tabs (explorer.app.kept, without its figures) is small, and switching tab draws from it without running
the model again.

A language model's outputs come after its attention (`compare_in_steps`): a `FirstLook` holds the visible tab's
reductions, drawn at once, and the Analysis reuses them once the outputs are known. Both are plain data (arrays,
labels, tables), so they may come from another process (explorer.app.compute).
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterator
from functools import cached_property
from typing import Any

import plotly.graph_objects as go

from ...checkpoints import LoadedModel
from ..compare import Comparison, compare, compare_in_steps
from ..errors import escape_md
from ..inputs import token_table
from ..limits import MAX_TOKENS
from ..toggles import Toggles
from . import View
from .attention import (AttentionFigures, attention_figures, attention_inputs, attention_kinds, overview_figure,
                        overview_inputs, rollout_figure, rollout_inputs)
from .generation import generation_figures, generation_inputs
from .output import output_table, surprisal_figure, surprisal_inputs

NO_TOGGLE = "No toggle is active: switch a head off or change a mask to compare."
# The figures of each tab /analyze draws, by name.
TAB_FIGURES = {"attention": ("mask", "head", "baseline", "difference", "surprisal"), "overview": ("overview", "large"),
               "generation": ("generation_self", "generation_cross"), "rollout": ("rollout",)}


class Reductions:
    """The runs' attention and outputs reduced to what each tab draws, each reduction made once, when first asked
    for. `complete` makes the ones not made yet and lets go of the runs: a complete Reductions is plain data."""

    def __init__(self, cmp: Comparison, view: View):
        self.cmp: Comparison | None = cmp
        self.view = view.fitted(attention_kinds(cmp.toggled), len(cmp.inputs.rows))

    @cached_property
    def attention(self):
        return attention_inputs(self.cmp, self.view)

    @cached_property
    def overview(self):
        return overview_inputs(self.cmp, self.view)

    @cached_property
    def rollout(self):
        return rollout_inputs(self.cmp, self.view)

    @cached_property
    def generation(self):
        return generation_inputs(self.cmp, self.view)

    @cached_property
    def surprisal(self):
        return surprisal_inputs(self.cmp, self.view)

    def complete(self) -> "Reductions":
        if self.cmp is not None:
            for name in REDUCED:
                getattr(self, name)
            self.cmp = None
        return self

    def __getstate__(self) -> dict:
        """Pickled (from a GPU worker to the server, explorer.app.compute): complete, never the runs."""
        return dict(self.complete().__dict__)


REDUCED = ("attention", "overview", "rollout", "generation", "surprisal")  # Reductions' cached properties


class drawn_figure(cached_property):
    """A figure property drawn on first access and cached on a Run's own result; a kept result (`Analysis.kept`)
    draws it again on each access instead, so it never grows past the bytes the store counted for it."""

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is not None and instance.__dict__.get("_kept"):
            return self.func(instance)
        return super().__get__(instance, owner)


class Analysis:
    def __init__(self, cmp: Comparison, view: View, reduced: Reductions | None = None, later: bool = False):
        """`reduced`: this comparison's reductions made already (for its first look), reused, not made again.
        `later`: the reductions no tab has asked for yet are made by `complete` (or when first drawn), so that a
        Run's outputs and its visible tab are sent first (`analyze_in_steps`); until then this holds the runs."""
        reduced = reduced if reduced is not None else Reductions(cmp, view)
        self.view = view = reduced.view
        notes = ["⚠️ " + escape_md(n) for n in cmp.notices] + ([NO_TOGGLE] if cmp.no_toggle else [])
        self.status = "\n\n".join(notes)  # Markdown: notices about the input and masks, whether anything is toggled
        self.tokens = token_table(cmp.inputs)
        self.output = output_table(cmp, view)
        self.reduced = reduced if later else reduced.complete()

    def complete(self) -> "Analysis":
        """Every tab's reductions made, the runs let go (a no-op for a complete result)."""
        self.reduced.complete()
        return self

    # The figures, drawn on first access and cached on this object (a Run's own result, while it is sent).
    @drawn_figure
    def attention(self) -> AttentionFigures:
        return attention_figures(self.reduced.attention)

    @property
    def output_summary(self) -> str:
        change = ", ".join(f"L{n}: {d:.3f}" for n, d in enumerate(self.reduced.attention.change_by_layer))
        return (f"{self.output.summary}\n\nLargest change of any attention weight per layer "
                f"({self.view.kind}): {change}")

    @property
    def overview_width(self) -> int:
        """The figure width (px) the All heads tiles were pooled for."""
        return self.reduced.overview.tiles.width

    @drawn_figure
    def surprisal(self) -> go.Figure:
        return surprisal_figure(self.reduced.surprisal)

    @drawn_figure
    def overview(self) -> go.Figure:
        return overview_figure(self.reduced.overview)

    @drawn_figure
    def generation(self) -> tuple[go.Figure, go.Figure]:
        return generation_figures(self.reduced.generation)

    @drawn_figure
    def rollout(self) -> go.Figure:
        return rollout_figure(self.reduced.rollout)

    def kept(self) -> "Analysis":
        """This result, complete, without its drawn figures: what the store of kept results holds (explorer.app.kept)."""
        kept = copy.copy(self.complete())
        for name in DRAWN:
            kept.__dict__.pop(name, None)
        kept._kept = True
        return kept

    def figures(self, tab: str, skip: Collection[str] = ()) -> dict[str, go.Figure]:
        """The figures of one tab ("all": of every tab) but those named in `skip`, by name (TAB_FIGURES); a figure
        drawn already is reused, the others are drawn now and not cached (a kept result stays its size)."""
        tabs = list(TAB_FIGURES) if tab == "all" else [tab] if tab in TAB_FIGURES else []
        names = [n for t in tabs for n in TAB_FIGURES[t] if n not in skip]
        cached = self.__dict__
        figures: dict[str, go.Figure] = {}
        if {"mask", "head", "baseline", "difference", "large"} & set(names):
            f = cached.get("attention") or attention_figures(self.reduced.attention)
            figures.update(mask=f.mask, head=f.head, baseline=f.baseline, difference=f.difference, large=f.head)
        if "surprisal" in names:
            figures["surprisal"] = cached.get("surprisal") or surprisal_figure(self.reduced.surprisal)
        if "overview" in names:
            figures["overview"] = cached.get("overview") or overview_figure(self.reduced.overview)
        if {"generation_self", "generation_cross"} & set(names):
            figures.update(zip(TAB_FIGURES["generation"], cached.get("generation") or
                               generation_figures(self.reduced.generation)))
        if "rollout" in names:
            figures["rollout"] = cached.get("rollout") or rollout_figure(self.reduced.rollout)
        return {n: figures[n] for n in names}


DRAWN = ("attention", "surprisal", "overview", "generation", "rollout")  # Analysis's cached figure properties


def analyze(loaded: LoadedModel, text1: str | None, text2: str | None, toggles: Toggles, view: View | None = None,
            max_tokens: int = MAX_TOKENS, new_tokens: int | None = None) -> Analysis:
    return Analysis(compare(loaded, text1, text2, toggles, max_tokens, new_tokens), view or View())


class FirstLook:
    """A Run whose attention is known and outputs are not yet: its notices and the reductions of some figures of the
    one tab it was asked for (plain arrays and labels: it may cross spaces.GPU's process boundary,
    explorer.app.compute)."""

    def __init__(self, reduced: Reductions, cmp: Comparison, tab: str, names: tuple[str, ...]):
        self.tab, self.names = tab, names
        self.status = "\n\n".join("⚠️ " + escape_md(n) for n in cmp.notices)
        needs = {"overview": "overview", "rollout": "rollout"}
        self.reduced = {need: getattr(reduced, need) for need in
                        {needs.get(n, "attention") for n in names}}  # attention: mask, head, baseline, difference, large

    def figures(self, tab: str) -> dict[str, go.Figure]:
        """Its figures (`names`, of TAB_FIGURES) that need only the attention; none for a tab other than its own
        (opened meanwhile) or "all" (the API waits for the whole result)."""
        if tab != self.tab:
            return {}
        figures = {}
        if "attention" in self.reduced:
            f = attention_figures(self.reduced["attention"])
            figures.update(mask=f.mask, head=f.head, baseline=f.baseline, difference=f.difference, large=f.head)
        if "overview" in self.reduced:
            figures["overview"] = overview_figure(self.reduced["overview"])
        if "rollout" in self.reduced:
            figures["rollout"] = rollout_figure(self.reduced["rollout"])
        return {n: figures[n] for n in self.names}


# The first looks at a tab while a language model's outputs are computed, in order: the All heads grid is sent
# alone, then the chosen head's view below it (its 1,024 x 1,024 map would delay the grid by ~0.5 s in the browser).
FIRST_LOOKS = {"attention": (("mask", "head", "baseline", "difference"),), "overview": (("overview",), ("large",)),
               "rollout": (("rollout",),)}


def analyze_in_steps(loaded: LoadedModel, text1: str | None, text2: str | None, toggles: Toggles,
                     view: View | None = None, max_tokens: int = MAX_TOKENS, new_tokens: int | None = None,
                     first_tab: str = "attention") -> Iterator[FirstLook | Analysis]:
    """`analyze`, handing over FirstLooks (`FIRST_LOOKS` of `first_tab`) while a language model's outputs are
    computed (in a thread of their own, begun once the first look is made: `Comparison.start_outputs`); then the
    Analysis, which reuses the reductions made for the looks and makes the others when asked or completed
    (`Analysis.complete`: after its tab and outputs are sent)."""
    view, reduced = view or View(), None
    for cmp in compare_in_steps(loaded, text1, text2, toggles, max_tokens, new_tokens):
        if not cmp.complete:
            reduced = Reductions(cmp, view)
            for k, names in enumerate(FIRST_LOOKS.get(first_tab, ())):
                look = FirstLook(reduced, cmp, first_tab, names)
                if k == 0:
                    cmp.start_outputs()
                yield look
        else:
            yield Analysis(cmp, view, reduced, later=True)


def tab_figures(a: Analysis, tab: str) -> dict[str, go.Figure]:
    """The figures of one tab ("all": of every tab), by name (TAB_FIGURES); {} for a tab without any."""
    return a.figures(tab)

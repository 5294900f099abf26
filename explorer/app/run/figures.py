"""The figures a Run draws, declared by the tabs that show them: each figure is a reduction of the Run (plain arrays
and labels, made once and kept) and a drawing of that reduction (never running the model).

    RunFigure("head", ATTENTION, draw_head, first_look=0)   # a tab's figure: which reduction, how it is drawn
    RunFigures.of(tabs)                                        # every tab's figures, by tab id

Several figures may read one reduction (the attention tab's mask, head, baseline and difference all read one head's
matrices), so a reduction is made once whatever number of figures draws it. A language model's attention is known
before its outputs: a figure with `first_look` set is sent in that step of the first look (0 first), the others with
the outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

ALL = "all"  # the /analyze `tab` value that draws every tab's figures


@dataclass(frozen=True)
class Reduction:
    """A Run (`pair.Comparison`) and its `view.View` -> the plain data some figures draw."""

    name: str
    make: Callable[[Any, Any], Any]


@dataclass(frozen=True)
class RunFigure:
    """One figure of a tab drawn from each Run. `name` is also the field of the tab's parts that holds its plot."""

    name: str
    reduction: Reduction
    draw: Callable[[Any], Any]  # the reduction's data -> a Plotly figure
    first_look: int | None = None  # the step of a language model's first look that sends it; None: with the outputs
    api_order: int | None = None  # its place among /analyze's returned figures (documented); None: after those


@dataclass(frozen=True)
class RunFigures:
    """Every figure the page's Runs draw, by tab id, in the page's order."""

    by_tab: Mapping[str, tuple[RunFigure, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, tabs: Iterable[Any]) -> "RunFigures":
        """From the tabs (`tabs.base.Tab`: an `id` and `figures` each); figure names must be unique on the page."""
        by_tab = {tab.id: tuple(tab.figures) for tab in tabs if tab.figures}
        names = [f.name for figures in by_tab.values() for f in figures]
        if len(set(names)) != len(names):
            raise ValueError(f"two figures of the page share a name: {sorted(n for n in names if names.count(n) > 1)}")
        return cls(by_tab)

    def of_tab(self, tab: str | None) -> tuple[RunFigure, ...]:
        """The figures of one tab, or of every tab for "all"; () for a tab the Run does not draw."""
        if tab == ALL:
            return tuple(f for figures in self.by_tab.values() for f in figures)
        return self.by_tab.get(tab or "", ())

    @property
    def reductions(self) -> dict[str, Reduction]:
        """Every reduction some figure reads, by name."""
        return {f.reduction.name: f.reduction for figures in self.by_tab.values() for f in figures}

    def first_looks(self, tab: str) -> list[tuple[RunFigure, ...]]:
        """The steps of a language model's first look at `tab`: its figures that need only the attention, grouped by
        `first_look`, in order."""
        steps: dict[int, list[RunFigure]] = {}
        for f in self.by_tab.get(tab, ()):
            if f.first_look is not None:
                steps.setdefault(f.first_look, []).append(f)
        return [tuple(steps[k]) for k in sorted(steps)]


def draw(figures: Iterable[RunFigure], reduced: Callable[[Reduction], Any],
         drawn: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """{name: figure} of `figures`, each reduction read once through `reduced`; a figure in `drawn` is reused, and
    two figures with the same drawing of the same reduction share one figure."""
    out: dict[str, Any] = {}
    made: dict[tuple[str, Any], Any] = {}
    for f in figures:
        if drawn is not None and f.name in drawn:
            out[f.name] = drawn[f.name]
            continue
        key = (f.reduction.name, f.draw)
        if key not in made:
            made[key] = f.draw(reduced(f.reduction))
        out[f.name] = made[key]
    return out

"""Everything a Run shows: its notices, token table and output table, and every tab's figures drawn from reductions
of the runs (`figures.RunFigure`: one head's matrices, the overview's pooled tiles, the head-averaged attention for
rollout, ...). Once the reductions are made the full attention is let go, so a result kept for the session's tabs
(explorer.app.serving.kept, without its figures) is small, and opening another tab draws from it without running the
model.

A language model's outputs come after its attention (`pair.compare_in_steps`): a `FirstLook` holds the reductions
of the visible tab's first figures, drawn at once, and the Analysis reuses them once the outputs are known. Both are
plain data (arrays, labels, tables), so they may come from another process (explorer.app.serving.compute).
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterator, Mapping
from typing import Any

import numpy as np

from ...checkpoints import LoadedModel
from ...labels import occurrence_note, unique_labels
from ...outputs.sampling import Sampling
from ..serving.errors import escape_md
from ..serving.limits import MAX_TOKENS
from .answers import answers
from .figures import ALL, Reduction, RunFigure, RunFigures, draw
from .inputs import token_table
from .output_chips import output_chips
from .output_table import output_table
from .pair import Comparison, compare, compare_in_steps
from ..i18n.messages import message_in
from ..i18n.words import t
from .state_line import state_line
from .toggles import Toggles
from .unchanged import why_unchanged
from .view import View

WAITING = t("run.waiting")  # a language model's first look


def attention_kinds(run: Any) -> dict[str, tuple[int, int]]:
    """kind -> (layers, heads) of a run (`model_run.Run`)."""
    return {kind: (len(layers), layers[0].shape[1]) for kind, layers in run.attentions.items()}


class Reductions:
    """The runs reduced to what the figures draw, each reduction made once, when first asked for. `complete` makes
    the ones not made yet and lets go of the runs: a complete Reductions is plain data."""

    def __init__(self, cmp: Comparison, view: View, makers: Mapping[str, Reduction]):
        self.cmp: Comparison | None = cmp
        self.view = view.fitted(attention_kinds(cmp.toggled), len(cmp.inputs.rows))
        self._makers = dict(makers)
        self.made: dict[str, Any] = {}

    def __call__(self, reduction: Reduction) -> Any:
        if reduction.name not in self.made:
            if self.cmp is None:
                raise KeyError(f"the reduction {reduction.name!r} was not made before the runs were let go")
            self.made[reduction.name] = reduction.make(self.cmp, self.view)
        return self.made[reduction.name]

    def complete(self) -> "Reductions":
        if self.cmp is not None:
            self.cmp.predict_every_position()  # what the result keeps is whole, whichever reductions read it
            for reduction in self._makers.values():
                self(reduction)
            self.cmp, self._makers = None, {}
        return self

    def __getstate__(self) -> dict:
        """Pickled (from a GPU worker to the server, explorer.app.serving.compute): complete, never the runs."""
        return dict(self.complete().__dict__)


def change_by_layer(cmp: Comparison, view: View) -> np.ndarray:
    """(L,) the largest change of any attention weight of the view's kind and sentence, per layer."""
    if cmp.no_toggle:  # one run: nothing changed (not 144 maps of T x T subtracted to find it)
        return np.zeros(len(cmp.toggled.attentions[view.kind]))
    return np.array([float((t[view.row] - s[view.row]).abs().max()) for t, s in
                     zip(cmp.toggled.attentions[view.kind], cmp.baseline.attentions[view.kind])])


class Analysis:
    """A Run's result: `status` (Markdown notices), `state` (its toggles in words), `tokens` and `output` tables,
    `chips` (sentence 1's output as clickable tokens), and the figures of any tab."""

    def __init__(self, cmp: Comparison, view: View, figures: RunFigures, reduced: Reductions | None = None,
                 later: bool = False):
        """`reduced`: this comparison's reductions made already (for its first look), reused, not made again.
        `later`: the reductions no tab has asked for yet are made by `complete` (or when first drawn), so that a
        Run's outputs and its visible tab are sent first (`analyze_in_steps`); until then this holds the runs."""
        reduced = reduced if reduced is not None else Reductions(cmp, view, figures.reductions)
        self.view = view = reduced.view
        self.notices = tuple(cmp.notices)  # English: said in a page's language by `status_in`
        self.status = status_in(self.notices)  # Markdown: notices about the input and masks (the toggles: self.state)
        self.tokens = token_table(cmp.inputs)
        self.output = output_table(cmp, view)
        self.change_by_layer = change_by_layer(cmp, view)
        kinds = attention_kinds(cmp.toggled)
        self.state = state_line(cmp.toggles, kinds, cmp.sampling)  # the toggles in words, for the top of the results
        # "2·2" in the figures: said once, under the state line, for the sequences of the view's sentence
        run, first = cmp.toggled, view.kind  # the view's sequences first: the heatmap on the first screen
        sequences = sorted([*run.queries.items(), *run.keys.items()], key=lambda kl: kl[0] != first)
        self.note = next(filter(None, (occurrence_note(unique_labels(labels[view.row])) for _, labels in sequences)),
                         None)
        self.chips = output_chips(cmp, view, decoder_only="cross" not in kinds)  # sentence 1's output, clickable
        self.answers = answers(cmp)  # sentence 1's output as text, baseline and toggled (the lessons' checks)
        # Toggles that changed no output: what moved, why, the next step (run.unchanged); None: nothing to say
        self.why = why_unchanged(cmp, view, self.output.changed, decoder_only="cross" not in kinds)
        self.block = cmp.block  # the view's block as the runs computed it (captures.RunBlock), for Inside a head
        self.figure_set = figures
        self.reduced = reduced if later else reduced.complete()
        self.drawn: dict[str, Any] | None = {}  # figures drawn for this Run while it is sent; None once kept

    def complete(self) -> "Analysis":
        """Every tab's reductions made, the runs let go (a no-op for a complete result)."""
        self.reduced.complete()
        return self

    @property
    def output_summary(self) -> str:
        change = ", ".join(f"L{n}: {d:.3f}" for n, d in enumerate(self.change_by_layer))
        return (f"{self.output.summary}\n\nLargest change of any attention weight per layer "
                f"({self.view.kind}): {change}")

    def kept(self) -> "Analysis":
        """This result, complete, without its drawn figures: what the store of kept results holds
        (explorer.app.serving.kept) — a kept result draws its figures again when asked, so it never grows past the bytes
        the store counted."""
        kept = copy.copy(self.complete())
        kept.drawn = None
        return kept

    def figures(self, tab: str, skip: Collection[str] = ()) -> dict[str, Any]:
        """The figures of one tab ("all": of every tab) but those named in `skip`, by name."""
        wanted = [f for f in self.figure_set.of_tab(tab) if f.name not in skip]
        out = draw(wanted, self.reduced, self.drawn)
        if self.drawn is not None:
            self.drawn.update(out)
        return out

    def figure(self, name: str, keep: bool = True) -> Any:
        """One figure by name, whichever tab draws it (KeyError for a name no tab draws); `keep`: cached on a Run's
        own result (False: a figure of its own, which the caller may change)."""
        wanted = [f for f in self.figure_set.of_tab(ALL) if f.name == name]
        if not wanted:
            raise KeyError(name)
        if not keep:
            return draw(wanted, self.reduced)[name]
        out = draw(wanted, self.reduced, self.drawn)
        if self.drawn is not None:
            self.drawn.update(out)
        return out[name]

    def reduction(self, name: str) -> Any:
        """The data one reduction made of this Run (by its name)."""
        return self.reduced(self.figure_set.reductions[name])

    def __getstate__(self) -> dict:
        """Pickled without drawn figures (a Plotly figure made in one process is not the same in another)."""
        return {**self.__dict__, "drawn": {}}


def analyze(loaded: LoadedModel, text1: str | None, text2: str | None, toggles: Toggles, view: View | None = None,
            max_tokens: int = MAX_TOKENS, new_tokens: int | None = None, *, figures: RunFigures,
            sampling: Sampling | None = None) -> Analysis:
    """A whole Run's result at once; `figures`: the page's (tabs.RUN_FIGURES); `sampling`: None = greedy."""
    return Analysis(compare(loaded, text1, text2, toggles, max_tokens, new_tokens, sampling=sampling), view or View(),
                    figures)


def status_in(notices: tuple[str, ...], lang: str = "en") -> str:
    """A Run's notices (English, as computed and kept) as the status line's Markdown in `lang`."""
    return "\n\n".join("⚠️ " + escape_md(message_in(n, lang)) for n in notices)


class FirstLook:
    """A Run whose attention is known and outputs are not yet: its notices and the reductions of some figures of the
    one tab it was asked for (plain arrays and labels: it may cross spaces.GPU's process boundary,
    explorer.app.serving.compute)."""

    def __init__(self, reduced: Reductions, cmp: Comparison, tab: str, figures: tuple[RunFigure, ...]):
        self.tab, self.names = tab, tuple(f.name for f in figures)
        self.notices = tuple(cmp.notices)
        self.status = status_in(self.notices)
        self._figures = figures
        self.reduced = {f.reduction.name: reduced(f.reduction) for f in figures}

    def figures(self, tab: str) -> dict[str, Any]:
        """Its figures; none for a tab other than its own (opened meanwhile) or "all" (the API waits for the whole
        result)."""
        if tab != self.tab:
            return {}
        return draw(self._figures, lambda r: self.reduced[r.name])


def analyze_in_steps(loaded: LoadedModel, text1: str | None, text2: str | None, toggles: Toggles,
                     view: View | None = None, max_tokens: int = MAX_TOKENS, new_tokens: int | None = None,
                     first_tab: str = "attention", *, figures: RunFigures,
                     sampling: Sampling | None = None) -> Iterator[FirstLook | Analysis]:
    """`analyze`, handing over FirstLooks (`RunFigures.first_looks(first_tab)`) while a language model's outputs are
    computed (in a thread of their own, begun once the first look is made: `Comparison.start_outputs`); then the
    Analysis, which reuses the reductions made for the looks and makes the others when asked or completed
    (`Analysis.complete`: after its tab and outputs are sent)."""
    view, reduced = view or View(), None
    for cmp in compare_in_steps(loaded, text1, text2, toggles, max_tokens, new_tokens, sampling=sampling, view=view):
        if not cmp.complete:
            reduced = Reductions(cmp, view, figures.reductions)
            for k, step in enumerate(figures.first_looks(first_tab)):
                look = FirstLook(reduced, cmp, first_tab, step)
                if k == 0:
                    cmp.start_outputs()
                yield look
        else:
            yield Analysis(cmp, view, figures, reduced, later=True)

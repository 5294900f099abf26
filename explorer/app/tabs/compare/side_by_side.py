"""Two models side by side on the same sentences (the "Compare models" tab, /compare_models).

Each side is that model's own Run (`run.result.analyze`): its tokenizer reads the sentences (gpt2 and Pythia split
them differently, so each side labels its own tokens), its heads are switched on or off and its layer and head
chosen on their own, with the masks, sentence, next-token position, measure and continuation length the page
sets for both. So every figure of a side equals the figure of that model analysed alone with the same settings:
the chosen head, the All heads grid, the output (next-token top 10, generated text, or mask fillers).

Nothing here loads a model: the caller holds both (`compare_held` runs through explorer.app.serving.compute's
`call_held`), so that both count against the model memory budget while the comparison runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import plotly.graph_objects as go

from ....checkpoints import LoadedModel
from ...run.figures import RunFigures
from ...run.output_table import OutputTable
from ...run.request import RunRequest
from ...run.result import Analysis, analyze
from ...run.toggles import Toggles
from ...run.view import KIND_TITLES, View
from ...serving.errors import escape_md
from ...serving.limits import MAX_TOKENS
from ...serving.session import Session

MAX_LISTED_TOKENS = 60  # tokens of the chosen sentence listed in a side's heading; longer sentences end in "…"


@dataclass(frozen=True)
class SideSettings:
    """What differs between the two sides: the model (and its name as chosen), its head switches, its view."""

    name: str  # shipped name, Hub id or folder (as the person chose it)
    loaded: LoadedModel
    toggles: Toggles  # the shared masks with this model's head switches
    view: View  # this model's kind, layer and head; the shared sentence, position and measure


@dataclass
class Side:
    """One model's Run reduced to what the tab shows (plain data: it may come from a GPU worker)."""

    name: str
    analysis: Analysis

    @property
    def view(self) -> View:
        """The view as drawn (clamped to this model's kinds, layers, heads)."""
        return self.analysis.view

    @property
    def output(self) -> OutputTable:
        return self.analysis.output

    def figures(self, width: int | None = None) -> dict[str, go.Figure]:
        """The chosen head (with this model's switches) and the All heads grid, as the model's own Run draws them;
        `width`: the grid's height fitted to a column that wide (`fit_overview`; the same traces)."""
        head = self.analysis.figure("head")
        overview = self.analysis.figure("overview", keep=False)  # its own figure: fitted in place
        if width is not None:
            fit_overview(overview, self.analysis.reduction("overview").tiles.width, width)
        return dict(head=head, overview=overview)

    def tokens(self) -> list[str]:
        """This model's tokens of the chosen sentence, as its tokenizer labels them."""
        return [row[2] for row in self.analysis.tokens[1] if row[0] == self.view.sentence]

    def heading(self) -> str:
        """Markdown: the model, what is shown, its tokens of the chosen sentence (text, escaped), its output."""
        tokens = self.tokens()
        # One space between tokens: a token's own spaces are shown as ␣ (explorer.labels), so the splits are visible.
        listed = " ".join(escape_md(t) for t in tokens[:MAX_LISTED_TOKENS]) + (
            " …" if len(tokens) > MAX_LISTED_TOKENS else "")
        v = self.view
        return (f"### {escape_md(self.name)}\n\n{KIND_TITLES[v.kind]}, layer {v.layer}, head {v.head} · "
                f"sentence {v.sentence} is **{len(tokens)} tokens** to this model: {listed}\n\n"
                f"{self.output.summary}")


def fit_overview(fig: go.Figure, planned: int, width: int) -> go.Figure:
    """The All heads grid in a column `width` px wide, in place: the grid keeps its tiles' shape (scaleanchor), so it
    is shorter there than in the `planned` width its height was set for; scale the height alike (else a gap below a
    2-head grid twice as tall as it is drawn). Never taller than planned."""
    m = fig.layout.margin
    scale = min(1.0, (width - m.l - m.r) / (planned - m.l - m.r))
    fig.update_layout(height=int(m.t + m.b + (fig.layout.height - m.t - m.b) * scale))
    return fig


@dataclass
class ModelComparison:
    sides: tuple[Side, Side]

    @property
    def status(self) -> str:
        """Markdown: each side's notices (cuts of the input, adjusted masks), named by model; "" when none."""
        lines = [f"{escape_md(s.name)}: {line}" for s in self.sides for line in s.analysis.status.split("\n\n") if line]
        return "\n\n".join(lines)

    def summary(self) -> str:
        """One line: how each model reads sentence 1 and what it outputs first."""
        first, second = self.sides
        a, b = len(first.tokens()), len(second.tokens())
        same = "the same number of" if a == b else "different numbers of"
        return (f"Sentence {first.view.sentence}: **{escape_md(first.name)}** reads {a} tokens, "
                f"**{escape_md(second.name)}** {b} ({same} tokens: each tokenizer splits the text its own way).")


def compare_models(sides: Sequence[SideSettings], text1: str | None, text2: str | None, max_tokens: int = MAX_TOKENS,
                   new_tokens: int | None = None, *, figures: RunFigures) -> ModelComparison:
    """Both models' Runs on the same sentences (`run.result.analyze` each, one after the other: the first Run's
    attention is reduced and let go before the second starts), drawing the page's `figures` (`RunFigures.of(tabs)`).
    Two sides; the same model twice is allowed."""
    if len(sides) != 2:
        raise ValueError(f"a comparison has two sides, got {len(sides)}")
    runs = tuple(Side(s.name, analyze(s.loaded, text1, text2, s.toggles, s.view, max_tokens, new_tokens,
                                      figures=figures))
                 for s in sides)
    return ModelComparison(runs)  # type: ignore[arg-type]


@dataclass(frozen=True)
class ComparisonRequest:
    """/compare_models as the computation takes it: the two models' page Runs (they share the first's sentences and
    continuation length) and the page's Run figures. Plain and picklable (it may go to a GPU worker)."""

    first: RunRequest
    second: RunRequest
    figures: RunFigures

    @property
    def sessions(self) -> tuple[Session, Session]:
        return self.first.session, self.second.session


def compare_held(models: Sequence[LoadedModel], request: ComparisonRequest, max_tokens: int) -> ModelComparison:
    """`compare_models` on the two sessions' models, held by the caller (explorer.app.serving.compute's `call_held`)."""
    requests = (request.first, request.second)
    sides = [SideSettings(model_name(r.session), m, r.toggles, r.view) for r, m in zip(requests, models)]
    first = request.first
    return compare_models(sides, first.text1, first.text2, max_tokens, first.new_tokens, figures=request.figures)


def model_name(session: Session) -> str:
    """How a side names its model: the source as chosen, or "a built model"."""
    return session.source or f"a built {session.build.arch if session.build else ''} model".replace("  ", " ")

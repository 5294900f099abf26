"""The positional tab: the loaded model's own positional scheme, named and explained, with its figures
(explorer.positions: learned tables, Marian's or the built models' sinusoid, rotary frequencies and score by
distance, T5's relative bias per head and distance), and the sinusoidal table of *Attention Is All You Need*
for the numbers the person picks."""

from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

from ... import positions, viz
from ...checkpoints import LoadedModel
from ..errors import escape_md
from ..limits import positional_args

MODEL_FIGURES = 4  # plots the tab keeps for the model's own scheme (BART's learned tables: 2 per stack)
SCHEME_NAMES = {"learned": "learned position table", "sinusoidal": "sinusoidal positions",
                "rotary": "rotary positions (RoPE)", "relative": "T5's relative position bias",
                "none": "no positional encoding"}


@dataclass(frozen=True)
class PositionalView:
    heat: go.Figure  # the textbook sinusoid: position x dimension
    curves: go.Figure  # some of its dimensions over position
    similarity: go.Figure  # which positions get similar vectors
    scheme: str  # Markdown: which scheme the loaded model uses, and what that means
    model: list[go.Figure]  # the model's own figures, at most MODEL_FIGURES (at least one)


TITLE_CHARS = 62  # a title longer than this is cut off at half the page's width: it is broken onto two lines


def fit_title(fig: go.Figure) -> go.Figure:
    """Break a long title at its last ", " or " (" before TITLE_CHARS, with room for the second line."""
    title = fig.layout.title.text or ""
    if len(title) <= TITLE_CHARS:
        return fig
    cut = max(title.rfind(", ", 0, TITLE_CHARS), title.rfind(" (", 0, TITLE_CHARS))
    if cut <= 0:
        return fig
    top = (fig.layout.margin.t if fig.layout.margin.t is not None else 60) + 18
    return fig.update_layout(title_text=title[:cut + 1] + "<br>" + title[cut + 1:].lstrip(), margin_t=top)


def model_scheme(loaded: LoadedModel | None, length: int) -> tuple[str, list[go.Figure]]:
    """(Markdown naming the loaded model's scheme, its figures)."""
    if loaded is None:
        return "No model loaded.", [viz.message_figure("No model loaded.")]
    own = positions.positional_figures(loaded, length)
    text = f"**This model uses {SCHEME_NAMES.get(own.scheme, own.scheme)}.** {escape_md(own.explanation)}"
    figures = [fit_title(f) for f in list(own.figures.values())[:MODEL_FIGURES]]
    if not figures:
        figures = [viz.message_figure(f"The loaded model has no positional encoding (positional='{own.scheme}').")]
    return text, figures


def positional_view(loaded: LoadedModel | None, d_model: object, length: object, base: object) -> PositionalView:
    """The tab for the picked numbers (checked: AppError for one out of range) and the loaded model."""
    d_model, length, base = positional_args(d_model, length, base)
    table = viz.sinusoidal_table(length, d_model, base)
    scheme, figures = model_scheme(loaded, length)
    return PositionalView(viz.positional_heatmap(table, title=f"Sinusoidal encoding (base {base:g})"),
                          viz.positional_curves(table), viz.position_similarity(table), scheme, figures)

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


def model_scheme(loaded: LoadedModel | None, length: int) -> tuple[str, list[go.Figure]]:
    """(Markdown naming the loaded model's scheme, its figures)."""
    if loaded is None:
        return "No model loaded.", [viz.message_figure("No model loaded.")]
    own = positions.positional_figures(loaded, length)
    text = f"**This model uses {SCHEME_NAMES.get(own.scheme, own.scheme)}.** {escape_md(own.explanation)}"
    figures = list(own.figures.values())[:MODEL_FIGURES]
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

"""The positional tab: the sinusoidal table of *Attention Is All You Need* for the numbers the person picks,
and the loaded model's own position table."""

from __future__ import annotations

import plotly.graph_objects as go
import torch

from ... import viz
from ...checkpoints import LoadedModel
from ..limits import positional_args


def model_position_figure(loaded: LoadedModel | None, length: int) -> go.Figure:
    if loaded is None:
        return viz.message_figure("No model loaded.")
    c, model = loaded.config, loaded.model
    if c.positional == "rotary":
        return viz.message_figure("The loaded model uses rotary positions: queries and keys are rotated by angles "
                                  "that grow with the position, inside attention; there is no table to add.")
    if c.positional not in ("learned", "sinusoidal"):
        return viz.message_figure(f"The loaded model has no positional encoding (positional='{c.positional}').")
    embed = model.src_embed if model.src_embed is not None else model.tgt_embed
    with torch.inference_mode():
        own = embed.position_matrix()[: min(length, c.max_len)].float().cpu().numpy()
    what = "learned table" if c.positional == "learned" else f"sinusoidal, base {c.pos_base:g}"
    return viz.positional_heatmap(own, title=f"Loaded model ({what})")


def positional_figures(loaded: LoadedModel | None, d_model: object, length: object, base: object
                       ) -> tuple[go.Figure, go.Figure, go.Figure, go.Figure]:
    """(table heatmap, curves of some dimensions, position similarity, the model's own table)."""
    d_model, length, base = positional_args(d_model, length, base)
    table = viz.sinusoidal_table(length, d_model, base)
    return (viz.positional_heatmap(table, title=f"Sinusoidal encoding (base {base:g})"), viz.positional_curves(table),
            viz.position_similarity(table), model_position_figure(loaded, length))

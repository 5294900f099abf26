"""Plotly figures of the explorer, built from arrays and token labels (no model runs, no Gradio).

Shapes follow the project legend: L layers, H heads, T/S target/source length, D model width.
Every function accepts numpy arrays or torch tensors and returns a plotly Figure (or an array).
Heatmap values reach the browser as typed arrays (`figure_json`): exact float32 for small heatmaps,
one byte per cell beyond (encode.py); a view never has more cells than it has screen pixels
(axes.py, overview.py), since plotly drops cells thinner than a pixel.
"""

from explorer.sinusoid import sinusoidal_table
from explorer.viz.attention import cross_attention_heatmap, decoder_self_attention_heatmap, head_heatmap
from explorer.viz.common import VALUE_WEIGHTED, WEIGHT, display_labels, escape, message_figure, unique_labels
from explorer.viz.compare import difference_heatmap
from explorer.viz.contributions import DLARun, attribution_strip, dla_map
from explorer.viz.flow import flow_figure, flow_pair_figure
from explorer.viz.head_view import head_lines
from explorer.viz.interpret import lens_figure, patching_figure, role_figure
from explorer.viz.latents import LatentExampleRow, examples_html, latent_heatmap, latent_histogram, latent_strip
from explorer.viz.mask import mask_heatmap
from explorer.viz.overview import (OverviewGrid, OverviewTiles, attention_overview, draw_overview,
                                  overview_grid_index, overview_tiles)
from explorer.viz.query_key import query_key_figure
from explorer.viz.positional import position_similarity, positional_curves, positional_heatmap
from explorer.viz.sampling import sampling_figure
from explorer.viz.serialize import figure_json
from explorer.viz.summary import (attention_rollout, head_average, head_importance_chart, rollout_from_average,
                                 rollout_heatmap, spearman)
from explorer.viz.tokens import surprisal_chart

__all__ = [
    "VALUE_WEIGHTED", "WEIGHT",
    "DLARun",
    "LatentExampleRow",
    "OverviewGrid",
    "OverviewTiles",
    "attention_overview",
    "attention_rollout",
    "attribution_strip",
    "cross_attention_heatmap",
    "decoder_self_attention_heatmap",
    "difference_heatmap",
    "draw_overview",
    "display_labels",
    "dla_map",
    "escape",
    "examples_html",
    "figure_json",
    "flow_figure",
    "flow_pair_figure",
    "head_average",
    "head_heatmap",
    "head_importance_chart",
    "head_lines",
    "latent_heatmap",
    "latent_histogram",
    "latent_strip",
    "lens_figure",
    "mask_heatmap",
    "message_figure",
    "overview_grid_index",
    "overview_tiles",
    "patching_figure",
    "position_similarity",
    "positional_curves",
    "positional_heatmap",
    "query_key_figure",
    "role_figure",
    "rollout_from_average",
    "rollout_heatmap",
    "sampling_figure",
    "sinusoidal_table",
    "spearman",
    "surprisal_chart",
    "unique_labels",
]

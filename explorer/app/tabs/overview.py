"""The All heads tab: every head of the chosen kind at once (one tiled heatmap: rows are layers, columns heads), each
tile labelled with the head's strongest role on this sentence, switched-off heads faded; a click on a tile opens
that head below (and sets the page's layer and head).

Shapes: L layers, H heads, Tq x Tk per tile, pooled to the tile's pixels (viz.overview_tiles) so a 1,024-token grid
stays a few hundred kB.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import numpy as np

from ... import viz
from ..page.head_labels import clicked_tile
from ..run.attention_maps import MeasuredLayers, heads_on, row_layers, value_name
from ..run.chosen_head import ATTENTION, head_figure
from ..run.figures import Reduction, RunFigure
from ..run.pair import Comparison
from ..run.role_labels import text_scores, tile_notes
from ..run.view import KIND_TITLES, View
from ..serving.handlers import PRIVATE
from .base import Tab, Wiring

# gr.Plot has no click event: the page script listens to plotly_click on the grid and writes "layer,head,time" into a
# hidden textbox whose change event runs on the server (a script-set value fires no input event in Gradio 6; the time
# makes a second click on the same tile a change). Category names carry the numbers ("layer 2 · query …", "head 5 ·
# key …", said in the page's language: "couche 2 · requête …", the number before the first " · "); the gaps between
# tiles are cells too (one image, viz.overview), starting with a zero-width space: their hover label is hidden and a
# click on them ignored.
SCRIPT = """
const isGap = (point) => String(point.x).startsWith('\\u200b') || String(point.y).startsWith('\\u200b');
const bindOverview = () => {
  const plot = document.querySelector('#overview-plot .js-plotly-plot');
  if (!plot || !plot.on || plot.__explorerTileClick) return;
  plot.__explorerTileClick = true;
  plot.on('plotly_hover', (event) => {  // emitted right after the label is drawn, before the next paint
    const point = event && event.points && event.points[0];
    const labels = plot.querySelector('.hoverlayer');
    if (point && labels) labels.style.visibility = isGap(point) ? 'hidden' : '';
  });
  plot.on('plotly_click', (event) => {
    const point = event && event.points && event.points[0];
    if (!point) return;
    const layer = /^\\D*(\\d+) · /.exec(String(point.y));  // "layer 2 · …", "couche 2 · …": in every language
    const head = /^\\D*(\\d+) · /.exec(String(point.x));
    const box = document.querySelector('#overview-click textarea, #overview-click input');
    if (!layer || !head || !box) return;
    box.value = layer[1] + ',' + head[1] + ',' + Date.now();
    box.dispatchEvent(new Event('input', {bubbles: true}));
  });
};
new MutationObserver(bindOverview).observe(document.body, {childList: true, subtree: true});
bindOverview();
"""


@dataclass(frozen=True)
class OverviewInputs:
    tiles: viz.OverviewTiles  # the chosen kind's heads, pooled to the tiles' pixels
    queries: list[str]
    keys: list[str]
    heads_on: np.ndarray | None  # (L, H)
    title: str
    roles: list[list[str]] | None  # (L, H) each head's strongest role on this sentence ("ind .92"), baseline run
    value_name: str = viz.WEIGHT  # what the tiles hold (weights, or value-weighted attention)


def overview_inputs(cmp: Comparison, view: View) -> OverviewInputs:
    """The toggled run's tiles, labelled with each head's role in the baseline (every head on, default masks)."""
    run, b = cmp.toggled, view.row
    layers = row_layers(run, view.kind, b) if view.measure == "weights" else MeasuredLayers(run, view)
    what = "" if view.measure == "weights" else ", weight × |value written|"
    return OverviewInputs(viz.overview_tiles(layers), run.queries[view.kind][b],
                          run.keys[view.kind][b], heads_on(cmp, view.kind),
                          f"All heads: {KIND_TITLES[view.kind]} (sentence {view.sentence}, toggled{what})",
                          tile_notes(text_scores(cmp.baseline, view.kind, b)), value_name(view))


def overview_figure(inp: OverviewInputs) -> Any:
    return viz.draw_overview(inp.tiles, inp.queries, inp.keys, inp.heads_on, title=inp.title, tile_notes=inp.roles,
                             value_name=inp.value_name)


OVERVIEW = Reduction("overview", overview_inputs)


@dataclass
class OverviewParts:
    overview: gr.Plot
    tile_click: gr.Textbox  # the page script writes a clicked tile's "layer,head,time" here
    large: gr.Plot  # the chosen head, large


class OverviewTab(Tab):
    id = "overview"
    title = "All heads"
    result = "overview-plot"
    help = ("Every head at once, to spot the ones that behave differently (rows: layers, columns: heads; switched-off "
            "heads faded). Click a tile to open that "
            "head below. A tile's corner names the head's strongest role on this sentence (score ≥ 0.5; see the "
            "Roles tab).")
    # The grid is sent alone, then the chosen head below it: its 1,024 x 1,024 map would delay the grid in the browser.
    figures = (RunFigure("overview", OVERVIEW, overview_figure, first_look=0, api_order=4),
               RunFigure("large", ATTENTION, head_figure, first_look=1, api_order=5))
    script = SCRIPT

    def layout(self, start: Any) -> OverviewParts:
        overview = gr.Plot(label="All layers × heads", show_label=False, elem_id="overview-plot")
        tile_click = gr.Textbox(visible="hidden", elem_id="overview-click", label="clicked tile")
        large = gr.Plot(label="The chosen head", show_label=False, elem_id="large-plot")
        return OverviewParts(overview, tile_click, large)

    def wire(self, parts: OverviewParts, app: Wiring) -> Any:
        layer, head = app.page.setting("layer"), app.page.setting("head")

        def choose_tile(message: str) -> dict:
            tile = clicked_tile(message)
            return {} if tile is None else {layer: tile[0], head: tile[1]}

        app.add_run(app.then_analyze(parts.tile_click.change(choose_tile, [parts.tile_click], [layer, head],
                                                                 **PRIVATE)))
        return None


TAB = OverviewTab()

"""The behaviour of the Contributions tab: the handler that turns its controls and the page's head switches into a
`ContributionRequest`, computes it (`Compute.contributions`, through spaces.GPU) and draws the result, and the
handler that shows one head's promoted / suppressed tokens (a click on the map, or the head picker) from the kept
result, without running the model. Errors become one message in the status line (`reporting`).

Named event (the HTTP API, docs/contributions.md): /contributions; its parameters are the inputs in
`ContributionEvents.wire` (names from the handler's signature), its results the outputs in order.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import pandas as pd

from .assets import plot
from .compute import Compute
from .errors import AppError
from .handlers import PRIVATE, reporting
from .request import toggles_from, whole_number
from .session import AppContext, get_model
from .ui import Page
from .views.contributions import (DEFAULT_STEPS, ContributionRequest, Contributions, attribution_markdown,
                                  DEFAULT_THRESHOLD, attribution_table, contribution_figures, graph_figure, head_table,
                                  parse_head, summary_markdown)


def graph_threshold(value: Any) -> float:
    """The threshold slider's value as a number (ContributionRequest checks its range)."""
    try:
        return float(DEFAULT_THRESHOLD if value is None or value == "" else value)
    except (TypeError, ValueError):
        raise AppError(f"the graph's threshold must be a number, got {str(value)[:40]!r}") from None


class ContributionEvents:
    """Handlers of the Contributions tab of one page: its components, context, model computations and head
    switches (`groups`: encoder, decoder, cross)."""

    def __init__(self, page: Page, ctx: AppContext, compute: Compute, groups: list[Any]):
        self.page, self.ctx, self.compute, self.groups = page, ctx, compute, groups
        self.status = page.inputs.status
        v = page.views
        self.outputs = [self.status, v.contrib_md, v.contrib_plot, v.contrib_head, v.contrib_head_md,
                        v.contrib_head_df, v.contrib_strip, v.contrib_delta_md, v.contrib_df, v.contrib_graph,
                        v.contrib_result]
        self.head_outputs = [self.status, v.contrib_head, v.contrib_head_md, v.contrib_head_df]
        self.cleared = {v.contrib_md: "", v.contrib_plot: None, v.contrib_head: gr.update(choices=[], value=None),
                        v.contrib_head_md: "", v.contrib_head_df: None, v.contrib_strip: None, v.contrib_delta_md: "",
                        v.contrib_df: None, v.contrib_graph: None, v.contrib_result: None}  # after a model change

    @reporting
    def contributions(self, session, sentence1, position=-1, target_token="", minus_token="",
                      method="integrated_gradients", steps=DEFAULT_STEPS, encoder_heads_on=None,
                      decoder_heads_on=None, cross_heads_on=None, threshold=DEFAULT_THRESHOLD):
        """Where the prediction at `position` of sentence 1 comes from, baseline vs the head switches as set."""
        loaded = get_model(session, self.ctx)
        heads = {"encoder": encoder_heads_on, "decoder": decoder_heads_on, "cross": cross_heads_on}
        toggles = toggles_from(True, True, "none", 0, 0, {k: heads[k] or [] for k in loaded.config.attention_kinds()})
        request = ContributionRequest(str(sentence1 or ""), whole_number(position, -1), str(target_token or ""),
                                      str(minus_token or ""), str(method or "integrated_gradients"),
                                      whole_number(steps, DEFAULT_STEPS), toggles.heads_on,
                                      graph_threshold(threshold))
        result = self.compute.contributions(session, request)
        dla, strip = contribution_figures(result)
        name, headers, rows, head_md = head_table(result, result.strongest_head())
        a_headers, a_rows = attribution_table(result)
        v = self.page.views
        return {self.status: "", v.contrib_md: summary_markdown(result), v.contrib_plot: plot(dla),
                v.contrib_head: gr.update(choices=result.head_choices(), value=name), v.contrib_head_md: head_md,
                v.contrib_head_df: pd.DataFrame(rows, columns=headers), v.contrib_strip: plot(strip),
                v.contrib_delta_md: attribution_markdown(result), v.contrib_df: pd.DataFrame(a_rows, columns=a_headers),
                v.contrib_graph: plot(graph_figure(result)), v.contrib_result: result}

    @reporting
    def head(self, choice, result):
        """One head's promoted and suppressed tokens (a clicked cell's "kind|layer|head|stamp" or a picker value)."""
        if not isinstance(result, Contributions) or (choice or "").startswith("mlp|"):
            return {}  # nothing attributed yet, or an MLP cell: no head to show
        if parse_head(result, choice) is None and "|" in (choice or ""):
            return {}  # a message the page script did not write
        name, headers, rows, md = head_table(result, choice)
        v = self.page.views
        return {self.status: "", v.contrib_head: name, v.contrib_head_md: md,
                v.contrib_head_df: pd.DataFrame(rows, columns=headers)}

    def wire(self) -> None:
        """The named event first (an unnamed one would take its handler's name), then the head table's events."""
        page, i, v = self.page, self.page.inputs, self.page.views
        inputs = [page.session, i.text1, v.contrib_position, v.contrib_token, v.contrib_minus, v.contrib_method,
                  v.contrib_steps, *self.groups, v.contrib_threshold]
        v.contrib_btn.click(self.contributions, inputs, self.outputs, api_name="contributions")
        for box, trigger in ((v.contrib_click, v.contrib_click.change), (v.contrib_head, v.contrib_head.input)):
            trigger(self.head, [box, v.contrib_result], self.head_outputs, **PRIVATE)

    def model_updates(self) -> dict:
        """After a model change: the old model's results cleared."""
        return dict(self.cleared)

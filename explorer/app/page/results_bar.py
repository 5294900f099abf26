"""The bar above the tabs: the state every figure was made with, and sentence 1's output as clickable tokens with the
Download button beside them (explorer.app.export.download). It stays in view while the page scrolls (`#results-bar`
is sticky, assets.CSS), so the output is seen change as switches below it are toggled.

Laid out by page.layout; filled by events.PageEvents from run.result.Analysis (.state, .chips); under them, in the
pinned box, when the toggles changed no output, what the Run measured and a next step (run.unchanged, filled by
page.next_step).
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr


@dataclass
class Results:
    """The top of the results, above the tabs: what every tab's figures were made with and what came out."""

    state: gr.Markdown  # the toggles of the last Run in words (run.state_line), never blank after a Run
    output: gr.HighlightedText  # sentence 1's output as tokens; a click asks "why this token?" (Contributions)
    targets: gr.State  # the run.output_chips.ClickTarget of each item of `output` (None: not clickable)
    download: gr.Button  # the shown tab as one HTML file (explorer.app.export.download)
    download_file: gr.DownloadButton  # in the page but not seen: gets the file, and a script clicks it
    why: gr.Markdown  # toggles that changed no output: what moved, and why (run.unchanged.WhySame); else empty
    step: gr.Button  # the next step it offers (switch off the two heads that matter most), shown when there is one
    step_target: gr.State  # its run.unchanged.NextStep (None: no step)
    said: gr.State  # what the step switched off, said above the next Run's words (then emptied)
    why_row: gr.Row  # `why` and `step`: shown only when there is something to say (an empty row would push the
    #                  first screen's heatmap down by a gap)


# Colours of the output chips' categories (run.output_chips): a changed token stands out from the rest, a candidate
# from the output for every colour vision (explorer.viz.colour_vision; its text also gives its probability).
CHIP_COLOURS = {"output": "#dbeafe", "candidate": "#a5b4fc", "same": "#dbeafe", "changed": "#fde68a"}


def results_bar() -> Results:
    with gr.Column(elem_id="results-bar"):  # one box, pinned at the top of the window as the page scrolls
        state = gr.Markdown(elem_id="state-line")
        with gr.Row(elem_id="results-head", equal_height=True):
            output = gr.HighlightedText(label="Output: click a token to ask why the model chose it", show_label=False,
                                        elem_id="output-tokens", combine_adjacent=False, show_legend=False,
                                        show_inline_category=False, color_map=CHIP_COLOURS, container=False)
            download = gr.Button("⤓ Download", size="sm", scale=0, min_width=90, elem_id="download-view")
            download_file = gr.DownloadButton(visible="hidden", elem_id="download-file")
        # in the pinned box: on a phone the toggle that changed nothing is far down the page, and its why must be
        # in view with the output (shown only then: otherwise the bar stays two short lines)
        with gr.Row(elem_id="why-same-row", equal_height=False, visible=False) as why_row:
            why = gr.Markdown(elem_id="why-same")
            step = gr.Button("Switch off the 2 heads that matter most", size="sm", scale=0, min_width=160,
                             visible=False, elem_id="why-step")
    return Results(state, output, gr.State([]), download, download_file, why, step, gr.State(None), gr.State(""),
                   why_row)

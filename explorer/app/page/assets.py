"""What the page carries besides components: its CSS (with the phone layout and the results bar pinned in view), the
Plotly toolbar settings, and its script (on a phone, tick labels that would overlap are hidden; a saved PNG names what
it shows; the display's size and class view, page.display; each tab adds its own, `Tab.script`)."""

from collections.abc import Iterable
from typing import Any

from . import a11y, stream_watchdog
from .display import display_js
from .figure_alt import FIGURE_ALT_CSS, alt_of, figure_alt_js
from .glossary import GLOSS_JS
from .lesson_panel import LESSON_CSS

PLOT_CONFIG = {  # Plotly modebar: the camera button saves a PNG of the figure
    "displaylogo": False,
    "displayModeBar": True,
    "toImageButtonOptions": {"format": "png", "scale": 2},
    "modeBarButtonsToRemove": ["select2d", "lasso2d"],
    "responsive": True,  # redraw at the new width when the page reflows (window resize)
}


def plot(fig: Any) -> Any:
    """A figure for gr.Plot with the toolbar config (PNG download) and its text alternative (page.figure_alt)
    attached: its JSON, made in one walk without copying the figure (a PlotData: plain data, so it may come from a GPU
    worker, explorer.app.serving.compute)."""
    from gradio.components.plot import PlotData

    return PlotData(type="plotly", plot=plot_json(fig))


def plot_json(fig: Any) -> str:
    """The JSON text `plot` sends (toolbar config and text alternative): the notebook views draw the same."""
    from ... import viz

    return viz.figure_json(fig, PLOT_CONFIG, alt_of(fig))


# Opening or closing the model panel changes the width of the main column without a window resize event:
# send one after the panel's slide, so responsive plots take their new width.
REFLOW_JS = "() => { setTimeout(() => window.dispatchEvent(new Event('resize')), 350); }"
# On a phone a heatmap has less room than its tick labels were spaced for (explorer.viz.common.category_ticks
# assumes a desktop width): after each draw of a plot, hide every tick label that would overlap the last one shown on
# its axis (their boxes on screen; the hover still names every cell). Screens wider than 640 px are left as drawn.
TICKS_JS = """
() => {
  const narrow = window.matchMedia('(max-width: 640px)');
  const overlap = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const thin = (plot) => {
    for (const axis of plot.querySelectorAll('.xaxislayer-above, .yaxislayer-above')) {
      let last = null;
      for (const label of axis.querySelectorAll('text')) {
        label.style.visibility = '';
        if (!narrow.matches) continue;
        const box = label.getBoundingClientRect();
        if (!box.width) continue;
        if (last && overlap(box, last)) label.style.visibility = 'hidden';
        else last = box;
      }
    }
  };
  const bind = () => {
    for (const plot of document.querySelectorAll('.js-plotly-plot')) {
      if (!plot.on || plot.__explorerTicks) continue;
      plot.__explorerTicks = true;
      plot.on('plotly_afterplot', () => thin(plot));
      thin(plot);
    }
  };
  new MutationObserver(bind).observe(document.body, {childList: true, subtree: true});
  bind();
}
"""


# A figure saved with the camera button says what it shows: the model, sentence 1 and the toggles of the last Run go
# into its title for the PNG alone. Plotly's toImage copies the figure's layout when the button's handler runs, so the
# title is changed just before (a listener that runs first) and put back just after; the page does not redraw.
SAVE_TITLE_JS = """
document.addEventListener('click', (event) => {
  const button = event.target.closest && event.target.closest('.modebar-btn[data-title^="Download plot"]');
  const gd = button && button.closest('.js-plotly-plot');
  if (!gd || !gd.layout) return;
  const text = (selector) => ((document.querySelector(selector) || {}).innerText || '').trim();
  const field = document.querySelector('#text1 textarea');
  const sentence = field ? field.value.trim() : '';
  const context = [text('#headline').split(' · ')[0], sentence && '“' + sentence.slice(0, 80) + '”',
                   text('#state-line p')].filter(Boolean).join(' · ');  // its first line: the toggles
  const old = gd.layout.title;
  const title = (old && old.text !== undefined ? old.text : old) || '';
  const escaped = context.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  gd.layout.title = Object.assign({}, typeof old === 'object' ? old : {},
                                  {text: title + '<br><sup>' + escaped + '</sup>'});
  document.body.dataset.savedTitle = gd.layout.title.text;
  setTimeout(() => { gd.layout.title = old; }, 0);
}, true);
"""


def click_to_box_js(plot: str, box: str, message: str) -> str:
    """Page JavaScript (a tab's `script`): a click on a point of the Plotly figure in element `plot` writes
    `message(point)` (a JS function; null for a point that says nothing) with a time stamp into the hidden textbox
    `box`, whose change event the server handles (gr.Plot has no click event; the stamp makes a second click on the
    same point a change)."""
    return f"""(() => {{
  const message = {message};
  const bind = () => {{
    const plot = document.querySelector('{plot} .js-plotly-plot');
    if (!plot || !plot.on || plot.__explorerClickTo) return;
    plot.__explorerClickTo = true;
    plot.on('plotly_click', (event) => {{
      const point = event && event.points && event.points[0];
      const text = point ? message(point) : null;
      const field = document.querySelector('{box} textarea, {box} input');
      if (!text || !field) return;
      field.value = text + '|' + Date.now();
      field.dispatchEvent(new Event('input', {{bubbles: true}}));
    }});
  }};
  new MutationObserver(bind).observe(document.body, {{childList: true, subtree: true}});
  bind();
}})();"""


def page_js(tabs: Iterable[Any]) -> str:
    """The page's one script (Gradio takes one function): the tick thinning, the display's size and view
    (`display.display_js`), each figure's words and table and the live regions (`figure_alt.figure_alt_js`), the
    glossary's (`glossary.GLOSS_JS`: the jargon of every output glossed) and each tab's
    own (`Tab.script`), each in its own scope."""
    parts = [a11y.JS.strip(), stream_watchdog.MARK_JS, f"({TICKS_JS.strip()})();", SAVE_TITLE_JS.strip(), f"{{ {display_js().strip()} }}",
             f"{{ {figure_alt_js().strip()} }}",
             f"{{ {GLOSS_JS.strip()} }}",
             *(f"{{ {t.script.strip()} }}" for t in tabs if t.script)]
    return "() => {\n" + "\n".join(parts) + "\n}"


CSS = """
.gradio-container {max-width: 1600px !important}
#title {align-items: center; flex-wrap: wrap}
#title-text {min-width: max-content !important} #headline {min-width: 200px !important}  /* wrap, never crush */
#title-text h1 {margin: 0 0 0 12px; font-size: 24px}
#title {gap: 8px !important}  /* the title row in one line at 1280 px, the headline on two or three */
#page-size {flex: 0 1 140px !important; min-width: 130px !important}
#page-lang {flex: 0 1 110px !important; min-width: 100px !important}
#headline p {margin: 0; font-size: 13px; color: #555; text-align: right}
.intro p {margin: 0; font-size: 13px}
.examples {margin-top: 2px}
#status {min-height: 1.2em}
th.glossed {text-decoration: underline dotted; cursor: help}  /* a header with jargon: its gloss on hover */
/* A Run's timer shows on the status line alone (events.run_progress): room for it while it runs; Gradio gives the
   minimal tracker no height, which hid the timer. */
#status:has([data-testid="status-tracker"].wrap:not(.hide)) {min-height: 56px}
#status [data-testid="status-tracker"].minimal {height: 100% !important; overflow: visible !important}
#controls .block {padding: 6px !important}
.heads .wrap {display: grid !important; grid-template-columns: repeat(auto-fill, minmax(60px, 1fr));
             gap: 2px !important}
.heads label {padding: 2px 4px !important; gap: 4px !important; font-size: 11px !important; min-height: 0 !important;
              margin: 0 !important; white-space: nowrap; overflow: visible}
.heads label input {width: 12px !important; height: 12px !important; margin: 0 !important; flex: none}
.heads label span {margin-left: 0 !important}  /* Gradio's 8 px beside the gap cut "L0 H0" to "L0 H(" at 4 a row */
.tab-text p {margin: 0 0 4px 0; font-size: 13px; color: #444}
/* the results bar (results_bar.py): the state line and the output tokens in two short lines above the tabs, pinned
   at the top of the window as the page scrolls (the switches it reacts to are left of it, or below it on a phone) */
#views-col {gap: 4px !important}
#results-bar {position: sticky; top: 0; z-index: 1100; background: var(--body-background-fill); gap: 2px !important;
              padding: 2px 0 !important}
#state-line {padding: 0 !important}
#state-line p {margin: 0; font-size: 13px; font-weight: 600}
#state-line p + p {font-weight: normal; font-size: 12px; color: #555}  /* the "2·2" note */
#output-tokens, #output-tokens .container {padding: 0 !important}
#output-tokens .textfield {padding: 0 !important; line-height: 1.2}
#output-tokens .token {padding: 0 4px !important; margin: 1px !important; font-size: 13px}
#output-tokens .token.highlighted {cursor: pointer}
#views button[role="tab"] {padding-left: 6px !important; padding-right: 6px !important}  /* more tabs per row */
/* the Download button (export/download.py) beside the output tokens, as tall as its text */
#results-head {align-items: flex-start !important; flex-wrap: nowrap !important; gap: 6px !important}
#download-view {flex: none !important; align-self: flex-start; min-width: 0 !important; white-space: nowrap;
                padding: 0 8px !important; font-size: 12px !important; line-height: 16px !important;
                min-height: 0 !important; height: auto !important}
/* A phone (portrait, < 640 px): the figures right after the first sentence and Run, the controls after them. The
   rows holding the inputs and the controls + figures give their children to the page's column (display: contents),
   where `order` places them; the desktop layout is untouched. (Gradio prefixes every selector here with
   ".gradio-container .contain ".) */
@media (max-width: 640px) {
  /* the page's column (its padding, 32 px a side, is Gradio's, outside what this CSS can reach) takes 24 px more */
  .column:has(> #inputs) {margin: 0 -24px !important; gap: 8px !important}  /* its items, flattened below */
  #title {flex-wrap: wrap !important; gap: 2px !important}
  #title-text, #headline {flex: 1 1 100% !important}
  #title-text h1 {font-size: 20px !important; margin-left: 32px !important}
  #headline p {font-size: 12px; line-height: 1.3; text-align: left; margin-left: 32px}
  .intro p {font-size: 12px}
  /* ... and so do the figures' column, the tabs, the shown tab and the controls: the output (pinned), the tab strip
     and the tab's first figures, then the head switches and masks, then the view's pickers, then the Attention tab's
     long tables (after its first row of figures), the examples, the second sentence */
  #inputs, #workspace, #sentence1-col, #views-col, #controls, #views,
  #views > .tabitem:not([style*="none"]), #views > .tabitem > .column {display: contents !important}
  #text1 {order: 1}
  #run {order: 2}
  #status, #link-notice, #link-url {order: 3}
  #results-bar {order: 4; box-shadow: 0 3px 3px -2px rgba(0, 0, 0, 0.12)}
  #why-same-row {flex-wrap: wrap !important}  /* in the pinned bar (results_bar.py): the words, then the button */
  #why-same {min-width: 100% !important; max-height: 168px; overflow-y: auto}  /* pinned: a fifth of the screen */
  #why-same p {font-size: 13px}
  #more, #views .tab-wrapper, #views > .tabitem > .column > * {order: 5}
  #heads-group {order: 6}
  #masks-group {order: 7}
  #view-group, #lm-controls {order: 8}
  #views > .tabitem > .column > .row:has(#head-plot) ~ * {order: 9}
  /* the switches right under the chosen head's heatmap, the mask figure after the masks: a square map of a 24-token
     sentence is 750 px tall at a phone's width, and the switches stay within two screens */
  #views > .tabitem > .column > .row:has(#head-plot) {display: contents !important}
  #head-plot {order: 5} #mask-plot {order: 7}
  #ex1 {order: 10}
  #sentence2-col {order: 11}
  /* figures side by side on a desktop: one under the other */
  #views .row {flex-wrap: wrap !important}
  #views .row > .block {min-width: 100% !important}
  /* every tab (tabs.TABS): one row that scrolls sideways, not several rows above the figure */
  #views .tab-container {flex-wrap: nowrap !important; overflow-x: auto; scrollbar-width: none}
  #views .tab-container button[role="tab"] {flex: none}
  /* the Circuit tab's graph (a column per layer part) keeps a readable width and scrolls sideways */
  #circuit-graph {overflow-x: auto}
  #circuit-graph > div {min-width: 720px}
  .tab-text p {font-size: 12px}
  #state-line p {font-size: 12px}
  /* the title row's menu and buttons in one row (a projector's size is of no use on a phone) */
  #page-size {display: none !important}
  /* the Lessons menu on a line of its own: squeezed beside them it showed two letters ("Le" of "Lektionen") */
  #lessons {flex: 1 1 100% !important; min-width: 0 !important}
  /* the language menu's padding trimmed (26 px high, still a 24 px target): the Lessons line above cost the room */
  #page-lang .wrap-inner {padding: 1px 8px !important}
  #class-view, #copy-link {flex: none !important; min-width: 0 !important; padding: 0 8px !important;
                           white-space: nowrap}
  #output-tokens .token {font-size: 12px}
  /* an empty status line takes no room on a phone (it shows again for a message or a Run's timer) */
  #status:not(:has(p)):not(:has([data-testid="status-tracker"].wrap:not(.hide))) {display: none !important}
  /* the head switches: each layer starts a row (heads-<H>: H heads per layer) */
  .heads-1 .wrap > label:nth-child(1n+1) {grid-column-start: 1}
  .heads-2 .wrap > label:nth-child(2n+1) {grid-column-start: 1}
  .heads-3 .wrap > label:nth-child(3n+1) {grid-column-start: 1}
  .heads-4 .wrap > label:nth-child(4n+1) {grid-column-start: 1}
  .heads-5 .wrap > label:nth-child(5n+1) {grid-column-start: 1}
  .heads-6 .wrap > label:nth-child(6n+1) {grid-column-start: 1}
  .heads-7 .wrap > label:nth-child(7n+1) {grid-column-start: 1}
  .heads-8 .wrap > label:nth-child(8n+1) {grid-column-start: 1}
  .heads-9 .wrap > label:nth-child(9n+1) {grid-column-start: 1}
  .heads-10 .wrap > label:nth-child(10n+1) {grid-column-start: 1}
  .heads-11 .wrap > label:nth-child(11n+1) {grid-column-start: 1}
  .heads-12 .wrap > label:nth-child(12n+1) {grid-column-start: 1}
  .heads-13 .wrap > label:nth-child(13n+1) {grid-column-start: 1}
  .heads-14 .wrap > label:nth-child(14n+1) {grid-column-start: 1}
  .heads-15 .wrap > label:nth-child(15n+1) {grid-column-start: 1}
  .heads-16 .wrap > label:nth-child(16n+1) {grid-column-start: 1}
  .heads-17 .wrap > label:nth-child(17n+1) {grid-column-start: 1}
  .heads-18 .wrap > label:nth-child(18n+1) {grid-column-start: 1}
  .heads-19 .wrap > label:nth-child(19n+1) {grid-column-start: 1}
  .heads-20 .wrap > label:nth-child(20n+1) {grid-column-start: 1}
  .heads-21 .wrap > label:nth-child(21n+1) {grid-column-start: 1}
  .heads-22 .wrap > label:nth-child(22n+1) {grid-column-start: 1}
  .heads-23 .wrap > label:nth-child(23n+1) {grid-column-start: 1}
  .heads-24 .wrap > label:nth-child(24n+1) {grid-column-start: 1}
  .heads-25 .wrap > label:nth-child(25n+1) {grid-column-start: 1}
  .heads-26 .wrap > label:nth-child(26n+1) {grid-column-start: 1}
  .heads-27 .wrap > label:nth-child(27n+1) {grid-column-start: 1}
  .heads-28 .wrap > label:nth-child(28n+1) {grid-column-start: 1}
  .heads-29 .wrap > label:nth-child(29n+1) {grid-column-start: 1}
  .heads-30 .wrap > label:nth-child(30n+1) {grid-column-start: 1}
  .heads-31 .wrap > label:nth-child(31n+1) {grid-column-start: 1}
  .heads-32 .wrap > label:nth-child(32n+1) {grid-column-start: 1}
  .js-plotly-plot .gtitle {font-size: 12px !important}
}
"""
CSS += LESSON_CSS  # the lesson panel and the Lessons menu (page.lesson_panel)
CSS += FIGURE_ALT_CSS  # each figure's words and table (page.figure_alt)
CSS += a11y.CSS  # the skip link, the focus outline, text of 12 px at least (page.a11y)
CSS += stream_watchdog.CSS  # the watchdog's button, hidden (page.stream_watchdog)

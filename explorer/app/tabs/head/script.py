"""The Inside a head tab's page script: a click on a query (a row of the Attention tab's heatmap, a query of the lines
view or of the query-key map) is sent to the server through the hidden #head-click box (tab.HeadClick parses it); the
steps' button to a query with masked keys through the hidden #head-masked box (masked.parse_target)."""

from ....viz.head_view import FOCUS_ON_CLICK_JS

# A click on a row of the Attention tab's heatmap (#head-plot), on a query of the lines view or of the query-key map
# writes "kind|layer|head|query|stamp" into #head-click (kind, layer, head: the page's controls at the click).
SCRIPT = """
const headControl = (id) => { const el = document.querySelector('#' + id + ' input'); return el ? el.value : ''; };
const sendQuery = (query) => {
  const box = document.querySelector('#head-click textarea, #head-click input');
  if (!box || !(query >= 0)) return;
  box.value = [headControl('kind'), headControl('layer'), headControl('head'), query, Date.now()].join('|');
  box.dispatchEvent(new Event('input', {bubbles: true}));
};
const nameOf = (trace) => (trace.meta && trace.meta.en_name) || trace.name;  // its English name in every language
const bindQueries = (selector, queryOf, also) => {
  const plot = document.querySelector(selector + ' .js-plotly-plot');
  if (!plot || !plot.on || plot.__explorerQueryClick) return;
  plot.__explorerQueryClick = true;
  if (also) also(plot);
  plot.on('plotly_click', (event) => {
    const point = event && event.points && event.points[0];
    if (point) sendQuery(queryOf(point, plot));
  });
};
const bindHeadPlots = () => {
  bindQueries('#head-plot', (point, plot) => {  // the Attention tab's heatmap: the row's position
    const main = (plot.data || []).find((t) => nameOf(t) === 'weights');
    return main && main.y ? Array.prototype.indexOf.call(main.y, point.y) : -1;
  });
  bindQueries('#head-lines-plot', (point) => nameOf(point.data) === 'queries' ? point.customdata : -1, FOCUS);
  bindQueries('#head-qk-plot',
              (point) => nameOf(point.data) === 'queries' && point.customdata ? point.customdata[1] : -1);
};
// The steps' button to a query with masked keys (masked.py): its kind sent through the hidden #head-masked box.
if (!window.__explorerHeadMasked) document.addEventListener('click', (event) => {
  window.__explorerHeadMasked = true;
  const go = event.target.closest && event.target.closest('[data-head-masked]');
  const box = document.querySelector('#head-masked textarea, #head-masked input');
  if (!go || !box) return;
  box.value = go.dataset.headMasked + '|' + Date.now();
  box.dispatchEvent(new Event('input', {bubbles: true}));
});
new MutationObserver(bindHeadPlots).observe(document.body, {childList: true, subtree: true});
bindHeadPlots();
""".replace("FOCUS", FOCUS_ON_CLICK_JS.strip())

"""The Features tab's page script: a click on a cell of the tokens x latents heatmap opens that latent's dashboard
(the tab's hidden box gets "latent|time", FeatureEvents.clicked reads it).
"""

# gr.Plot has no click event: a click on a heatmap cell writes "latent|time" into a hidden textbox (the column's
# category is "latent 12", explorer.viz.latents; the time makes a second click on one latent a change).
SCRIPT = """
const bindFeatures = () => {
  const plot = document.querySelector('#features-heatmap .js-plotly-plot');
  if (!plot || !plot.on || plot.__explorerLatentClick) return;
  plot.__explorerLatentClick = true;
  plot.on('plotly_click', (event) => {
    const point = event && event.points && event.points[0];
    const latent = point && /^latent (\\d+)$/.exec(String(point.x));
    const box = document.querySelector('#features-click textarea, #features-click input');
    if (!latent || !box) return;
    box.value = latent[1] + '|' + Date.now();
    box.dispatchEvent(new Event('input', {bubbles: true}));
  });
};
new MutationObserver(bindFeatures).observe(document.body, {childList: true, subtree: true});
bindFeatures();
"""

"""The page's shared parts, those every tab sits among: the layout (`layout`: the model panel, the sentences, the
controls, the results bar, the tab strip), what the page carries besides components (`assets`), the head switches
and their labels, the model panel, the Sample settings, the lessons menu, what a model change resets
(`model_events`), and two fixes for Gradio (`gradio_fixes`, `idle_timers`)."""

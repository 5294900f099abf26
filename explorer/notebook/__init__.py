"""The explorer in a Jupyter notebook, offline: the page's views of a model already in memory, drawn inline with the
plotly.js shipped inside the plotly package (nothing is fetched from the internet).

    explorer.notebook.show(model, "text", heads_off=[(0, 1)])   # the attention overview, one head, the mask, the output
    explorer.notebook.switches(model, "text")                   # a widget: head switches, masks, view; reruns in place
    explorer.notebook.why(model, "text")                        # "why this token?" with the head switches
    explorer.notebook.inside_head(model, "text")                # one head step by step
    explorer.notebook.app(model)                                # the full page for the model in memory

`model` is a LoadedModel (explorer.load, explorer.from_transformers), a shipped checkpoint's name, or a live
`transformers` model (then `tokenizer=` too). Every view's numbers are on its `.data`. Names are imported lazily:
the views import the app's run code (and with it Gradio) only when first used.
"""

from ..lazy import lazy_getattr

_EXPORTS = {
    "show": "explorer.notebook.static",
    "switches": "explorer.notebook.run_widget",
    "why": "explorer.notebook.why",
    "inside_head": "explorer.notebook.head",
    "app": "explorer.notebook.serve",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr(__name__, _EXPORTS)

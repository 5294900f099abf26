"""The Gradio app (docs/architecture.md is its map):

    demo                 assembles the page: the layout, the events and the tabs (the one module that names TABS)
    events, forms        the shared events (model, Run, opening a tab) and the typed forms every handler takes
    page/                the page's shared parts: the layout, the model panel, the controls, the results bar, assets
    tabs/                one module per tab, or a package for a tab with modules of its own (features/, head/, ...)
    run/                 one Run: request, inputs, toggles, the model's runs, baseline vs toggled, the result; what
                         several tabs read of it (readings, role labels, the chosen head)
    link/                a link that reopens a view: its values, its state, its events, the guard for long ones
    serving/             sessions, shared models and kept results within their budgets, every model computation
                         (through spaces.GPU), the caps and the messages a person is told
    export/              the Download: the shown tab as one HTML file, the files within a disk budget

`build_demo(...)` returns the Blocks (imports Gradio only when called).
"""

from .serving.registry import ModelRegistry


def build_demo(*args, **kwargs):
    """Build the app (imports Gradio only when called)."""
    from .demo import build_demo as _build

    return _build(*args, **kwargs)


__all__ = ["ModelRegistry", "build_demo"]

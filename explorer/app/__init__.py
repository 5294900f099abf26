"""The Gradio app (docs/architecture.md is its map):

    page, tabs/          the layout: the shared parts (model panel, sentences, controls) and one module per tab
    events, forms        the shared events (model, Run, opening a tab) and the typed forms every handler takes
    link/                a link that reopens a view: its values, its state, its events, the guard for long ones
    run/                 one Run: request, inputs, toggles, the model's runs, baseline vs toggled, the result
    compute              every model computation, through spaces.GPU
    session, registry    per-session state; shared models within a memory budget; kept results (kept)
    limits, errors       caps and the messages for them; what a person is told when something fails

`build_demo(...)` returns the Blocks (imports Gradio only when called).
"""

from .serving.registry import ModelRegistry


def build_demo(*args, **kwargs):
    """Build the app (imports Gradio only when called)."""
    from .demo import build_demo as _build

    return _build(*args, **kwargs)


__all__ = ["ModelRegistry", "build_demo"]

"""The Gradio app, in rooms with one job each:

    limits, errors       caps and the messages for them; what a person is told when something fails
    registry, session    shared models within a memory budget; per-session state; load / build (build)
    inputs, toggles      text -> ids and readable labels; page settings -> head masks and custom masks
    runs, compare        one model run -> a typed result; baseline vs toggled
    views/               a result -> the figures and tables of each tab
    ui, labels, assets   layout only; "L0 H3" labels at the boundary; CSS and the page script
    events, demo         wiring ({component: value} updates); the whole app

`build_demo(...)` returns the Blocks (imports Gradio only when called).
"""

from .registry import ModelRegistry


def build_demo(*args, **kwargs):
    """Build the app (imports Gradio only when called)."""
    from .demo import build_demo as _build

    return _build(*args, **kwargs)


__all__ = ["ModelRegistry", "build_demo"]

"""The Gradio app: `build_demo(...)` returns the Blocks (layout + wiring in `ui`), the work is done
by plain functions in `handlers`, and shared models live in a `ModelRegistry`.
"""

from .registry import ModelRegistry


def build_demo(*args, **kwargs):
    """Build the app (imports Gradio only when called)."""
    from .ui import build_demo as _build

    return _build(*args, **kwargs)


__all__ = ["ModelRegistry", "build_demo"]

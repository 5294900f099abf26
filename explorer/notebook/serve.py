"""`app(model)`: the full Gradio page for a model already in memory, served from the kernel on 127.0.0.1 and shown
inline (an iframe) or as a link. The page's registry is handed the model itself, pinned (never evicted, never
loaded again), so the page and the notebook share one copy of the weights: nothing is copied or saved.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from ..app.demo import build_demo, launch_kwargs, queue
from ..app.serving.limits import DEFAULT_MODEL_MEMORY
from ..app.serving.registry import ModelRegistry, model_bytes
from ..app.serving.session import Session
from .arguments import loaded_model

NAME = "notebook-model"  # the page's name for the model in memory


@dataclass
class Served:
    """A served page: its `url`, the Gradio `demo`, the `loaded` model it shows; `close()` stops it."""

    url: str
    demo: Any
    loaded: Any
    inline: bool = True
    height: int = 900

    def close(self) -> None:
        self.demo.close()

    def _repr_html_(self) -> str:
        url = html.escape(self.url, quote=True)
        link = f"<p>The explorer for this model: <a href='{url}' target='_blank'>{url}</a></p>"
        if not self.inline:
            return link
        return f"{link}<iframe src='{url}' width='100%' height='{self.height}' style='border:0'></iframe>"


def registry_with(loaded: Any, device: str) -> ModelRegistry:
    """A registry holding `loaded` itself under the page's session key for it, pinned."""
    registry = ModelRegistry(max(DEFAULT_MODEL_MEMORY, 2 * model_bytes(loaded)))
    registry.get(Session(NAME, device).key, lambda: loaded, pin=True)
    return registry


def app(model: Any, *, tokenizer: Any = None, port: int | None = None, inline: bool = True,
        height: int = 900) -> Served:
    """Serve the page for `model` (a LoadedModel, a checkpoint name or a transformers model) on 127.0.0.1 (`port`:
    None = a free one); shown inline as an iframe (`inline=False`: a link)."""
    loaded = loaded_model(model, tokenizer)
    device = "cpu" if loaded.model.device.type == "cpu" else "auto"
    demo = queue(build_demo(device=device, checkpoint=NAME, registry=registry_with(loaded, device)))
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, inline=False, quiet=True,
                show_error=False, **launch_kwargs())
    return Served(demo.local_url, demo, loaded, inline, height)

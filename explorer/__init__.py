"""Transformer Explorer: build or load a Transformer and look inside it.

The model core lives in `explorer.model`; figures in `explorer.viz`; the app in `explorer.app`.
Names are imported lazily so that light modules (tokenizer, data, viz) do not pay for torch.
"""

from .lazy import lazy_getattr

_EXPORTS = {
    "Transformer": "explorer.model",
    "TransformerConfig": "explorer.model",
    "pick_device": "explorer.device",
    "generate": "explorer.outputs.generate",
    "load": "explorer.loading",
    "from_transformers": "explorer.importers.live",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr(__name__, _EXPORTS)

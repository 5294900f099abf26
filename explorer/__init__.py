"""Transformer Explorer: build or load a Transformer and look inside it.

The model core lives in `explorer.model`; figures in `explorer.viz`; the app in `explorer.app`.
"""

from .device import pick_device
from .model import Transformer, TransformerConfig

__all__ = ["Transformer", "TransformerConfig", "pick_device"]

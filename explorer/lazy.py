"""A package's names imported on first use (PEP 562 `__getattr__`): `explorer` keeps light modules free of torch,
`explorer.notebook` keeps the app (and Gradio) out until a view is drawn."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_getattr(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """The module `__getattr__` of `package` that imports each name of `exports` (name -> module) when first read."""

    def __getattr__(name: str) -> Any:
        if name in exports:
            return getattr(import_module(exports[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__

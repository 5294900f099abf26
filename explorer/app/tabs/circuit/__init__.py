"""The Circuit tab (tab.py), its form (forms.py), computation (computation.py) and words and files (text.py)."""

from .tab import TAB

__all__ = ["TAB"]

"""The Inside a head tab: its layout and events (`tab`), its form (`forms`) and its computation (`computation`: one
head step by step on the page's own Run)."""

from .tab import TAB, HeadTab

__all__ = ["TAB", "HeadTab"]

"""The Compare models tab: its layout and events (`tab`), its forms (`forms`) and its computation (`side_by_side`: two
models' Runs on the same sentences)."""

from .tab import TAB, CompareTab

__all__ = ["TAB", "CompareTab"]

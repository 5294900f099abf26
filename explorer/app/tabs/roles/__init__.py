"""The Roles tab: its layout and events (`tab`) and its computation (`scores`: what kind of head each one is)."""

from .tab import TAB, RolesTab

__all__ = ["TAB", "RolesTab"]

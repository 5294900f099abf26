"""The API tab: its text and page script (`tab`), and the page's named endpoints read from the wired page
(`endpoints`: what the tab lists, docs/http-api.md's table, what `gradio_client`'s view_api shows)."""

from .tab import TAB, ApiTab

__all__ = ["TAB", "ApiTab"]

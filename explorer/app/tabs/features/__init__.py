"""The Features tab: its layout and events (`tab`), its forms (`forms`), its computation (`result`, `changed_output`,
`dashboards`), where its SAEs come from (`sae_store`), its words and figures (`text`)."""

from .tab import TAB, FeaturesTab

__all__ = ["TAB", "FeaturesTab"]

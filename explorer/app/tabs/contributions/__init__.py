"""The Contributions tab: its layout and events (`tab`), its form (`forms`), its computation (`result`: the direct
logit attribution and the contribution graph, `token_attribution`, and "why this token?": `why_token`), its words and
figures (`text`)."""

from .tab import TAB, ContributionsTab

__all__ = ["TAB", "ContributionsTab"]

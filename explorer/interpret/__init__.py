"""What each head does: head roles (explorer.interpret.roles) and the logit lens (explorer.interpret.lens).

Functions on a model's returned attention and hidden states; they run the model only through its
forward pass and store nothing on it.
"""

from .lens import LogitLens, lens_logits, logit_lens, unembed
from .roles import (DEFAULT_WINDOW, ROLES, RepeatedTokens, head_mask_without, head_roles, probe_vocabulary,
                    repeated_tokens, role_patterns, role_scores, top_heads)

__all__ = [
    "DEFAULT_WINDOW", "LogitLens", "ROLES", "RepeatedTokens", "head_mask_without", "head_roles", "lens_logits",
    "logit_lens", "probe_vocabulary", "repeated_tokens", "role_patterns", "role_scores", "top_heads", "unembed",
]

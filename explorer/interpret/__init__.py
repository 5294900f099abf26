"""What each head does: head roles (explorer.interpret.roles), the repeated-token probe
(explorer.interpret.probe), the logit lens (explorer.interpret.lens) and activation patching
(explorer.interpret.patching); where a prediction comes from: token attribution
(explorer.interpret.attribution).

Functions on a model's returned attention and hidden states; they run the model only through its
forward pass and store nothing on it.
"""

from .attribution import TokenAttribution, token_attribution
from .lens import LogitLens, lens_logits, logit_lens, unembed
from .patching import Patching, activation_patching
from .probe import CopyLosses, RepeatedTokens, copy_losses, probe_vocabulary, repeated_tokens
from .roles import DEFAULT_WINDOW, ROLES, head_mask_without, head_roles, role_patterns, role_scores, top_heads

__all__ = [
    "CopyLosses", "DEFAULT_WINDOW", "LogitLens", "Patching", "ROLES", "RepeatedTokens", "TokenAttribution",
    "activation_patching", "copy_losses", "head_mask_without", "head_roles", "lens_logits", "logit_lens",
    "probe_vocabulary", "repeated_tokens", "role_patterns", "role_scores", "token_attribution", "top_heads", "unembed",
]

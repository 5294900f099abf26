"""What each head does: head roles (explorer.interpret.roles), the repeated-token probe
(explorer.interpret.probe), the logit lens (explorer.interpret.lens) and activation patching
(explorer.interpret.patching); where a prediction comes from: direct logit attribution and each head's
promoted / suppressed tokens (explorer.interpret.dla), value-weighted attention
(explorer.interpret.value_weighted), token attribution (explorer.interpret.attribution), the contribution graph
of Information Flow Routes (explorer.interpret.flow); sparse autoencoders, latent switches and contrast steering
(explorer.interpret.sae, imported on its own); how one head computes (explorer.interpret.head_computation)
and its queries and keys in one picture (explorer.interpret.query_key).

Functions on a model's returned attention and hidden states; they run the model only through its
forward pass and store nothing on it.
"""

from .dla import (HeadTokens, LogitAttribution, ResidualParts, direct_logit_attribution, direction_tokens,
                  head_tokens, residual_parts)
from .attribution import TokenAttribution, token_attribution
from .flow import (ContributionGraph, FlowEdge, FlowNode, NodeShares, contribution_graph,
                   proximity_shares)
from .head_computation import (BlockCapture, HeadComputation, HeadComputationPair, block_sites, capture_block,
                               capture_from_record, head_computation, head_computation_pair)
from .lens import LogitLens, lens_logits, logit_lens, unembed
from .patching import Patching, activation_patching
from .query_key import QueryKeyMap, query_key_map
from .probe import CopyLosses, RepeatedTokens, copy_losses, probe_vocabulary, repeated_tokens
from .roles import DEFAULT_WINDOW, ROLES, head_mask_without, head_roles, role_patterns, role_scores, top_heads
from .value_weighted import head_value_norms, value_norms, value_weighted, value_weighted_attention

__all__ = [
    "BlockCapture", "HeadComputation", "HeadComputationPair", "block_sites", "capture_block", "capture_from_record",
    "head_computation",
    "head_computation_pair", "QueryKeyMap", "query_key_map",
    "ContributionGraph", "CopyLosses", "DEFAULT_WINDOW", "FlowEdge", "FlowNode", "HeadTokens", "LogitAttribution",
    "LogitLens", "NodeShares", "Patching", "ROLES", "RepeatedTokens", "ResidualParts", "TokenAttribution",
    "activation_patching", "contribution_graph", "copy_losses", "direct_logit_attribution", "direction_tokens",
    "head_mask_without",
    "head_roles", "head_tokens", "head_value_norms", "lens_logits", "logit_lens", "probe_vocabulary",
    "proximity_shares", "repeated_tokens", "residual_parts", "role_patterns", "role_scores", "token_attribution",
    "top_heads", "unembed", "value_norms", "value_weighted", "value_weighted_attention",
]

"""What each head does: head roles (explorer.interpret.roles), the repeated-token probe
(explorer.interpret.probe), the logit lens (explorer.interpret.lens) and activation patching
(explorer.interpret.patching); where a prediction comes from: direct logit attribution and each head's
promoted / suppressed tokens (explorer.interpret.dla), value-weighted attention
(explorer.interpret.value_weighted), token attribution (explorer.interpret.attribution), the contribution graph
of Information Flow Routes (explorer.interpret.flow); sparse autoencoders, latent switches and contrast steering
(explorer.interpret.sae, imported on its own); how one head computes (explorer.interpret.head_computation), worked
through for a few keys (explorer.interpret.head_steps), and its queries and keys in one picture
(explorer.interpret.query_key); why this token: every head's exact effect on it when switched off, alone or in pairs
(explorer.interpret.head_effects); circuits over a task of prompt pairs: every edge scored by EAP or EAP-IG, the
circuit kept and its faithfulness (explorer.interpret.circuits).

Functions on a model's returned attention and hidden states; they run the model only through its
forward pass and store nothing on it.
"""

from .dla import (HeadTokens, LogitAttribution, ResidualParts, direct_logit_attribution, direction_tokens,
                  head_tokens, residual_parts)
from .attribution import TokenAttribution, token_attribution
from .circuits import Circuit, circuit_faithfulness, find_circuit
from .flow import (ContributionGraph, FlowEdge, FlowNode, NodeShares, contribution_graph,
                   proximity_shares)
from .head_computation import (BlockCapture, HeadComputation, HeadComputationPair, block_sites, capture_block,
                               capture_from_record, head_computation, head_computation_pair)
from .head_effects import (Effects, Head, RoleHead, TokenEffects, effects_of, head_effects, pair_effects, regenerate,
                           role_heads_by_effect, why_token)
from .head_steps import KeyStep, WorkedExample, worked_example
from .lens import LogitLens, lens_logits, logit_lens, unembed
from .patching import Patching, activation_patching
from .query_key import QueryKeyMap, query_key_map
from .probe import CopyLosses, RepeatedTokens, copy_losses, probe_vocabulary, repeated_tokens
from .roles import DEFAULT_WINDOW, ROLES, head_mask_without, head_roles, role_patterns, role_scores, top_heads
from .value_weighted import head_value_norms, value_norms, value_weighted, value_weighted_attention

__all__ = [
    "BlockCapture", "Circuit", "ContributionGraph", "CopyLosses", "DEFAULT_WINDOW", "Effects", "FlowEdge", "FlowNode",
    "Head", "HeadComputation", "HeadComputationPair", "HeadTokens", "KeyStep", "LogitAttribution", "LogitLens",
    "NodeShares", "Patching", "QueryKeyMap", "ROLES", "RepeatedTokens", "ResidualParts", "RoleHead", "TokenAttribution",
    "TokenEffects", "WorkedExample",
    "activation_patching", "block_sites", "capture_block", "capture_from_record", "circuit_faithfulness",
    "contribution_graph", "copy_losses",
    "direct_logit_attribution", "direction_tokens", "effects_of", "find_circuit", "head_computation",
    "head_computation_pair",
    "head_effects", "head_mask_without", "head_roles", "head_tokens", "head_value_norms", "lens_logits", "logit_lens",
    "pair_effects", "probe_vocabulary", "proximity_shares", "query_key_map", "regenerate", "repeated_tokens",
    "residual_parts", "role_heads_by_effect", "role_patterns", "role_scores", "token_attribution", "top_heads",
    "unembed", "value_norms", "value_weighted", "value_weighted_attention", "why_token", "worked_example",
]

"""T5's relative position bias: a learned number per head and per bucket of signed distance, added to
every self-attention score of a stack (positional="relative"). No position is added to the embeddings.

Distance = key position - query position. Half of the buckets hold exact small distances, the other
half logarithmically wider ranges up to `max_distance`, beyond which all distances share the last
bucket. Bidirectional (encoder): positive and negative distances get separate halves of the buckets.
Causal (decoder): only keys at or before the query exist, so only distances <= 0 are bucketed.

Shapes: H heads, T query length, S key length, N buckets.
    relative_buckets(distance (T, S), bidirectional, N, max_distance) -> (T, S) long in [0, N)
    RelativePositionBias(N, max_distance, H, bidirectional)(T, S, offset)  -> (1, H, T, S) added to q.k
    (queries at positions offset..offset+T-1: the new tokens of a cached decoding step; keys at 0..S-1)
The bias is computed once per run of a stack and shared by all its layers (one table per stack,
T5's `relative_attention_bias` of block 0); cross-attention gets none.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def relative_buckets(distance: Tensor, bidirectional: bool, n_buckets: int, max_distance: int) -> Tensor:
    """Bucket of each signed distance (key - query), as transformers' T5Attention._relative_position_bucket."""
    buckets = torch.zeros_like(distance)
    if bidirectional:
        n_buckets //= 2
        buckets += (distance > 0).long() * n_buckets  # keys after the query: the upper half
        distance = distance.abs()
    else:
        distance = -distance.clamp(max=0)  # keys at or before the query; later keys are masked anyway
    exact = n_buckets // 2
    is_small = distance < exact
    # log-spaced buckets from `exact` up to max_distance (float log of 0 is never used: masked by is_small)
    large = exact + (torch.log(distance.float() / exact) / math.log(max_distance / exact)
                     * (n_buckets - exact)).long()
    large = large.clamp(max=n_buckets - 1)
    return buckets + torch.where(is_small, distance, large)


class RelativePositionBias(nn.Module):
    def __init__(self, n_buckets: int, max_distance: int, n_heads: int, bidirectional: bool):
        super().__init__()
        self.table = nn.Embedding(n_buckets, n_heads)  # (N, H): T5's relative_attention_bias
        self.max_distance = max_distance
        self.bidirectional = bidirectional

    def buckets(self, query_length: int, key_length: int, device: torch.device | None = None,
                query_offset: int = 0) -> Tensor:
        query = torch.arange(query_offset, query_offset + query_length, device=device)[:, None]  # (T, 1)
        key = torch.arange(key_length, device=device)[None, :]  # (1, S)
        return relative_buckets(key - query, self.bidirectional, self.table.num_embeddings, self.max_distance)

    def forward(self, query_length: int, key_length: int, query_offset: int = 0) -> Tensor:
        """-> (1, H, T, S) bias of every (query, key) pair. Positions are column indices, so a left-padded
        row has the same distances between its real tokens as the unpadded one."""
        values = self.table(self.buckets(query_length, key_length, self.table.weight.device,
                                         query_offset))  # (T, S, H)
        return values.permute(2, 0, 1)[None]  # (1, H, T, S)

    def by_distance(self, distances: Tensor) -> Tensor:
        """(K,) signed distances (key - query) -> (H, K) the bias each head adds at that distance."""
        return self.table(relative_buckets(distances.to(self.table.weight.device), self.bidirectional,
                                           self.table.num_embeddings, self.max_distance)).T  # (H, K)

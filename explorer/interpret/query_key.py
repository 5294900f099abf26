"""Queries and keys of one head in one picture (AttentionViz: Yeh, Chen, Wu, Viégas and Wattenberg, "AttentionViz: A
Global View of Transformer Attention", IEEE VIS 2023, arXiv 2305.03210, its section on normalising the vectors; see
also C. Chen's note https://chenxcynthia.github.io/projects/attention/ on making distance track attention).

The head's queries q_i and keys k_j, as its scores read them (after rotary), of one or more sequences, go into one
space and are projected together to 2-D by PCA of the joint set. Before that, AttentionViz's two changes, neither of
which changes any attention weight:
- scale: queries times c, keys divided by c (every q . k unchanged), c = sqrt(mean |k| / mean |q|), so both sets
  have the same mean length (queries and keys of a head often differ in length by a large factor);
- translate: every key shifted by the same vector t so that the keys' mean is the queries' mean. q_i . (k_j + t) =
  q_i . k_j + q_i . t adds the same number to every score of query i, which the softmax cancels.
Then |q - k|^2 = |q|^2 + |k|^2 - 2 q . k: where lengths are alike, the keys nearest a query are those it scores
highest, the ones it attends to most. Not in the picture: the scale 1/sqrt(Dh) (the same for all) and T5's relative
bias (a position term added to the scores). Padding tokens are left out.

Shapes: Nq queries, Nk keys (over all sequences given), Dh head width.

    query_key_map(captures, head) -> QueryKeyMap: queries (Nq, 2), keys (Nk, 2), the normalised vectors
                                     (Nq, Dh), (Nk, Dh), each point's sequence, position and token id, and each
                                     query's strongest keys (the model's weights)
`captures`: BlockCapture(s) of one block (explorer.interpret.head_computation.capture_block), one per sequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .head_computation import BlockCapture

TOP = 3  # strongest keys kept per query


@dataclass
class QueryKeyMap:
    """One head's queries and keys projected together (see the module docstring); numpy arrays."""

    kind: str
    layer: int
    head: int
    kv_head: int
    queries: np.ndarray  # (Nq, 2) float32 the queries in the joint 2-D projection
    keys: np.ndarray  # (Nk, 2) float32
    query_vectors: np.ndarray  # (Nq, Dh) float32 the queries after the scaling (what the PCA projects)
    key_vectors: np.ndarray  # (Nk, Dh) float32 the keys after the scaling and the translation
    query_sequence: np.ndarray  # (Nq,) int64 which sequence (index into the captures given)
    query_position: np.ndarray  # (Nq,) int64 position in that sequence
    query_ids: np.ndarray  # (Nq,) int64 token ids
    key_sequence: np.ndarray  # (Nk,)
    key_position: np.ndarray  # (Nk,)
    key_ids: np.ndarray  # (Nk,)
    top_keys: np.ndarray  # (Nq, TOP) int64 each query's strongest keys (indices into `keys`; -1: fewer allowed)
    top_weights: np.ndarray  # (Nq, TOP) float32 their weights (the model's)
    allowed: np.ndarray  # (Nq, Nk) bool: key j is of query i's sequence and the block's mask lets i attend to it
    scale: float  # c: queries were multiplied by it, keys divided by it
    shift: np.ndarray  # (Dh,) the translation added to every (scaled) key
    explained: np.ndarray  # (2,) share of the joint set's variance along each axis

    def query_index(self, sequence: int, position: int) -> int:
        """The index into `queries` of the query at `position` of sequence number `sequence`."""
        found = np.flatnonzero((self.query_sequence == sequence) & (self.query_position == position))
        if not len(found):
            raise ValueError(f"no query at position {position!r} of sequence {sequence!r} in this map (padding is "
                             "left out)")
        return int(found[0])

    def nearest_keys(self, query: int, k: int = 1, space: str = "joint") -> np.ndarray:
        """Indices (into `keys`) of the k keys of the same sequence nearest query number `query` (into `queries`)
        that it may attend to (its allowed keys), in the normalised space ("joint") or the 2-D picture ("2d")."""
        if space not in ("joint", "2d"):
            raise ValueError(f"space must be 'joint' or '2d', got {space!r}")
        qs, ks = (self.query_vectors, self.key_vectors) if space == "joint" else (self.queries, self.keys)
        candidates = np.flatnonzero(self.allowed[query])
        distance = np.linalg.norm(ks[candidates] - qs[query], axis=-1)
        return candidates[np.argsort(distance, kind="stable")[:k]]


def query_key_map(captures: BlockCapture | Sequence[BlockCapture], head: int) -> QueryKeyMap:
    """Head `head`'s queries and keys of every capture (one per sequence, same block) in one 2-D picture."""
    captures = [captures] if isinstance(captures, BlockCapture) else list(captures)
    if not captures:
        raise ValueError("query_key_map needs at least one captured sequence")
    first = captures[0]
    if any((c.kind, c.layer, c.n_heads, c.head_dim) != (first.kind, first.layer, first.n_heads, first.head_dim)
           for c in captures):
        raise ValueError("the captures must all be of one block (the same kind and layer of one model)")
    head = first.check_head(head)
    g = first.kv_head(head)
    qs, ks, q_meta, k_meta, allowed_rows, weights = [], [], [], [], [], []
    for s, cap in enumerate(captures):
        real_k = torch.ones(cap.n_keys, dtype=torch.bool) if cap.key_real is None else cap.key_real
        # a query position is padding when it is a padding key of self-attention
        real_q = real_k if cap.kind != "cross" else torch.ones(cap.n_queries, dtype=torch.bool)
        q_idx, k_idx = real_q.nonzero()[:, 0], real_k.nonzero()[:, 0]
        qs.append(cap.q[head, q_idx].double())
        ks.append(cap.k[g, k_idx].double())
        q_meta.append((np.full(len(q_idx), s), q_idx.numpy(), cap.query_ids[q_idx].numpy()))
        k_meta.append((np.full(len(k_idx), s), k_idx.numpy(), cap.key_ids[k_idx].numpy()))
        allowed_rows.append(cap.allowed[q_idx][:, k_idx].numpy())
        weights.append(cap.weights(head)[q_idx][:, k_idx])
    q, k = torch.cat(qs), torch.cat(ks)  # (Nq, Dh), (Nk, Dh) float64
    scale = float((k.norm(dim=-1).mean() / q.norm(dim=-1).mean().clamp(min=1e-30)).sqrt()) if len(q) and len(k) else 1.0
    q, k = q * scale, k / scale
    shift = q.mean(0) - k.mean(0)
    k = k + shift
    joint = torch.cat([q, k])  # (Nq + Nk, Dh)
    centred = joint - joint.mean(0)
    _, sv, vt = torch.linalg.svd(centred, full_matrices=False)
    axes = vt[:2]  # (<=2, Dh)
    axes = axes * torch.where(axes.gather(1, axes.abs().argmax(1, keepdim=True)) < 0, -1.0, 1.0)  # a fixed sign
    coords = centred @ axes.T  # (N, <=2)
    if coords.shape[1] < 2:
        coords = torch.cat([coords, coords.new_zeros(len(coords), 2 - coords.shape[1])], dim=1)
    variance = sv.pow(2)
    explained = (variance[:2] / variance.sum().clamp(min=1e-30)).numpy()
    explained = np.pad(explained, (0, 2 - len(explained)))
    Nq, Nk = len(q), len(k)
    allowed = np.zeros((Nq, Nk), bool)
    top_keys = np.full((Nq, TOP), -1, np.int64)
    top_weights = np.zeros((Nq, TOP), np.float32)
    r0 = c0 = 0
    for rows, w in zip(allowed_rows, weights):
        r1, c1 = r0 + rows.shape[0], c0 + rows.shape[1]
        allowed[r0:r1, c0:c1] = rows
        n = min(TOP, rows.shape[1])
        top_w, order = (t.numpy() for t in w.topk(n, dim=1))  # (r, n) each: a full sort is 5x slower at 1,024 keys
        top_keys[r0:r1, :n] = np.where(top_w > 0, order + c0, -1)
        top_weights[r0:r1, :n] = top_w
        r0, c0 = r1, c1
    meta = lambda parts, i: np.concatenate([p[i] for p in parts]).astype(np.int64)  # noqa: E731
    return QueryKeyMap(
        kind=first.kind, layer=first.layer, head=head, kv_head=g,
        queries=coords[:Nq].float().numpy(), keys=coords[Nq:].float().numpy(),
        query_vectors=q.float().numpy(), key_vectors=k.float().numpy(),
        query_sequence=meta(q_meta, 0), query_position=meta(q_meta, 1), query_ids=meta(q_meta, 2),
        key_sequence=meta(k_meta, 0), key_position=meta(k_meta, 1), key_ids=meta(k_meta, 2),
        top_keys=top_keys, top_weights=top_weights, allowed=allowed, scale=scale, shift=shift.float().numpy(),
        explained=explained.astype(np.float32))

"""Sentence embeddings from an encoder's token vectors: pooling and cosine similarity.

Shapes: B batch, T tokens, D hidden size, N / M sentences.
    mean_pool(last_hidden_state (B, T, D), key_mask (B, T) bool | None) -> (B, D) mean over real tokens
    cls_pool(last_hidden_state (B, T, D), key_mask)                    -> (B, D) the first token's vector
    cosine_similarity(a (N, D), b (M, D)) -> (N, M);  (D,), (D,) -> scalar
    embed(loaded, texts) -> (B, D) with the task's pooling (sentence-transformers' choice, mean by default)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from ..checkpoints import LoadedModel


def mean_pool(last_hidden_state: Tensor, key_mask: Tensor | None) -> Tensor:
    """(B, T, D) token vectors, (B, T) True = real token -> (B, D) mean over real tokens."""
    if key_mask is None:
        return last_hidden_state.mean(dim=1)
    weights = key_mask.to(last_hidden_state.dtype).unsqueeze(-1)  # (B, T, 1)
    return (last_hidden_state * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)


def cls_pool(last_hidden_state: Tensor, key_mask: Tensor | None = None) -> Tensor:
    """(B, T, D) -> (B, D) the first ([CLS]) token's vector."""
    return last_hidden_state[:, 0]


def cosine_similarity(a: Tensor, b: Tensor) -> Tensor:
    """(N, D) x (M, D) -> (N, M) cosine similarities; two (D,) vectors -> a scalar tensor."""
    if a.dim() == 1 and b.dim() == 1:
        return F.cosine_similarity(a, b, dim=0)
    a2, b2 = F.normalize(a.reshape(-1, a.shape[-1]), dim=-1), F.normalize(b.reshape(-1, b.shape[-1]), dim=-1)
    return a2 @ b2.T


@torch.inference_mode()
def embed(loaded: LoadedModel, texts: Sequence[str], max_length: int | None = None) -> Tensor:
    """Sentence embeddings (B, D) of `texts` with the task's pooling (mean by default)."""
    batch = loaded.tokenizer.encode_batch(list(texts), max_length=max_length or loaded.config.max_len)
    ids = torch.tensor(batch.ids, device=loaded.model.device)  # (B, T)
    mask = torch.tensor(batch.mask, device=loaded.model.device)  # (B, T) True = real token
    out = loaded.model(ids, need_weights=False, key_mask=mask)
    pool = cls_pool if loaded.task.get("pooling") == "cls" else mean_pool
    return pool(out.last_hidden_state, mask)

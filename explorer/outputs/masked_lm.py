"""What a masked language model says about each mask token of a sentence (BERT, RoBERTa, DistilBERT
`...ForMaskedLM`): the top-k fillers with their probabilities, and the same with heads switched off.

Shapes: T tokens, V vocabulary, M mask tokens in the sentence.

    mask_positions(ids (T,), mask_id)                         -> the M positions holding the mask token
    fill_masks(logits (T, V), ids (T,), tokenizer, mask_id, k) -> M x NextTokens (position, ids, labels, probs)
    compare_fillers(base (T, V), toggled (T, V), ids, ...)     -> M x NextTokenChange (baseline vs toggled,
                                                                  and the baseline favourite's change)

An MLM's logits at position t score the token *at* t (not the next one): the fillers of a mask are the
top-k of its own row. Every number comes from the logits the model computed; labels from
`Tokenizer.labels`, so a filler reads the same here as on the heatmap axes.
"""

from __future__ import annotations


from torch import Tensor

from .causal_lm import NextTokenChange, NextTokens, compare_next_tokens, next_tokens
from ..tokenizer import Tokenizer




def mask_positions(ids: Tensor | list[int], mask_id: int) -> list[int]:
    """Positions of the mask token in one sequence's ids (T,)."""
    return [t for t, i in enumerate(ids.tolist() if isinstance(ids, Tensor) else ids) if i == mask_id]


def fill_masks(logits: Tensor, ids: Tensor | list[int], tokenizer: Tokenizer, mask_id: int,
               k: int = 10) -> list[NextTokens]:
    """Top-k fillers of every mask token of one sequence, from its MLM logits (T, V)."""
    if logits.dim() != 2:
        raise ValueError(f"fill_masks takes one sequence's logits (T, V), got {tuple(logits.shape)}")
    return [next_tokens(logits, tokenizer, t, k) for t in mask_positions(ids, mask_id)]


def compare_fillers(baseline_logits: Tensor, toggled_logits: Tensor, ids: Tensor | list[int], tokenizer: Tokenizer,
                    mask_id: int, k: int = 10) -> list[NextTokenChange]:
    """Baseline vs toggled fillers of every mask token, with the change of the baseline favourite's probability."""
    return [compare_next_tokens(baseline_logits, toggled_logits, tokenizer, t, k)
            for t in mask_positions(ids, mask_id)]

"""The head-importance tab: how much the model's output moves when each head is switched off alone (exact
sweep), next to the one-pass gradient estimate (explorer.interpret.importance). The objective follows the model's task:
the log-probability of its own answer, the predicted class, or the sentence embeddings.
"""

from __future__ import annotations

import plotly.graph_objects as go
import torch

from ... import viz
from ...interpret.importance import IGNORE, HeadImportance, Probe, head_importance
from ...batching import pad_rows
from ...checkpoints import LoadedModel
from ..compare import compare
from ..inputs import pad_id_of, row_mask
from ..toggles import Toggles, custom_mask
from . import KIND_TITLES

ANSWER = "log-probability of the model's own answer"


def make_probe(loaded: LoadedModel, rows: list[list[int]], answers: list[list[int]], toggles: Toggles
               ) -> tuple[Probe, str]:
    """The probe (inputs and objective) for this model's task, and its description."""
    c, device, pad = loaded.config, loaded.model.device, pad_id_of(loaded)
    common = dict(padding=toggles.padding, causal=toggles.causal)
    if c.arch == "encoder-decoder":
        bos = loaded.task.get("bos_id", loaded.target_tokenizer.bos_id)
        decoded = [[bos, *a] for a in answers]
        full, target = pad_rows(decoded, pad, device), pad_rows(decoded, IGNORE, device)
        src = pad_rows(rows, pad, device)
        return Probe(src, "logprob", tgt_in=full[:, :-1], tgt_out=target[:, 1:], key_mask=row_mask(rows, device),
                     attn_mask=custom_mask(toggles, src.shape[1], device)[0], **common), ANSWER
    if c.arch == "decoder":
        seqs = [[*r, *a] for r, a in zip(rows, answers)]
        full = pad_rows(seqs, pad, device)
        target = pad_rows([[IGNORE] * len(r) + list(a) for r, a in zip(rows, answers)], IGNORE, device)
        return Probe(full[:, :-1], "logprob", tgt_out=target[:, 1:], key_mask=row_mask(seqs, device)[:, :-1],
                     attn_mask=custom_mask(toggles, full.shape[1] - 1, device)[0], **common), ANSWER
    src = pad_rows(rows, pad, device)
    if c.num_classes:
        objective, what = "class", "log-probability of the predicted class"
    elif len(rows) == 2:
        objective, what = "similarity", "cosine similarity of the two sentences"
    else:
        objective, what = "embedding", "the sentence embedding (projection on its baseline)"
    return Probe(src, objective, padding=toggles.padding, key_mask=row_mask(rows, device),
                 attn_mask=custom_mask(toggles, src.shape[1], device)[0]), what


def summary(result: HeadImportance, kind: str, what: str) -> str:
    exact = result.exact[kind]
    top_layer, top_head = divmod(int(exact.abs().flatten().argmax()), exact.shape[1])
    return (f"Objective: {what}; baseline value {result.baseline:.4f}. The head whose removal changes it most in "
            f"the {KIND_TITLES[kind]} is **L{top_layer} H{top_head}** "
            f"(change {float(exact[top_layer, top_head]):+.4f}). "
            f"Rank agreement of the gradient estimate with the exact sweep (Spearman, all kinds): "
            f"{result.rank_correlation:.2f}.")


def importance_view(loaded: LoadedModel, text1: str | None, text2: str | None, toggles: Toggles, kind: str,
                    max_tokens: int) -> tuple[go.Figure, str]:
    """The chart for one attention kind and its Markdown summary (masks from `toggles`, every head on)."""
    with torch.inference_mode():
        cmp = compare(loaded, text1, text2, Toggles(), max_tokens)
    probe, what = make_probe(loaded, cmp.inputs.rows, cmp.baseline.decoder_rows, toggles)
    result = head_importance(loaded.model, probe)
    kind = kind if kind in result.exact else next(iter(result.exact))
    fig = viz.head_importance_chart(result.exact[kind].cpu(), result.estimate[kind].cpu(), result.rank_correlation,
                                    title=f"Head importance: {KIND_TITLES[kind]}")
    return fig, summary(result, kind, what)

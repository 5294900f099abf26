"""The metrics a circuit is found and judged with, read at each pair's answer position.

    logit_diff   logit(answer) - logit(wrong)                       (wrong: given, else the corrupted run's top token)
    logprob      log p(answer)
    kl           KL(p_clean || p) = sum p_clean (log p_clean - log p): 0 on the clean run; its gradient there is 0,
                 so EAP (a gradient at the clean run) cannot use it: EAP-IG can

Shapes: N rows, V vocabulary: logits (N, V), answers and wrongs (N,), clean_logprobs (N, V) -> (N,).
"""

from __future__ import annotations

import torch
from torch import Tensor

METRICS = ("logit_diff", "logprob", "kl")


def check_metric(metric: str) -> str:
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    return metric


def metric_values(metric: str, logits: Tensor, answers: Tensor, wrongs: Tensor,
                  clean_logprobs: Tensor | None = None) -> Tensor:
    """(N,) the metric of each row (in the logits' dtype, differentiable)."""
    rows = torch.arange(logits.shape[0], device=logits.device)
    if metric == "logit_diff":
        return logits[rows, answers] - logits[rows, wrongs]
    logprobs = logits.log_softmax(-1)
    if metric == "logprob":
        return logprobs[rows, answers]
    if clean_logprobs is None:
        raise ValueError("the KL metric needs the clean run's log-probabilities")
    return (clean_logprobs.exp() * (clean_logprobs - logprobs)).sum(-1)


def default_wrongs(answers: Tensor, corrupted_logits: Tensor) -> Tensor:
    """(N,) the corrupted run's top token, or its second where that is the answer."""
    top2 = corrupted_logits.topk(2, dim=-1).indices  # (N, 2)
    return torch.where(top2[:, 0] == answers, top2[:, 1], top2[:, 0])

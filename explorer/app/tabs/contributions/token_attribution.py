"""Token attribution of one prediction (the Contributions tab's strip and table): each input token's share of the
logit of the chosen token (or of a logit difference) at the chosen position, by Captum's integrated gradients or input
x gradient (explorer.interpret.attribution), with its completeness delta. It runs on the model as switched (the
toggled model when a head switch is off). A logit difference is attributed as the difference of the two tokens'
attributions (both methods are linear in the function; same path, same points).

Shapes: n tokens of each attributed sequence, up to the position read (a causal model reads nothing after it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ....checkpoints import LoadedModel
from ....interpret.attribution import AUTO, token_attribution
from ...run.readings import Reading
from ...serving.errors import AppError

DEFAULT_STEPS = 0  # integration points: 0 = as many as reach 2% completeness
METHOD_NAMES = {"integrated_gradients": "integrated gradients", "input_x_gradient": "input × gradient"}


@dataclass(frozen=True)
class Attribution:
    """Token attribution of the same logit (difference): per token of each attributed sequence, up to the position
    read (a causal model reads nothing after it)."""

    sequences: list[tuple[str, list[str], np.ndarray]]  # (name, token labels, (n,) float32 attributions)
    method: str
    steps: int
    baseline: str  # "pad" or "zeros"
    logit: float  # f(x)
    baseline_logit: float  # f(baseline)
    delta: float  # sum of attributions - (f(x) - f(baseline))
    relative_delta: float
    toggled: bool  # computed with the head switches as set
    notices: tuple[str, ...]  # what changed from the request, and why the sum may miss: each its own notice
    adaptive: bool = False  # the points were chosen for this request (steps 0: until 2% completeness)


def attribute_tokens(loaded: LoadedModel, reading: Reading, position: int, token: int, minus: int | None,
                     method: str, steps: int, masks: dict[str, torch.Tensor] | None) -> Attribution:
    """Token attribution of logit[token] (- logit[minus], on the same points) at `position`, up to the position read;
    steps 0: as many integration points as reach 2% completeness (explorer.interpret.attribution's "auto")."""
    model = loaded.model
    src, tgt = reading.tensors(model.device)
    keep = loaded.tokenizer.special_ids & loaded.target_tokenizer.special_ids  # ids special on both sides
    try:
        a = token_attribution(model, src[0], token=token, minus=minus, position=position,
                              tgt=None if tgt is None else tgt[0], head_mask=masks, method=method,
                              steps=steps or AUTO,
                              keep_ids=keep if method == "integrated_gradients" else ())
    except ValueError as err:
        raise AppError(f"Token attribution cannot run here: {err}") from err
    source = a.attributions.float().numpy()
    if loaded.arch == "encoder-decoder":
        target = a.target_attributions.float().numpy()
        sequences = [("source", reading.src_labels, source),
                     ("decoder input", reading.tgt_labels[:position + 1], target[:position + 1])]
    elif loaded.arch == "decoder":
        sequences = [("input", reading.src_labels[:position + 1], source[:position + 1])]
    else:
        sequences = [("input", reading.src_labels, source)]
    return Attribution(sequences, a.method, a.steps, a.baseline, a.logit, a.baseline_logit, a.delta,
                       a.relative_delta, masks is not None, tuple(filter(None, [a.notice, a.message])), a.adaptive)

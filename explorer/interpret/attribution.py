"""Token attribution: how much each input token contributes to one logit of one prediction.

For the logit of ``token`` at ``position`` (by default the model's own top token there) the attribution of
an input token is computed on its token embedding: the output of the token-embedding table (``Embeddings.token``),
before the x sqrt(D) scale, positions, token types and the embedding norm. Two methods:

- ``"integrated_gradients"``: (x - baseline) times the gradient of the logit averaged along the straight path from
  the baseline to x, summed over D. Complete: the attributions add up to ``logit - baseline_logit`` up to the
  convergence delta, reported with it. Captum's ``IntegratedGradients`` runs Captum's rules; our Simpson rule (below)
  computes the same sum at its own points, and equals Captum's at Captum's points (tested).
- ``"input_x_gradient"`` (Captum ``InputXGradient``): x times the gradient at x, summed over D (one gradient;
  a first-order estimate, not complete: its delta against the zero embedding is reported the same way).

Baselines: ``"pad"`` (default: every token embedding replaced by the padding token's, the usual reference for
text; a model without a padding token falls back to zeros, and the result says so in ``baseline`` and
``notice``) or ``"zeros"`` (every token embedding 0). ``keep_ids`` (e.g. ``tokenizer.special_ids``) are token ids
that keep their own embedding in the baseline, as Captum's BERT tutorial keeps [CLS] and [SEP]: they are not
attributed (0), and the model keeps its anchors (BOS as an attention sink) along the whole path, which makes the
integral far better behaved (measured on the shipped models: see docs/heads.md). Only the embeddings change: the
ids, so the padding mask and the positions, stay those of the input.

The zero baseline is a poor one for models whose first norm sees the token embedding alone (rotary or relative
positions: induction-gpt, Llama, T5): near 0 the norm divides by almost nothing, and the integrand swings by
thousands within alpha < 0.01 (induction-gpt's four examples, last position: |delta| / |f(x) - f(baseline)| from
0.7% to 318% at 32 points, 1% to 165% at 256).

Integration points, chosen per request (``steps="auto"``, the default): Simpson's rule on nested points. Level m
evaluates the gradient at alpha = j / 2^m, j = 0..2^m (5, 9, 17, ..., 257 points); each level reuses every point of
the one before, so reaching 2^m + 1 points costs 2^m + 1 gradients, not the sum of all levels. After each level the
completeness delta (sum of the attributions minus f(x) - f(baseline)) is read; the loop stops when it is under
``target`` (2%) of |f(x) - f(baseline)|, or at ``max_steps`` points, where ``message`` says in words that the target
was not reached. The result reports the points used (``steps``), the gradients run (``evaluations``), the delta and
the relative delta, and whether the target was reached.

Why this rule: on the shipped ReLU models the integrand is jagged (units switching along the path), high-order rules
lose their edge there and reusing points wins (to reach 2% on their examples and on typed dates it needed half the
gradients Gauss-Legendre orders 4, 8, 16, ... need, which share no point; the comparison of rules is in the commit
that made it the default, and benchmarks/attribution_ig.py runs both). On smooth (GELU) models its first level,
5 points, is usually well within 2%. Captum's ``riemann_trapezoid`` cannot serve: its weights on n points are 1/n
with halved ends, which add up to 1 - 1/n, so its sum falls short by 1/n of the change.

A fixed number of points (``steps`` an int, 1..256) runs Captum's Gauss-Legendre rule by default (``integration``;
Captum's other rules are accepted, and ``"simpson"`` runs our rule at an odd number of points up to 257: the automatic
result equals the fixed run at its own count). On the shipped models no fixed 32-point rule stays under 2% at every
position: over every answer position of their examples (induction-gpt: the second half of each; padding baseline,
special tokens kept) 50 of 263 miss 2% with Gauss-Legendre, 26 with ``riemann_middle``.

``minus`` attributes a logit difference, logit(token) - logit(minus), as one function: both logits on the same points.

Nothing is stored on the model or registered on its modules, so one model can serve many callers at once:
Captum (and the Simpson rule, which needs the gradient at points of its choosing and keeps each point's per-token
values to reuse them: Captum's public API evaluates a whole rule at once) runs on a function that takes the token
embeddings as its *input* and hands them to ``Transformer.encode / decode(token_embeds=...)`` (no
``LayerIntegratedGradients``, whose forward hooks on the shared embedding module would be seen by every concurrent
request). Both take ``torch.autograd.grad(logits, inputs)``: gradients with respect to the embeddings only, so no
parameter's ``.grad`` is touched. Autograd is switched on (and inference mode off) for this call only.

Models: a decoder-only language model (``ids`` the sequence; positions after ``position`` cannot change the
logit of a causal model and are not run: their attributions are 0); an encoder-decoder (``ids`` the source,
``tgt`` the decoder input, ``position`` indexes tgt; the source and, with ``attribute_target=True``, the decoder
input are attributed together: their sum is complete); a BERT-family encoder with its masked-LM head (``ids``
the encoder input, ``position`` a mask token's).

Shapes: T tokens of the attributed sequence (S for an encoder-decoder's source, T its decoder input), D model
width, V vocabulary, N integration points run in one batch (``internal_batch_size``).

    token_attribution(model, ids (T,) | (1, T), *, position, token, minus, tgt (T,) | None, head_mask, padding,
                      method, baseline, steps ("auto" | int), keep_ids, integration, attribute_target,
                      internal_batch_size, target, max_steps)
        -> TokenAttribution(attributions (T,), target_attributions (T,) | None, logit, baseline_logit, delta, steps,
                            evaluations, reached, message, alphas (N,), integrand (N,), ...)
    simpson_rule(n) -> alphas (n,), weights (n,)      composite Simpson on n = 2^m + 1 (or any odd n) points
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ..model import Transformer

METHODS = ("integrated_gradients", "input_x_gradient")
BASELINES = ("zeros", "pad")
CAPTUM_INTEGRATIONS = ("gausslegendre", "riemann_trapezoid", "riemann_middle", "riemann_left", "riemann_right")
SIMPSON = "simpson"  # ours: composite Simpson on equally spaced points, nested when the points double
INTEGRATIONS = CAPTUM_INTEGRATIONS + (SIMPSON,)
AUTO = "auto"  # steps="auto" (or None): as many points as reach the target, up to max_steps
DEFAULT_STEPS = 32  # the fixed count the Contributions tab asks for by default
MAX_STEPS = 256  # a fixed count of points: 1..MAX_STEPS (Simpson's rule: odd counts up to MAX_AUTO_STEPS)
MAX_AUTO_STEPS = 257  # 2^8 + 1: the automatic rule's last level, its default limit
FIRST_LEVEL = 2  # the automatic rule starts at 2^2 + 1 = 5 points (3 points pass 2% by luck too often)
TARGET = 0.02  # the automatic rule stops when |delta| < TARGET * |f(x) - f(baseline)|
# What one integration point keeps for the backward pass, per token, layer and unit of width: 70 bytes measured
# on a GPT-2-small shape in float32 (1,324 MB for 16 points x 128 tokens x 12 layers x 768). CPU time per point
# does not change from 4 to 32 points per batch there, so the default batch only bounds memory.
BYTES_PER_TOKEN_LAYER_WIDTH = 72
ACTIVATION_BUDGET = 512 * 2**20  # bytes of saved activations per forward + backward, by default


@dataclass(frozen=True)
class TokenAttribution:
    attributions: Tensor  # (T,) float32 per token of ids (encoder-decoder: of the source); after `position`
    #                       in a decoder-only model exactly 0 (the causal model cannot read them)
    ids: Tensor  # (T,) the tokens attributed
    positions: Tensor  # (T,) each token's index in its sequence, 0..T-1
    position: int  # where the logit is read, counted from 0 (encoder-decoder: in the decoder input)
    token: int  # whose logit
    method: str  # "integrated_gradients" or "input_x_gradient"
    steps: int  # integration points (1 for input x gradient: one gradient)
    baseline: str  # "zeros" or "pad"
    integration: str | None  # Captum's method of integration; None for input x gradient
    logit: float  # f(x): the logit of `token` at `position` for the input
    baseline_logit: float  # f(baseline): the same with every attributed token embedding at the baseline
    delta: float  # the convergence delta: sum of all attributions - (logit - baseline_logit) (Captum's definition)
    relative_delta: float  # |delta| / |logit - baseline_logit| (0 when both are 0, inf when only delta is not)
    kept: Tensor  # (T,) bool: tokens whose embedding stayed as it is in the baseline (keep_ids): attribution 0
    target_attributions: Tensor | None = None  # (T,) encoder-decoder with attribute_target: the decoder input
    target_ids: Tensor | None = None  # (T,) encoder-decoder: the decoder input
    target_kept: Tensor | None = None  # (T,) bool, encoder-decoder: the same for the decoder input
    notice: str | None = None  # what changed from the request (a "pad" baseline on a model without padding token)
    minus: int | None = None  # logit difference: the token whose logit is subtracted (logit, baseline_logit, the
    #                           attributions are all of logit(token) - logit(minus)); None: one logit
    adaptive: bool = False  # the points were chosen for this request (steps="auto")
    evaluations: int = 0  # gradients computed (the automatic rule reuses its points: equals steps)
    target: float = TARGET  # the relative delta aimed at
    reached: bool | None = None  # relative_delta < target; None for input x gradient (it promises no completeness)
    message: str | None = None  # in words, when the target was not reached (at the cap, or with too few fixed points)
    alphas: Tensor | None = None  # (N,) float64 Simpson's rule: the points along the path, baseline (0) to input (1)
    integrand: Tensor | None = None  # (N,) float64 Simpson's rule: d f / d alpha there (what the rule integrates)


def _as_row(ids: Any, name: str) -> Tensor:
    """(T,) or (1, T) ids -> (1, T) long, a normal tensor even when made under inference mode."""
    ids = torch.as_tensor(ids)
    if ids.dim() == 2 and ids.shape[0] == 1:
        ids = ids[0]
    if ids.dim() != 1 or ids.numel() == 0:
        raise ValueError(f"{name} must be one non-empty sequence of token ids (T,) or (1, T), got shape "
                         f"{tuple(ids.shape)}")
    if ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
        raise ValueError(f"{name} must be integer token ids, got {ids.dtype}")
    return ids.clone().long()[None]  # (1, T)


def _check_ids(ids: Tensor, table: torch.nn.Embedding, name: str) -> None:
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= table.num_embeddings:
        bad = low if low < 0 else high
        raise ValueError(f"{name} holds token id {bad}, outside the vocabulary (0..{table.num_embeddings - 1})")


def _as_int(value: Any, name: str) -> int:
    """An int (numpy and 0-d tensor integers too); ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an int, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be an int, got {value!r}") from None


def _resolve_position(position: Any, length: int, what: str) -> int:
    position = _as_int(position, "position")
    if not -length <= position < length:
        raise ValueError(f"position {position} is outside the {what} of {length} tokens "
                         f"(valid: {-length}..{length - 1})")
    return position % length


def _kind(model: Transformer) -> str:
    arch = model.config.arch
    if arch == "decoder":
        return "decoder"
    if arch == "encoder-decoder":
        return "encoder-decoder"
    if model.mlm is not None:
        return "masked-lm"
    what = "a classifier head" if model.classifier is not None else "no output head (a sentence-embedding encoder)"
    raise ValueError(f"no logit to attribute: this encoder has {what}; token attribution reads a language "
                     "model's or a masked-LM head's logits")


def _head_masks(model: Transformer, head_mask: Mapping[str, Any] | None) -> dict[str, Tensor]:
    """The model's own validation; one (L, H) mask per kind, shared by every integration point."""
    masks = model.head_masks(head_mask)
    for kind, m in masks.items():
        if m.dim() == 3 and m.shape[0] == 1:
            masks[kind] = m[0]
        elif m.dim() != 2:
            raise ValueError(f"head_mask[{kind!r}] must be (n_layers, n_heads) for one sequence, got "
                             f"{tuple(m.shape)}")
    return masks


def _logit_rows(model: Transformer, kind: str, ids: Tensor, tgt: Tensor | None, position: int,
                masks: dict[str, Tensor], fixed_tgt_embeds: Tensor | None, padding: bool) -> Callable[..., Tensor]:
    """A function of the token embeddings, (N, T, D) per attributed sequence -> (N, V) logits at `position`.

    The ids, masks and head masks are closed over and the embeddings are its inputs: Captum differentiates
    with respect to them and nothing is attached to the model."""
    if kind == "decoder":
        def rows(embeds: Tensor) -> Tensor:
            n = embeds.shape[0]
            dec = model.decode(ids.expand(n, -1), padding=padding, need_weights=False, head_mask=masks.get("decoder"),
                               token_embeds=embeds)
            return model.generator.logits(dec.output[:, position])  # (N, V)
        return rows
    if kind == "masked-lm":
        def rows(embeds: Tensor) -> Tensor:
            n = embeds.shape[0]
            enc = model.encode(ids.expand(n, -1), padding=padding, need_weights=False, head_mask=masks.get("encoder"),
                               token_embeds=embeds)
            return model.mlm(enc.memory[:, position])  # (N, V)
        return rows
    # encoder-decoder: the decoder's key mask as Transformer.forward builds it (its first column is the decoder
    # start token, a real token even when it is the padding id: T5, Marian)
    tgt_key_mask = None
    if padding and model.config.pad_id is not None:
        tgt_key_mask = tgt != model.config.pad_id
        tgt_key_mask[:, 0] = True

    def rows(src_embeds: Tensor, tgt_embeds: Tensor | None = None) -> Tensor:
        n = src_embeds.shape[0]
        enc = model.encode(ids.expand(n, -1), padding=padding, need_weights=False, head_mask=masks.get("encoder"),
                           token_embeds=src_embeds)
        if tgt_embeds is None:
            tgt_embeds = fixed_tgt_embeds.expand(n, -1, -1)  # (N, T, D) the decoder input is not attributed
        dec = model.decode(tgt.expand(n, -1), enc.memory, enc.key_mask, padding=padding, need_weights=False,
                           head_mask=masks.get("decoder"), cross_head_mask=masks.get("cross"),
                           key_mask=None if tgt_key_mask is None else tgt_key_mask.expand(n, -1),
                           token_embeds=tgt_embeds)
        return model.generator.logits(dec.output[:, position])  # (N, V)
    return rows


def _baseline(table: torch.nn.Embedding, embeds: Tensor, baseline: str, pad_id: int | None, kept: Tensor) -> Tensor:
    """(1, T, D) the baseline's token embeddings: zeros or the padding token's, the kept tokens' own."""
    if baseline == "zeros":
        base = torch.zeros_like(embeds)
    else:
        base = table.weight.detach()[pad_id].expand_as(embeds).clone()  # (1, T, D) the padding token's embedding
    return torch.where(kept[..., None], embeds, base)  # kept (1, T) -> (1, T, 1)


def default_batch(model: Transformer, tokens: int, tgt_tokens: int | None, steps: int) -> int:
    """Integration points per forward + backward: as many as keep the activations saved for the backward near
    ACTIVATION_BUDGET (tokens x layers x width x BYTES_PER_TOKEN_LAYER_WIDTH each), at least 1, at most steps."""
    c = model.config
    if c.arch == "decoder":
        rows = tokens * c.decoder_layers
    else:
        rows = tokens * c.encoder_layers + (tgt_tokens or 0) * (c.decoder_layers if c.arch != "encoder" else 0)
    element = next(model.parameters()).element_size() / 4  # float64 keeps twice what float32 does
    per_point = max(1.0, rows * c.d_model * BYTES_PER_TOKEN_LAYER_WIDTH * element)
    return max(1, min(steps, int(ACTIVATION_BUDGET // per_point)))


def simpson_rule(n: int) -> tuple[Tensor, Tensor]:
    """Composite Simpson on n equally spaced points of [0, 1] (n odd, >= 3) -> alphas (n,), weights (n,) float64:
    h / 3 * (1, 4, 2, 4, ..., 2, 4, 1) with h = 1 / (n - 1). Exact for cubics; the weights add up to 1."""
    if n < 3 or n % 2 == 0:
        raise ValueError(f"Simpson's rule takes an odd number of points, 3 or more (5, 9, 17, ...), got {n}")
    weights = torch.full((n,), 2.0, dtype=torch.float64)
    weights[1::2] = 4.0
    weights[0] = weights[-1] = 1.0
    return torch.linspace(0, 1, n, dtype=torch.float64), weights / (3 * (n - 1))


def _path_values(logit_of: Callable[..., Tensor], inputs: tuple[Tensor, ...], bases: tuple[Tensor, ...],
                 alphas: Tensor, batch: int) -> list[Tensor]:
    """(n, T) float64 per attributed sequence: (x - b) . grad f(b + alpha (x - b)), summed over D, one row per alpha.

    A rule's attributions are sum_i w_i values[i] (what Captum computes as (x - b) * sum_i w_i grad_i), and
    summed over tokens a row is d f / d alpha at that point: the integrand. Kept per point, they serve every level."""
    out: list[list[Tensor]] = [[] for _ in inputs]
    for start in range(0, alphas.shape[0], batch):
        a = alphas[start:start + batch].to(inputs[0].device, inputs[0].dtype)[:, None, None]  # (n, 1, 1)
        paths = tuple((b + a * (x - b)).requires_grad_() for x, b in zip(inputs, bases))  # (n, T, D) each
        grads = torch.autograd.grad(logit_of(*paths).sum(), paths)
        for values, x, b, g in zip(out, inputs, bases, grads):
            values.append(((x - b) * g).sum(-1).double())  # (n, T)
    return [torch.cat(v) for v in out]


@dataclass(frozen=True)
class _Integral:
    attributions: list[Tensor]  # (T,) float64 per attributed sequence
    steps: int  # points of the rule
    evaluations: int  # gradients computed
    alphas: Tensor  # (steps,)
    integrand: Tensor  # (steps,) d f / d alpha at each point


def _weighted(weights: Tensor, values: list[Tensor]) -> list[Tensor]:
    """sum_i w_i values[i] -> (T,) per sequence: the rule's attributions."""
    return [weights.to(v.device) @ v for v in values]


def _integrand(values: list[Tensor]) -> Tensor:
    """(n,) d f / d alpha at each point: every token's value of every attributed sequence, summed."""
    return sum(v.sum(-1) for v in values).cpu()


def _simpson(logit_of: Callable[..., Tensor], inputs: tuple[Tensor, ...], bases: tuple[Tensor, ...],
             batch_of: Callable[[int], int], change: float, steps: int | None, target: float,
             max_steps: int) -> _Integral:
    """Simpson's rule at `steps` points, or (steps None) on nested levels 2^m + 1 until |delta| < target |change|
    or the next level would pass max_steps. Level m's points are level m - 1's and the midpoints between them."""
    if steps is not None:
        alphas, weights = simpson_rule(steps)
        values = _path_values(logit_of, inputs, bases, alphas, batch_of(steps))
        return _Integral(_weighted(weights, values), steps, steps, alphas, _integrand(values))
    values: list[Tensor] | None = None
    m = FIRST_LEVEL
    while True:
        n = 2**m
        if values is None:
            fresh = torch.arange(n + 1, dtype=torch.float64) / n  # the first level: every point
        else:
            fresh = torch.arange(1, n, 2, dtype=torch.float64) / n  # the midpoints of the level before
        new = _path_values(logit_of, inputs, bases, fresh, batch_of(fresh.shape[0]))
        if values is None:
            values = new
        else:  # interleave: (n + 1, T), even rows the old points, odd rows the new ones
            grown = []
            for old, mid in zip(values, new):
                both = old.new_empty(n + 1, old.shape[1])
                both[0::2], both[1::2] = old, mid
                grown.append(both)
            values = grown
        alphas, weights = simpson_rule(n + 1)
        attributions = _weighted(weights, values)
        delta = float(sum(a.sum() for a in attributions)) - change
        if abs(delta) < target * abs(change) or delta == 0 or 2 ** (m + 1) + 1 > max_steps:
            return _Integral(attributions, n + 1, n + 1, alphas, _integrand(values))
        m += 1


def _message(adaptive: bool, steps: int, relative: float, target: float) -> str:
    """Why the attributions may not be trusted to the target, in words (when the target was not reached)."""
    miss = "never" if math.isinf(relative) else f"{relative:.1%} of it"
    if adaptive:
        return (f"The attributions do not add up to within {target:.0%}: at the limit of {steps} integration points "
                f"their sum still misses f(input) − f(baseline) by {miss}. Read them as approximate.")
    return (f"With {steps} integration points the attributions' sum misses f(input) − f(baseline) by {miss} (more "
            f"than {target:.0%}): choose automatic points or more points.")


def token_attribution(model: Transformer, ids: Any, *, position: int = -1, token: int | None = None,
                      minus: int | None = None, tgt: Any = None, head_mask: Mapping[str, Any] | None = None,
                      padding: bool = True, method: str = "integrated_gradients", baseline: str = "pad",
                      steps: int | str | None = AUTO, keep_ids: Collection[int] = (), integration: str | None = None,
                      attribute_target: bool = True, internal_batch_size: int | None = None, target: float = TARGET,
                      max_steps: int = MAX_AUTO_STEPS) -> TokenAttribution:
    """Each input token's attribution for the logit of ``token`` (None: the top token) at ``position``, or with
    ``minus`` for logit(token) - logit(minus) (both logits on the same points).

    ``ids`` is the sequence of a decoder-only model, the source of an encoder-decoder (``tgt`` its decoder
    input; ``position`` indexes tgt) or the input of a masked-LM encoder. ``head_mask`` is the forward's
    ``{kind: (L, H)}``, 1 = on: the attributions of the model with those heads off; ``padding`` the forward's
    switch of the padding masks (padding tokens masked as keys). ``keep_ids``: token ids that
    keep their embedding in the baseline (pass ``tokenizer.special_ids``). ``steps``: ``"auto"`` (or None, the
    default) chooses the integration points for this request (Simpson's rule on nested points, 5 to ``max_steps``,
    until |delta| < ``target`` |f(x) - f(baseline)|); an int (1..256) is a fixed count by ``integration`` (default
    Captum's Gauss-Legendre; ``"simpson"`` at an odd count, up to 257). ``internal_batch_size`` points per batch
    (default: as many as keep the saved activations near 512 MB, :func:`default_batch`). See the module docstring.
    """
    kind = _kind(model)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if baseline not in BASELINES:
        raise ValueError(f"baseline must be one of {BASELINES}, got {baseline!r}")
    adaptive = steps is None or steps == AUTO
    if integration is None:
        integration = SIMPSON if adaptive else "gausslegendre"
    if integration not in INTEGRATIONS:
        raise ValueError(f"integration must be one of {INTEGRATIONS}, got {integration!r}")
    most = MAX_AUTO_STEPS if integration == SIMPSON else MAX_STEPS  # Simpson's: up to the automatic rule's last level
    if not adaptive and (isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= most):
        raise ValueError(f"steps must be \"auto\" or an int in 1..{most}, got {steps!r}")
    if method == "integrated_gradients":
        if adaptive and integration != SIMPSON:
            raise ValueError(f"automatic points use Simpson's rule on nested points; for Captum's {integration!r} "
                             "give a number of steps")
        if not adaptive and integration == SIMPSON and (steps < 3 or steps % 2 == 0):
            raise ValueError(f"Simpson's rule takes an odd number of points, 3 or more (5, 9, 17, ...), got {steps}")
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target < 1:
        raise ValueError(f"target must be a number above 0 and below 1 (a share of the change), got {target!r}")
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or \
            not 2**FIRST_LEVEL + 1 <= max_steps <= MAX_AUTO_STEPS:
        raise ValueError(f"max_steps must be an int in {2**FIRST_LEVEL + 1}..{MAX_AUTO_STEPS}, got {max_steps!r}")
    if internal_batch_size is not None and (not isinstance(internal_batch_size, int) or internal_batch_size < 1):
        raise ValueError(f"internal_batch_size must be a positive int, got {internal_batch_size!r}")
    if model.training:
        raise ValueError("the model is in training mode (dropout would change every integration point): call "
                         "model.eval() once, before sharing it")
    if (kind == "encoder-decoder") != (tgt is not None):
        raise ValueError("an encoder-decoder needs the decoder input tgt; a decoder-only or masked-LM model takes "
                         "one sequence (ids) and no tgt")
    # Autograd on for this call only, also from a thread in inference mode; both modes come back as they were.
    keep = {_as_int(i, "keep_ids") for i in keep_ids}
    notice = None
    if method == "input_x_gradient":
        baseline = "zeros"  # x times the gradient at x: the zero embedding is its implicit baseline
        if keep:
            raise ValueError("keep_ids needs integrated gradients: input x gradient has no baseline to keep "
                             "tokens in")
    elif baseline == "pad" and model.config.pad_id is None:
        baseline = "zeros"
        notice = "this model has no padding token, so the baseline is the zero embedding"
    # Autograd on for this call only, also from a thread in inference mode; both modes come back as they were.
    with torch.inference_mode(False), torch.enable_grad():
        return _attribute(model, kind, ids, tgt, position, token, minus, _head_masks(model, head_mask), padding,
                          method, baseline, None if adaptive else steps, keep, integration, attribute_target,
                          internal_batch_size, notice, float(target), max_steps)


def _attribute(model: Transformer, kind: str, ids: Any, tgt: Any, position: int, token: int | None,
               minus: int | None, masks: dict[str, Tensor], padding: bool, method: str, baseline: str,
               steps: int | None, keep: set[int], integration: str, attribute_target: bool,
               internal_batch_size: int | None, notice: str | None, target: float, max_steps: int) -> TokenAttribution:
    from captum.attr import InputXGradient, IntegratedGradients  # imported on first use: startup stays light

    device = model.device
    src_table = (model.tgt_embed if kind == "decoder" else model.src_embed).token
    ids = _as_row(ids, "ids").to(device)  # (1, T)
    _check_ids(ids, src_table, "ids")
    tgt_ids = None
    if kind == "encoder-decoder":
        tgt_ids = _as_row(tgt, "tgt").to(device)  # (1, T)
        _check_ids(tgt_ids, model.tgt_embed.token, "tgt")
    read = tgt_ids if kind == "encoder-decoder" else ids
    where = "decoder input" if kind == "encoder-decoder" else "sequence"
    position = _resolve_position(position, read.shape[1], where)
    # A causal decoder's logit at `position` reads nothing after it: run the prefix only.
    run_ids = ids[:, : position + 1] if kind == "decoder" else ids
    run_tgt = tgt_ids[:, : position + 1] if kind == "encoder-decoder" else None
    read_at = -1 if kind != "masked-lm" else position

    def kept_of(seq: Tensor) -> Tensor:
        return torch.isin(seq, torch.tensor(sorted(keep), dtype=torch.long, device=seq.device))  # (1, T) bool

    with torch.no_grad():
        inputs = [src_table(run_ids)]  # (1, T, D) the token embeddings: what Embeddings.token gives
        tables, seqs = [src_table], [run_ids]
        fixed_tgt = model.tgt_embed.token(run_tgt) if kind == "encoder-decoder" else None  # (1, T, D)
        if kind == "encoder-decoder" and attribute_target:
            inputs.append(fixed_tgt)
            tables.append(model.tgt_embed.token)
            seqs.append(run_tgt)
    inputs = tuple(x.detach() for x in inputs)
    bases = tuple(_baseline(t, x, baseline, model.config.pad_id, kept_of(seq))
                  for t, x, seq in zip(tables, inputs, seqs))
    rows = _logit_rows(model, kind, run_ids, run_tgt, read_at, masks, fixed_tgt, padding)

    with torch.no_grad():  # f(x) and f(baseline) in one batch of 2; the top token from f(x)
        both = rows(*(torch.cat([x, b]) for x, b in zip(inputs, bases))).double()  # (2, V)
    vocab = both.shape[-1]
    token = int(both[0].argmax()) if token is None else _as_int(token, "token")
    if not 0 <= token < vocab:
        raise ValueError(f"token {token!r} is outside the vocabulary (0..{vocab - 1})")
    if minus is not None:
        minus = _as_int(minus, "minus")
        if not 0 <= minus < vocab:
            raise ValueError(f"minus token {minus!r} is outside the vocabulary (0..{vocab - 1})")
        if minus == token:
            raise ValueError(f"minus is the token itself ({token}): their logit difference is 0 everywhere")
    logit, baseline_logit = (float(both[i, token] - (both[i, minus] if minus is not None else 0)) for i in (0, 1))
    change = logit - baseline_logit

    def logit_of(*embeds: Tensor) -> Tensor:
        out = rows(*embeds)  # (N, V)
        return out[:, token] - out[:, minus] if minus is not None else out[:, token]  # (N,)

    def batch_of(points: int) -> int:
        return internal_batch_size or default_batch(model, run_ids.shape[1], None if run_tgt is None else
                                                    run_tgt.shape[1], points)

    alphas = integrand = None
    if method == "integrated_gradients" and integration == SIMPSON:
        integral = _simpson(logit_of, inputs, bases, batch_of, change, steps, target, max_steps)
        per_token = [a.float().cpu() for a in integral.attributions]
        delta = float(sum(a.sum() for a in integral.attributions)) - change
        used_steps, evaluations, used_integration = integral.steps, integral.evaluations, SIMPSON
        alphas, integrand = integral.alphas, integral.integrand
    else:
        if method == "integrated_gradients":
            attrs, delta = IntegratedGradients(logit_of).attribute(
                inputs, baselines=bases, n_steps=steps, method=integration, internal_batch_size=batch_of(steps),
                return_convergence_delta=True)
            used_steps, used_integration = steps, integration
        else:
            explainer = InputXGradient(logit_of)
            attrs = explainer.attribute(tuple(x.clone().requires_grad_() for x in inputs))  # leaves of this call
            delta = explainer.compute_convergence_delta(attrs, start_point=bases, end_point=inputs)
            used_steps, used_integration = 1, None
        evaluations = used_steps
        delta = float(delta.reshape(-1)[0])
        per_token = [a[0].sum(-1).detach().float().cpu() for a in attrs]  # (T,) each: summed over D

    def full(values: Tensor, length: int) -> Tensor:
        """Positions not run (after `position` in a causal decoder) get 0: they cannot change the logit."""
        out = torch.zeros(length)
        out[: values.shape[0]] = values
        return out

    relative = abs(delta) / abs(change) if change else (0.0 if delta == 0 else math.inf)
    reached = relative < target or delta == 0 if method == "integrated_gradients" else None
    message = None if reached in (True, None) else _message(steps is None, used_steps, relative, target)
    source = full(per_token[0], ids.shape[1])
    decoder_input = full(per_token[1], tgt_ids.shape[1]) if len(per_token) > 1 else None
    return TokenAttribution(
        attributions=source, ids=ids[0].cpu(), positions=torch.arange(ids.shape[1]), position=position, token=token,
        method=method, steps=used_steps, baseline=baseline, integration=used_integration, logit=logit,
        baseline_logit=baseline_logit, delta=delta, relative_delta=relative, kept=kept_of(ids)[0].cpu(),
        target_attributions=decoder_input, target_ids=None if tgt_ids is None else tgt_ids[0].cpu(),
        target_kept=None if tgt_ids is None else kept_of(tgt_ids)[0].cpu(), notice=notice, minus=minus,
        adaptive=steps is None and method == "integrated_gradients", evaluations=evaluations, target=target,
        reached=reached, message=message, alphas=alphas, integrand=integrand)

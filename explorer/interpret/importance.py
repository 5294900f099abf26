"""Head importance: how much the model's output changes when one head is switched off.

Two measures over every head of every attention kind (encoder self, decoder self, cross):

- exact: objective(head h of layer l off) - objective(all heads on), for each head alone. Layers
  below l do not change, so the sweep restarts at layer l from the baseline's hidden state and
  runs all heads of that layer as one batch (variant v of the batch has head v off).
- estimate (Michel et al., 2019, "Are Sixteen Heads Really Better than One?"): the first-order
  Taylor estimate -d objective / d gate_h at gate = 1, for all heads at once from one forward and
  one backward pass (head masks multiply head outputs, so they are differentiable gates).

Shapes: B batch, V variants (heads of one layer), L layers, H heads, S source / T target length.
The objective is one number per input batch (see `Probe`), e.g. the log-probability of the
model's own answer for sequence models, or the similarity of two sentences for MiniLM.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..outputs.embeddings import mean_pool
from ..model import Transformer
from ..model.masks import causal_mask, combine_masks
from ..stats import spearman

KINDS = ("encoder", "decoder", "cross")
IGNORE = -100  # a tgt_out value that is not measured (padding, the prompt): torch cross_entropy's ignore_index


@dataclass
class Probe:
    """What to measure. Exactly one objective, chosen by the model's task:

    - "logprob":    sum of log p(tgt_out | src, tgt_in) (teacher forcing on the model's own output)
    - "class":      log p(predicted class) of a classifier, summed over the batch
    - "similarity": cosine similarity of the mean-pooled embeddings of the two rows of src
    - "embedding":  projection of the mean-pooled embedding on its baseline direction (1 at baseline)
    """

    src: Tensor  # (B, S)
    objective: str
    tgt_in: Tensor | None = None  # (B, T) decoder input (encoder-decoder) or None
    tgt_out: Tensor | None = None  # (B, T) tokens whose log-probability is measured; IGNORE = not measured
    padding: bool = True
    causal: bool = True
    attn_mask: Tensor | None = None
    key_mask: Tensor | None = None  # (B, S) True = real src token; None = src != pad_id (needs a pad token)


@dataclass
class HeadImportance:
    exact: dict[str, Tensor]  # kind -> (L, H) objective(off) - objective(on)
    estimate: dict[str, Tensor]  # kind -> (L, H) first-order estimate of the same change
    baseline: float  # objective with every head on
    objective: str
    rank_correlation: float  # Spearman over all heads, |exact| vs |estimate|


def objective_value(model: Transformer, probe: Probe, last_hidden: Tensor, key_mask: Tensor | None,
                    reference: Tensor | None = None) -> Tensor:
    """Final hidden states of V variants stacked as (V*B, T, D) -> (V,) objective values.

    `reference` (B, D) is the baseline embedding for the "embedding" objective; when None, the
    first variant is taken as the baseline (right for a single unablated pass).
    """
    B = probe.src.shape[0]
    V = last_hidden.shape[0] // B
    if probe.objective == "logprob":
        log_probs = model.generator(last_hidden)  # (V*B, T, vocab)
        target = probe.tgt_out.repeat(V, 1)  # (V*B, T)
        measured = target != IGNORE
        picked = log_probs.gather(-1, target.clamp(min=0)[..., None])[..., 0]  # (V*B, T)
        picked = picked.masked_fill(~measured, 0.0)
        return picked.view(V, -1).sum(1)
    if probe.objective == "class":
        log_probs = model.classifier(last_hidden).log_softmax(-1)  # (V*B, C)
        return log_probs.max(-1).values.view(V, B).sum(1)
    pooled = mean_pool(last_hidden, key_mask).view(V, B, -1)  # (V, B, D)
    if probe.objective == "similarity":
        if B != 2:
            raise ValueError("the similarity objective needs exactly two sentences")
        return torch.nn.functional.cosine_similarity(pooled[:, 0], pooled[:, 1], dim=-1)
    if probe.objective == "embedding":
        ref = pooled[0].detach() if reference is None else reference
        return ((pooled * ref).sum(-1) / (ref * ref).sum(-1)).mean(1)
    raise ValueError(f"unknown objective {probe.objective!r}")


def final_hidden(model: Transformer, probe: Probe, head_mask: dict[str, Tensor] | None = None) -> Tensor:
    """One full forward pass (fast path) -> last hidden state (B, T, D)."""
    return model(probe.src, probe.tgt_in if model.config.arch == "encoder-decoder" else None,
                 padding=probe.padding, causal=probe.causal, attn_mask=probe.attn_mask, head_mask=head_mask,
                 need_weights=False, key_mask=probe.key_mask).last_hidden_state


def run_objective(model: Transformer, probe: Probe, head_mask: dict[str, Tensor] | None = None) -> Tensor:
    """One full forward pass -> objective (scalar tensor). head_mask entries are (L, H)."""
    key_mask = model.key_mask(probe.src, probe.padding, probe.key_mask)
    reference = None
    if probe.objective == "embedding" and head_mask:
        with torch.no_grad():  # the unablated embedding is the fixed direction measured against
            reference = mean_pool(final_hidden(model, probe), key_mask)
    return objective_value(model, probe, final_hidden(model, probe, head_mask), key_mask, reference)[0]


def repeat_batch(t: Tensor | None, V: int) -> Tensor | None:
    """(B, ...) -> (V*B, ...): V copies of the batch, variant-major (rows v*B..v*B+B-1 are variant v)."""
    return None if t is None else t.repeat(V, *([1] * (t.dim() - 1)))


def one_off_masks(n_variants: int, batch: int, n_layers: int, n_heads: int, layer: int, device) -> Tensor:
    """(V*B, L, H): variant v (rows v*B..v*B+B-1) has head v of `layer` off, all else on."""
    masks = torch.ones(n_variants, n_layers, n_heads, device=device)
    masks[torch.arange(n_variants), layer, torch.arange(n_variants)] = 0.0
    return masks.repeat_interleave(batch, dim=0)


@torch.no_grad()
def exact_sweep(model: Transformer, probe: Probe) -> tuple[dict[str, Tensor], float]:
    """Every single-head ablation, sharing the unchanged lower layers, batched per layer."""
    arch = model.config.arch
    src, B = probe.src, probe.src.shape[0]
    src_key_mask = model.key_mask(src, probe.padding, probe.key_mask)
    base = model(src, probe.tgt_in if arch == "encoder-decoder" else None, padding=probe.padding,
                 causal=probe.causal, attn_mask=probe.attn_mask, need_weights=False, key_mask=probe.key_mask)
    baseline = objective_value(model, probe, base.last_hidden_state, src_key_mask)[0]
    reference = mean_pool(base.last_hidden_state, src_key_mask) if probe.objective == "embedding" else None
    results: dict[str, Tensor] = {}

    for kind, (L, H) in model.config.attention_kinds().items():
        change = torch.zeros(L, H, device=src.device)
        for layer in range(L):
            masks = one_off_masks(H, B, L, H, layer, src.device)
            if kind == "encoder":
                x = repeat_batch(base.hidden_states.encoder[layer], H)
                enc = model.encoder.run(x, key_mask=repeat_batch(src_key_mask, H), attn_mask=probe.attn_mask,
                                        head_mask=masks, need_weights=False, first_layer=layer)
                last = enc.output
                if arch == "encoder-decoder":
                    last = decode_from(model, probe, 0, base.hidden_states.decoder[0], enc.output,
                                       src_key_mask, H, {})
            else:
                head_masks = {"decoder" if kind == "decoder" else "cross": masks}
                memory = repeat_batch(base.encoder_last_hidden_state, H) if arch == "encoder-decoder" else None
                last = decode_from(model, probe, layer, base.hidden_states.decoder[layer], memory,
                                   src_key_mask, H, head_masks)
            change[layer] = objective_value(model, probe, last, repeat_batch(src_key_mask, H), reference) - baseline
        results[kind] = change
    return results, baseline.item()


def decode_from(model, probe, layer, hidden_in, memory, src_key_mask, V, head_masks):
    """Run the decoder stack from `layer` for V variants; hidden_in is that layer's baseline input."""
    arch = model.config.arch
    tokens = probe.tgt_in if arch == "encoder-decoder" else probe.src
    T = tokens.shape[1]
    self_mask = combine_masks(causal_mask(T, tokens.device) if probe.causal else None,
                              probe.attn_mask if arch == "decoder" else None)
    key_mask = model.key_mask(tokens, probe.padding, probe.key_mask if arch == "decoder" else None)
    run = model.decoder.run(repeat_batch(hidden_in, V), memory, key_mask=repeat_batch(key_mask, V),
                            memory_key_mask=repeat_batch(src_key_mask, V),
                            attn_mask=self_mask, head_mask=head_masks.get("decoder"),
                            cross_head_mask=head_masks.get("cross"), need_weights=False, first_layer=layer)
    return run.output


def gradient_estimate(model: Transformer, probe: Probe) -> dict[str, Tensor]:
    """-d objective / d gate for every head, from one forward and one backward pass."""
    gates = {kind: torch.ones(L, H, device=probe.src.device, requires_grad=True)
             for kind, (L, H) in model.config.attention_kinds().items()}
    with torch.enable_grad():
        value = run_objective(model, probe, gates)
        grads = torch.autograd.grad(value, list(gates.values()))
    # Switching a head off moves its gate from 1 to 0: first-order change = -gradient.
    return {kind: -g.detach() for kind, g in zip(gates, grads)}


def head_importance(model: Transformer, probe: Probe) -> HeadImportance:
    """Exact sweep and gradient estimate side by side (the model is only read)."""
    exact, baseline = exact_sweep(model, probe)
    estimate = gradient_estimate(model, probe)
    flat_exact = torch.cat([exact[k].flatten() for k in exact]).abs()
    flat_estimate = torch.cat([estimate[k].flatten() for k in exact]).abs()
    return HeadImportance(exact, estimate, baseline, probe.objective, spearman(flat_exact, flat_estimate))

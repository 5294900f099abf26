"""Splicing an SAE into a run: latents switched off, clamped or added like heads, through the model's per-call
residual-stream hook (nothing is stored on the model).

At the SAE's site, the residual stream x (B, T, D) is replaced by

    decode(f') + (x - decode(f))        f = encode(x), f' = f with the switched latents changed

the SAE's error term kept, so that with nothing switched the run is the model's own. It is computed as the same value
in the order that keeps that identity exact, x + (decode(f') - decode(f)), where the difference is the linear map of
the changed latents alone (SAE.decode_change: b_dec cancels, and so do the latents not switched): with no switch the
hook returns x itself. `add=c` adds c * W_dec[i] (Neuronpedia's Steer), whatever latent i's activation.
`keep_error=False` replaces x by decode(f') itself (what SAELens's CE-loss-recovered metric measures).

    sae_hook(model, sae, switches, keep_error=True) -> resid_hook for model(...)/generate(...)
    splice_sae(model, ids, sae, switches, tgt=None) -> the model's TransformerOutput with the SAE spliced in
    capture_site(model, ids, site, tgt=None) -> x (B, T, D) at the site, the run stopped there
    switch_outputs(model, tokenizer, text, sae, switches) -> SteeredOutputs: next tokens and greedy continuation,
                                                          baseline vs switched (decoder-only language models)

Shapes: B batch, T tokens, D = d_in, F = d_sae, n switched latents, V vocabulary.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ...outputs.causal_lm import NextTokenChange, compare_next_tokens, continue_text
from ...model import Transformer
from ...model.stacks import ResidHook
from ...tokenizer import Tokenizer
from .core import SAE
from .hooks import hook_site
from .switches import LatentSwitches


def sae_hook(model: Transformer, sae: SAE, switches: Any = None, *, keep_error: bool = True) -> ResidHook:
    """The resid_hook that splices `sae` with `switches` (LatentSwitches, a link string or None) into this model's
    runs; ValueError for a latent the SAE lacks or a hook point the model lacks."""
    site = hook_site(model.config, sae.hook_name)
    switches = LatentSwitches.of(switches).check(sae.d_sae)
    set_latents, set_values = switches.by_mode("off", "clamp")
    add_latents, add_values = switches.by_mode("add")
    latents = torch.tensor(set_latents, dtype=torch.long, device=sae.device)
    values = torch.tensor(set_values, dtype=sae.dtype, device=sae.device)  # (n,) 0 for off, v for clamp
    # (D,) sum of c * W_dec[i] over the added latents: Neuronpedia's Steer adds exactly this at every position
    added = (torch.tensor(add_values, dtype=sae.dtype, device=sae.device) @ sae.W_dec[add_latents]
             if add_latents else None)

    def splice(name: str, x: Tensor) -> Tensor:
        if name != site:
            return x
        if keep_error and not switches:
            return x
        xs = x.to(device=sae.device, dtype=sae.dtype)
        if keep_error:
            out = xs
            if len(latents):
                delta = values - sae.encode_latents(xs, latents)  # (B, T, n) f' - f on the switched latents
                out = xs + sae.decode_change(delta, latents, xs)
        else:
            f = sae.encode(xs)  # (B, T, F)
            if len(latents):
                f[..., latents] = values
            out = sae.decode(f, xs)
        if added is not None:
            out = out + added
        return out.to(device=x.device, dtype=x.dtype)

    return splice


def run_hooked(model: Transformer, ids: Tensor, tgt: Tensor | None, hook: ResidHook | None, **forward: Any):
    """model(ids (T,) | (B, T), tgt, resid_hook=hook), need_weights=False unless `forward` says otherwise."""
    ids = ids[None] if ids.dim() == 1 else ids
    if tgt is not None and tgt.dim() == 1:
        tgt = tgt[None]
    if model.config.arch == "encoder-decoder" and tgt is None:
        raise ValueError("an encoder-decoder needs the decoder input tgt")
    if model.config.arch != "encoder-decoder" and tgt is not None:
        raise ValueError("only an encoder-decoder takes tgt; pass the one sequence as ids")
    forward.setdefault("need_weights", False)
    return model(ids.to(model.device), None if tgt is None else tgt.to(model.device), resid_hook=hook, **forward)


@torch.no_grad()
def splice_sae(model: Transformer, ids: Tensor, sae: SAE, switches: Any = None, *, tgt: Tensor | None = None,
               keep_error: bool = True, **forward: Any):
    """The model's output (TransformerOutput) on ids (T,) | (B, T) with `sae` spliced in at its hook and `switches`
    applied; `forward` goes to the model (head_mask, need_weights=False by default, ...)."""
    return run_hooked(model, ids, tgt, sae_hook(model, sae, switches, keep_error=keep_error), **forward)


class _Stop(Exception):
    """Raised by capture_site's hook to end a run once the site is read (nothing after it is needed)."""

    def __init__(self, x: Tensor):
        super().__init__("site captured")
        self.x = x


@torch.no_grad()
def capture_site(model: Transformer, ids: Tensor, site: str, *, tgt: Tensor | None = None,
                 **forward: Any) -> Tensor:
    """The residual stream x (B, T, D) at `site` (e.g. hook_site(config, sae.hook_name)) on ids (T,) | (B, T); the run
    stops there, so the layers after it and the unembedding are never computed. An encoder-decoder's encoder site
    needs no tgt (only the encoder runs)."""

    def stop(name: str, x: Tensor) -> Tensor:
        if name == site:
            raise _Stop(x)
        return x

    try:
        if model.config.arch == "encoder-decoder" and site.startswith("encoder.") and tgt is None:
            ids = ids[None] if ids.dim() == 1 else ids
            forward.setdefault("need_weights", False)
            model.encode(ids.to(model.device), resid_hook=stop, **forward)
        else:
            run_hooked(model, ids, tgt, stop, **forward)
    except _Stop as found:
        return found.x
    raise ValueError(f"the run never reached {site!r}")


@dataclass
class ContinuedText:
    """A greedy continuation, small: the generated ids, their labels, the decoded text and each token's probability."""

    ids: list[int]
    labels: list[str]
    text: str
    probs: list[float]


@dataclass
class SteeredOutputs:
    """Baseline vs steered (latents switched, or a steering vector added) outputs of a decoder-only language model."""

    next: NextTokenChange  # top-k next tokens after `position`, both runs, and the baseline favourite's change
    baseline: ContinuedText | None  # greedy continuation without the change (None when max_new_tokens is 0)
    steered: ContinuedText | None  # with it, applied at every step


def _continued(model, tokenizer, text, max_new_tokens, hook, head_mask) -> ContinuedText | None:
    if max_new_tokens < 1:
        return None
    c = continue_text(model, tokenizer, text, max_new_tokens, head_mask=head_mask, resid_hook=hook)
    return ContinuedText(c.ids, c.labels, c.text, c.probs)


@torch.no_grad()
def steered_outputs(model: Transformer, tokenizer: Tokenizer, text: str, hook: ResidHook, *, position: int = -1,
                    k: int = 10, max_new_tokens: int = 20, head_mask: Mapping[str, Any] | None = None
                    ) -> SteeredOutputs:
    """Next tokens at `position` and greedy continuations of `text`, without and with `hook` (any resid_hook)."""
    if model.config.arch != "decoder" or model.generator is None:
        raise ValueError("baseline vs steered outputs need a decoder-only language model")
    ids = torch.tensor(tokenizer.encode(text, max_length=model.config.max_len).ids)
    if not len(ids):
        raise ValueError("the text gives no tokens")
    masks = model.head_masks(head_mask)
    base = run_hooked(model, ids, None, None, head_mask=masks).logits[0]  # (T, V)
    steered = run_hooked(model, ids, None, hook, head_mask=masks).logits[0]
    change = compare_next_tokens(base, steered, tokenizer, position, k)
    return SteeredOutputs(change, _continued(model, tokenizer, text, max_new_tokens, None, head_mask),
                          _continued(model, tokenizer, text, max_new_tokens, hook, head_mask))


def switch_outputs(model: Transformer, tokenizer: Tokenizer, text: str, sae: SAE, switches: Any, *,
                   position: int = -1, k: int = 10, max_new_tokens: int = 20,
                   head_mask: Mapping[str, Any] | None = None) -> SteeredOutputs:
    """Baseline vs switched latents (sae_hook with the error term kept): next tokens and greedy continuations."""
    return steered_outputs(model, tokenizer, text, sae_hook(model, sae, switches), position=position, k=k,
                           max_new_tokens=max_new_tokens, head_mask=head_mask)

"""A per-call record of what a forward pass wrote into the residual stream (TransformerLens's
`run_with_cache`, without hooks on modules): each attention head's output before W_o, the values, each
feed-forward block's output, and what each norm divided by.

    record = Record()
    out = model(ids, record=record)          # any forward: Transformer.forward / encode / decode, Stack.run
    record["decoder.3.z"]                    # (B, H, T, Dh)

Like `head_mask` and `head_hook`, a record is an argument of one call and never stored on a module: one
model serves many users at once. It is threaded Stack.run -> LayerInputs -> layer -> attention (and the
embeddings); without one, each site costs one `is None` check. Both attention paths (the weights path and
scaled_dot_product_attention) record the same tensors: they are taken before and after the path.

Shapes: B batch, T length of the stack's sequence, S key length (T for self-attention, the source length
for cross-attention), D model width, H query heads, Hkv key/value heads, Dh head width.
`kind` is "encoder" / "decoder" (self-attention) or "cross"; `stack` is "encoder" or "decoder"; l the
layer (from 0). The sites, every one a tensor of the call (no copy unless said):

    {stack}.embed        (B, T, D)      what the first layer receives: token (x sqrt(D)) + positions (+ token
                                        types), after the embedding norm (BART, BERT) if any
    {stack}.embed.scale  (B, T, 1)      what the embedding norm divided by (embedding_norm only)
    {kind}.{l}.scale     (B, T, 1)      what the norm of this attention sublayer divided by: of the sublayer's
                                        input (pre-norm) or of input + attention output (post-norm)
    {kind}.{l}.v         (B, Hkv, S, Dh) values, as every query head of the group reads them (query head h
                                        reads K/V head h // (H / Hkv)); cross: the memory's, cached ones included
                                        (B, H, S, Dh), one per query head, when the call gives the keys or values
                                        an input per query head (`receivers`, see stacks.py)
    {kind}.{l}.z         (B, H, T, Dh)  each query head's output as W_o reads it: after head_hook and the head
                                        mask (a head switched off is exactly 0). Head h writes
                                        z[:, h] @ W_o[:, h*Dh:(h+1)*Dh].T into the residual stream (plus
                                        W_o's bias once per block)
    {stack}.{l}.mlp      (B, T, D)      the feed-forward block's output (its biases included), before dropout
    {stack}.{l}.mlp.scale (B, T, 1)     what the feed-forward sublayer's norm divided by (as `.scale` above)
    {stack}.final.scale  (B, T, 1)      what the stack's final norm divided by (pre-norm stacks)

Sites recorded only when `only` names them (what an attention block reads: explorer.interpret.head_computation
shows one head's computation from them; three more (B, T, D)-sized tensors per block, wanted for one block):

    {kind}.{l}.x         (B, T, D)      the block's input as W_q reads it: after the sublayer's norm (pre-norm),
                                        the sublayer's input (post-norm); self-attention's keys read it too
    {kind}.{l}.q         (B, H, T, Dh)  queries as the scores read them: after rotary, before the scale
    {kind}.{l}.k         (B, Hkv, S, Dh) keys as the scores read them: after rotary (cross: the memory's)
    {kind}.{l}.mask      (B|1, 1, T|1, S) the boolean mask the block applied (True = may attend), when there is one
    {kind}.{l}.bias      (1, H, T, S)   the score bias the block added (T5's relative positions), when there is one

A norm's divisor ("scale") is sqrt(var(x) + eps) for LayerNorm (variance over D, biased) and
sqrt(mean(x^2) + eps) for RMSNorm, computed (only when recording) from the norm's own input, in float32
or wider. The layouts it covers: pre-norm and post-norm sublayers, the parallel residual of GPT-NeoX (both
sublayers read the layer input: `.scale` and `.mlp.scale` are of that one input), cross-attention,
grouped-query attention, rotary positions (inside q and k: nothing to record), T5's relative bias (added
to scores: writes nothing into the residual stream), BART's embedding norm and the seed presets. The heads
on top (LM head, masked-LM head, classifier) are position-wise and are not recorded: read them at the
positions you need (explorer.interpret.dla does).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

import torch
from torch import Tensor, nn


OPT_IN = frozenset({"x", "q", "k", "mask", "bias"})  # kept only when `only` names them (see the module docstring)


class Record:
    """The tensors of one call, by site name (see the module docstring). A mapping you fill by passing it.

    `only`: the sites to keep, by their name within their block ("v", "z", "scale", "mlp", "mlp.scale", "embed",
    "embed.scale", and the opt-in "x", "q", "k", "mask", "bias") or by their full name ("decoder.3.q": that block's
    only); the others are neither kept nor computed (a norm's divisor is computed only when wanted)."""

    def __init__(self, only: Collection[str] | None = None) -> None:
        self.tensors: dict[str, Tensor] = {}
        self.only = None if only is None else frozenset(only)

    def __getitem__(self, name: str) -> Tensor:
        try:
            return self.tensors[name]
        except KeyError:
            raise KeyError(f"{name!r} was not recorded; recorded sites: {', '.join(self.tensors) or 'none'}") \
                from None

    def __setitem__(self, name: str, value: Tensor) -> None:
        self.tensors[name] = value

    def __contains__(self, name: object) -> bool:
        return name in self.tensors

    def __iter__(self) -> Iterator[str]:
        return iter(self.tensors)

    def __len__(self) -> int:
        return len(self.tensors)

    def get(self, name: str, default: Tensor | None = None) -> Tensor | None:
        return self.tensors.get(name, default)

    def at(self, prefix: str) -> "RecordSlot":
        """The writer of one block's sites, e.g. at("decoder.3") writes "decoder.3.z"."""
        return RecordSlot(self, prefix)

    def wants(self, prefix: str, name: str) -> bool:
        """Whether site `name` of block `prefix` is kept (see `only`; the OPT_IN sites only when named)."""
        only = self.only
        if only is None:
            return name not in OPT_IN
        return name in only or f"{prefix}.{name}" in only


class RecordSlot:
    """Writes `name` as `prefix.name` into its Record: what one block or stack is handed."""

    __slots__ = ("record", "prefix")

    def __init__(self, record: Record, prefix: str) -> None:
        self.record = record
        self.prefix = prefix

    def __setitem__(self, name: str, value: Tensor | None) -> None:
        """Keep `value` as `prefix.name` if the record wants it; None (a block without a mask or bias) is not kept."""
        if value is not None and self.record.wants(self.prefix, name):
            self.record.tensors[f"{self.prefix}.{name}"] = value

    def put_scale(self, name: str, norm: nn.Module, x: Tensor) -> None:
        """Record what `norm` divides `x` (..., D) by, as `prefix.name` (..., 1)."""
        if self.record.wants(self.prefix, name):
            self.record.tensors[f"{self.prefix}.{name}"] = norm_scale(norm, x)


def norm_scale(norm: nn.Module, x: Tensor) -> Tensor:
    """(..., D) -> (..., 1): the divisor of a LayerNorm (sqrt(biased var + eps)) or RMSNorm (sqrt(mean x^2 + eps)),
    in float32 at least (as torch's kernels compute it for float16 inputs)."""
    x = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    if isinstance(norm, nn.LayerNorm):
        return (x.var(-1, unbiased=False, keepdim=True) + norm.eps).sqrt()
    if isinstance(norm, nn.RMSNorm):
        eps = torch.finfo(x.dtype).eps if norm.eps is None else norm.eps
        return (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()
    raise TypeError(f"no known divisor for a {type(norm).__name__}")

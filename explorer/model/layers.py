"""One encoder layer and one decoder layer, built from attention, a feed-forward block and
residual sublayer connections (pre-norm or post-norm, sequential or parallel).

Shapes: B batch, H heads, T target length, S source length, D model width, F = d_ff.

    EncoderLayer(x (B, T, D), mask, head_mask, rotary, score_bias, head_hook)
                                                                      -> x (B, T, D), self weights (B, H, T, T)
    DecoderLayer(x (B, T, D), memory (B, S, D) | None, ..., rotary, score_bias)
                                                                      -> x, self weights, cross weights (B, H, T, S)
    rotary and score_bias (1, H, T, T) act on self-attention only (rotary positions, T5's relative bias);
    head_hook / cross_head_hook reach the self- / cross-attention (see MultiHeadAttention);
    self_cache / cross_cache are this call's KVSlots of the two (decoding with a cache, see cache.py).
    record / cross_record: this call's RecordSlots (see record.py) of the layer ("scale", "v", "z", "mlp",
    "mlp.scale") and of its cross-attention ("scale", "v", "z"), or None.
    resid_hook: this call's (point, x (B, T, D)) -> x of the layer, or None: reads or replaces the residual stream
    where TransformerLens's blocks have hook_resid_mid, hook_resid_mid_cross and hook_resid_post (see
    SublayerConnection: the sum before a post-norm sublayer's norm); "resid_mid" only in sequential layers.
    receivers / cross_receivers: this call's (role, x) -> input of the self-attention and feed-forward block / of the
    cross-attention, or None: each receiver's own input (see stacks.py). Roles "q", "k", "v": x is the stream the
    block reads before its norm (B, T, D) (cross "k", "v": the memory (B, S, D), which the block reads as it is);
    the result (B, ., D) or one row per query head (B, ., H, D) is normed by the block (cross k, v: not) and
    projected. Role "mlp.in": the stream the feed-forward block reads before its norm -> (B, T, D). With them the
    attention sublayer's norm divisor ("scale") is not recorded.

    sequential (default): x = x + attn(norm1 x); x = x + ff(norm2 x)       (pre-norm; post-norm likewise)
    parallel_residual:    x = x + attn(norm1 x) + ff(norm2 x)              (GPT-NeoX)
    FeedForward "standard": linear2(act(linear1 x)); "gated": linear2(act(gate x) * linear1 x) (SwiGLU)

Submodule names follow torch.nn.TransformerEncoderLayer where they can (`self_attn`,
`linear1`/`linear2` inside `feed_forward`), so weight import stays a readable copy.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention import HeadHook, MultiHeadAttention
from .cache import KVSlot
from .config import TransformerConfig
from .norms import make_norm
from .record import RecordSlot
from .rotary import RotaryTables

LayerResidHook = Callable[[str, Tensor], Tensor]  # (point, x (B, T, D)) -> x: one layer's residual-stream hook
LayerReceivers = Callable[[str, Tensor], Tensor]  # (role, x) -> that receiver's input: one block's receivers


def at_point(hook: LayerResidHook | None, point: str) -> Callable[[Tensor], Tensor] | None:
    """The layer's hook as one point's x -> x (None stays None)."""
    return None if hook is None else (lambda x: hook(point, x))


def gelu_tanh(x: Tensor) -> Tensor:
    return F.gelu(x, approximate="tanh")


ACTIVATION_FUNCTIONS = {"relu": F.relu, "gelu": F.gelu, "gelu_tanh": gelu_tanh, "silu": F.silu}


class FeedForward(nn.Module):
    """Position-wise Linear(D, F) -> activation (x gate) -> dropout -> Linear(F, D).

    `linear1` is the up projection in both kinds; `gate` exists only in the gated kind.
    """

    def __init__(self, d_model: int, d_ff: int, activation: str, dropout: float, *, gated: bool = False,
                 bias: bool = True):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.gate = nn.Linear(d_model, d_ff, bias=bias) if gated else None
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.activation = ACTIVATION_FUNCTIONS[activation]
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        if self.gate is None:
            hidden = self.activation(self.linear1(x))  # (B, T, F)
        else:
            hidden = self.activation(self.gate(x)) * self.linear1(x)  # (B, T, F)
        return self.linear2(self.dropout(hidden))


class SublayerConnection(nn.Module):
    """The Annotated Transformer's residual connection, in both norm positions.

    pre-norm:  x + dropout(sublayer(norm(x)))      (`enter` normalises, `exit` adds)
    post-norm: norm(x + dropout(sublayer(x)))      (`enter` is the identity, `exit` adds and normalises)
    Split in two calls so attention can hand back its weights without any state on the module.
    With a RecordSlot, the call that normalises records the norm's divisor as `name` (one check per call).
    `hook` (per call) reads or replaces the sum x + sublayer(...) before a post-norm's norm: the residual stream
    as TransformerLens's hook_resid_mid / hook_resid_post see it (its BERT block hooks the sum before each norm).
    """

    def __init__(self, d_model: int, dropout: float, norm_first: bool, eps: float, norm: str = "layernorm"):
        super().__init__()
        self.norm = make_norm(norm, d_model, eps)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def enter(self, x: Tensor, record: RecordSlot | None = None, name: str = "scale") -> Tensor:
        if not self.norm_first:
            return x
        if record is not None:
            record.put_scale(name, self.norm, x)
        return self.norm(x)

    def exit(self, x: Tensor, sublayer_out: Tensor, record: RecordSlot | None = None, name: str = "scale",
             hook: Callable[[Tensor], Tensor] | None = None) -> Tensor:
        y = x + self.dropout(sublayer_out)
        if hook is not None:
            y = hook(y)
        if self.norm_first:
            return y
        if record is not None:
            record.put_scale(name, self.norm, y)
        return self.norm(y)


def receiver_inputs(receivers: LayerReceivers, sublayer: SublayerConnection | None, x: Tensor,
                    memory: Tensor | None = None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
    """An attention block's three inputs from its receivers: the query's from x, the keys' and values' from x
    (self-attention) or the memory (cross-attention: taken as it is). `sublayer` normalises what it would have
    normalised (pre-norm); each result (B, ., D) or (B, ., H, D)."""
    def one(role: str, source: Tensor, norm: bool) -> Tensor:
        out = receivers(role, source)
        if not isinstance(out, Tensor) or out.shape[:2] != source.shape[:2] or out.shape[-1] != source.shape[-1] \
                or out.dim() not in (3, 4):
            got = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise ValueError(f"receivers must return the {role} input shaped {tuple(source.shape)} or (B, T, H, D) "
                             f"per query head, got {got}")
        return sublayer.enter(out) if norm else out

    kv_source = x if memory is None else memory
    return one("q", x, True), (one("k", kv_source, memory is None), one("v", kv_source, memory is None))


def mlp_input(receivers: LayerReceivers | None, x: Tensor) -> Tensor:
    """What the feed-forward block reads before its norm: x, or its receiver's own input."""
    if receivers is None:
        return x
    out = receivers("mlp.in", x)
    if not isinstance(out, Tensor) or out.shape != x.shape:
        got = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
        raise ValueError(f"receivers must return the mlp.in input shaped {tuple(x.shape)}, got {got}")
    return out


def make_attention(config: TransformerConfig) -> MultiHeadAttention:
    c = config
    return MultiHeadAttention(c.d_model, c.n_heads, c.resolved_head_dim, c.resolved_attention_dropout,
                              n_kv_heads=c.resolved_kv_heads, qkv_bias=c.qkv_bias, out_bias=c.out_bias,
                              scale=c.resolved_attn_scale)


def make_sublayer(config: TransformerConfig) -> SublayerConnection:
    return SublayerConnection(config.d_model, config.dropout, config.norm_first, config.layer_norm_eps, config.norm)


def make_feed_forward(config: TransformerConfig) -> FeedForward:
    return FeedForward(config.d_model, config.d_ff, config.activation, config.resolved_ffn_dropout,
                       gated=config.mlp == "gated", bias=config.mlp_bias)


class EncoderLayer(nn.Module):
    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.self_attn = make_attention(config)
        self.feed_forward = make_feed_forward(config)
        self.attn_sublayer = make_sublayer(config)
        self.ff_sublayer = make_sublayer(config)
        self.parallel_residual = config.parallel_residual

    def forward(self, x: Tensor, mask: Tensor | None = None, head_mask: Tensor | None = None,
                need_weights: bool = True, rotary: RotaryTables | None = None,
                score_bias: Tensor | None = None, head_hook: HeadHook | None = None,
                weights_dtype: torch.dtype | None = None,
                record: RecordSlot | None = None, plans: dict | None = None,
                resid_hook: LayerResidHook | None = None,
                receivers: LayerReceivers | None = None) -> tuple[Tensor, Tensor | None]:
        q_in, kv_in = ((self.attn_sublayer.enter(x, record), None) if receivers is None
                       else receiver_inputs(receivers, self.attn_sublayer, x))
        attn_out, weights = self.self_attn(q_in, mask=mask, head_mask=head_mask,
                                           rotary=rotary, need_weights=need_weights, bias=score_bias,
                                           head_hook=head_hook, weights_dtype=weights_dtype, record=record,
                                           plans=plans, kv_inputs=kv_in)
        # parallel: x + attn is no point of the residual stream (TransformerLens has no hook_resid_mid there)
        y = self.attn_sublayer.exit(x, attn_out, record,
                                    hook=None if self.parallel_residual else at_point(resid_hook, "resid_mid"))
        ff_in = x if self.parallel_residual else y  # parallel: both sublayers read the layer's input
        ff_out = self.feed_forward(self.ff_sublayer.enter(mlp_input(receivers, ff_in), record, "mlp.scale"))
        if record is not None:
            record["mlp"] = ff_out
        return self.ff_sublayer.exit(y, ff_out, record, "mlp.scale", at_point(resid_hook, "resid_post")), weights


class DecoderLayer(nn.Module):
    """Masked self-attention, then (encoder-decoder only) cross-attention over the memory, then FF."""

    def __init__(self, config: TransformerConfig, cross_attention: bool):
        super().__init__()
        self.self_attn = make_attention(config)
        self.self_sublayer = make_sublayer(config)
        self.cross_attn = make_attention(config) if cross_attention else None
        self.cross_sublayer = make_sublayer(config) if cross_attention else None
        self.feed_forward = make_feed_forward(config)
        self.ff_sublayer = make_sublayer(config)
        self.parallel_residual = config.parallel_residual  # validated: never together with cross-attention

    def forward(self, x: Tensor, memory: Tensor | None = None, self_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, head_mask: Tensor | None = None,
                cross_head_mask: Tensor | None = None, need_weights: bool = True,
                rotary: RotaryTables | None = None,
                score_bias: Tensor | None = None, head_hook: HeadHook | None = None,
                cross_head_hook: HeadHook | None = None, self_cache: KVSlot | None = None,
                cross_cache: KVSlot | None = None,
                weights_dtype: torch.dtype | None = None, record: RecordSlot | None = None,
                cross_record: RecordSlot | None = None, plans: dict | None = None,
                resid_hook: LayerResidHook | None = None, receivers: LayerReceivers | None = None,
                cross_receivers: LayerReceivers | None = None) -> tuple[Tensor, Tensor | None, Tensor | None]:
        q_in, kv_in = ((self.self_sublayer.enter(x, record), None) if receivers is None
                       else receiver_inputs(receivers, self.self_sublayer, x))
        attn_out, self_weights = self.self_attn(q_in, mask=self_mask,
                                                head_mask=head_mask, rotary=rotary, need_weights=need_weights,
                                                bias=score_bias, head_hook=head_hook, cache=self_cache,
                                                weights_dtype=weights_dtype, record=record, plans=plans,
                                                kv_inputs=kv_in)
        y = self.self_sublayer.exit(x, attn_out, record,
                                    hook=None if self.parallel_residual else at_point(resid_hook, "resid_mid"))
        cross_weights = None
        if self.cross_attn is not None:
            if memory is None:
                raise ValueError("this decoder layer has cross-attention and needs the encoder memory")
            q_in, kv_in = ((self.cross_sublayer.enter(y, cross_record), None) if cross_receivers is None
                           else receiver_inputs(cross_receivers, self.cross_sublayer, y, memory))
            cross_out, cross_weights = self.cross_attn(q_in, memory,
                                                       mask=memory_mask, head_mask=cross_head_mask,
                                                       need_weights=need_weights, head_hook=cross_head_hook,
                                                       cache=cross_cache, weights_dtype=weights_dtype,
                                                       record=cross_record, plans=plans, kv_inputs=kv_in)
            y = self.cross_sublayer.exit(y, cross_out, cross_record, hook=at_point(resid_hook, "resid_mid_cross"))
        ff_in = x if self.parallel_residual else y
        ff_out = self.feed_forward(self.ff_sublayer.enter(mlp_input(receivers, ff_in), record, "mlp.scale"))
        if record is not None:
            record["mlp"] = ff_out
        return (self.ff_sublayer.exit(y, ff_out, record, "mlp.scale", at_point(resid_hook, "resid_post")),
                self_weights, cross_weights)

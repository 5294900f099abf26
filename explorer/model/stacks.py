"""Encoder and decoder stacks (N layers + optional final LayerNorm), and weight import from
`torch.nn.TransformerEncoder`, `torch.nn.TransformerDecoder` and `torch.nn.Transformer`.

Shapes: B batch, H heads, L layers, T length of x, S memory length, D model width.

    stack(x (B, T, D), memory (B, S, D) | None, *,
          key_mask (B, T) bool       True = real token (keys of self-attention)
          positions (B|1, T) long    token positions for rotary attention; None = from key_mask (left padding)
          memory_key_mask (B, S) bool True = real source token (keys of cross-attention)
          attn_mask (T, T) | (B, T, T) | (B, 1, T, T) bool, True = may attend (e.g. causal)
          head_mask (L, H) | (B, L, H), 1 = on; cross_head_mask likewise for cross-attention
          head_hook (kind, layer, z (B, H, T, Dh)) -> z, per call: every head output before W_o,
                    kind "encoder" / "decoder" (self-attention) / "cross", layer counted from 0)
          cache     DecoderCache of this call (decoder only): x holds only the T tokens after the
                    K cached ones; key_mask is then (B, K + T), attn_mask covers the new query rows
                    (T, K + T), positions are the new tokens' (B|1, T), and weights are (B, H, T, K + T)
          record    Record of this call (record.py), per call like head_hook: each layer writes its sites
                    under "{kind}.{layer}." ("encoder" / "decoder", and "cross" for cross-attention), the
                    final norm its divisor as "{kind}.final.scale"
          resid_hook (site, x (B, T, D)) -> x of the same shape, per call: reads or replaces the residual stream
                    at the sites of TransformerLens's blocks, named "{kind}.{layer}.{point}" (kind "encoder" /
                    "decoder", the stack's), point:
                      resid_pre        the layer's input (layer 0: the embeddings)
                      resid_mid        x + self-attention output (sequential layers only: GPT-NeoX's parallel
                                       residual has no such point)
                      resid_mid_cross  resid_mid (normed if post-norm) + cross-attention output (decoders of
                                       encoder-decoders)
                      resid_post       the layer's output; in a post-norm layer (BERT, BART, ...) the sum before
                                       its last norm, as TransformerLens's BERT block hooks it
                    With a cache, x holds only the T new tokens. hidden_states hold what the layers read and
                    wrote after the hook
          receivers (site, x) -> that receiver's input, per call: each reader of the residual stream gets its own
                    input (edge patching and edge attribution: explorer.interpret.circuits), sites:
                      "{kind}.{layer}.q" / ".k" / ".v"  an attention block's query / key / value input (kind
                                       "encoder", "decoder", "cross"): x the stream the block reads before its norm
                                       (B, T, D) -> (B, T, D) or one row per query head (B, T, H, D), which the block
                                       normalises as it normalises x. Cross-attention's ".k" / ".v": x is the memory
                                       (B, S, D) as the projections read it (the encoder's output after its final
                                       norm), the result is read as it is (no norm)
                      "{kind}.{layer}.mlp.in"  the feed-forward block's input before its norm, (B, T, D)
                      "{kind}.final"   the stack's last stream before its final norm, (B, T, D): what the LM head
                                       reads (decoder), what becomes the memory (encoder)
                    Returning x (or x per head) changes nothing; no cache with it
      -> StackOutput(output (B, T, D), attentions=StackAttentions(self_attn, cross))
         with one (B, H, T, T) / (B, H, T, S) tensor per layer ( () where there is none).

The stack applies what belongs to its layers: rotary positions (self-attention queries and keys),
T5's relative position bias (positional="relative": one table per stack, bidirectional in an
encoder, causal in a decoder, computed once per run and added in every layer) and, in a decoder,
the sliding window of `config.sliding_window`, so every caller of `run` (the model, the
head-importance sweep) gets them the same way.

Inputs are batch-first; for a torch module built with batch_first=False, transpose your
(T, B, D) tensors before calling the imported stack.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch.nn.functional as F
import torch
from torch import Tensor, nn

from .cache import DecoderCache
from .config import TransformerConfig
from .layers import DecoderLayer, EncoderLayer
from .masks import combine_masks, key_mask_to_attention, sliding_window_mask
from .norms import make_norm
from .returns import Attentions
from .record import Record
from .positional import position_ids
from .relative import RelativePositionBias
from .rotary import RotaryTables, rotary_tables

StackHeadHook = Callable[[str, int, Tensor], Tensor]  # (kind, layer, z (B, H, T, Dh)) -> z
ResidHook = Callable[[str, Tensor], Tensor]  # (site "{kind}.{layer}.{point}", x (B, T, D)) -> x
Receivers = Callable[[str, Tensor], Tensor]  # (site "{kind}.{layer}.{role}" or "{kind}.final", x) -> the input
RESID_POINTS = ("resid_pre", "resid_mid", "resid_mid_cross", "resid_post")


class StackAttentions(NamedTuple):
    self_attn: tuple[Tensor, ...]  # one (B, H, T, T) per layer
    cross: tuple[Tensor, ...]  # one (B, H, T, S) per layer; () for an encoder or decoder-only stack


class StackOutput(NamedTuple):
    output: Tensor  # (B, T, D), after the final norm if the stack has one
    attentions: StackAttentions


class LayerInputs(NamedTuple):
    """What every layer of one run shares."""

    self_mask: Tensor | None  # (B|1, 1, T|1, T) True = may attend
    memory_mask: Tensor | None  # (B, 1, 1, S) True = real source token
    rotary: RotaryTables | None  # cos, sin of the positions (rotary models only)
    score_bias: Tensor | None  # (1, H, T, T) relative position bias of self-attention (T5 only)
    need_weights: bool
    head_hook: StackHeadHook | None = None  # per-call reader / replacer of head outputs z
    cache: DecoderCache | None = None  # keys and values of the tokens before x (decoding one token at a time)
    weights_dtype: torch.dtype | None = None  # the returned weights' dtype (None: the compute dtype)
    record: Record | None = None  # per-call record of the layers' activations (record.py)
    plans: dict | None = None  # the masks' block plans, made by the first layer for all (attention.block_plan)
    resid_hook: ResidHook | None = None  # per-call reader / replacer of the residual stream
    receivers: Receivers | None = None  # per-call input of each reader of the residual stream


def bind_hook(hook: StackHeadHook | None, kind: str, layer: int):
    """The stack-wide hook as one attention block's z -> z (None stays None)."""
    return None if hook is None else (lambda z: hook(kind, layer, z))


def call_resid_hook(hook: ResidHook, site: str, x: Tensor, name: str = "resid_hook") -> Tensor:
    hooked = hook(site, x)
    if not isinstance(hooked, Tensor) or hooked.shape != x.shape:
        got = tuple(hooked.shape) if isinstance(hooked, Tensor) else type(hooked).__name__
        raise ValueError(f"{name} must return x shaped {tuple(x.shape)} at {site}, got {got}")
    return hooked


def bind_receivers(receivers: Receivers | None, kind: str, layer: int):
    """The stack-wide receivers as one block's (role, x) -> input (None stays None)."""
    return None if receivers is None else (lambda role, x: receivers(f"{kind}.{layer}.{role}", x))


def bind_resid_hook(hook: ResidHook | None, kind: str, layer: int):
    """The stack-wide residual hook as one layer's (point, x) -> x (None stays None)."""
    return None if hook is None else (lambda point, x: call_resid_hook(hook, f"{kind}.{layer}.{point}", x))


class StackRun(NamedTuple):
    output: Tensor
    attentions: StackAttentions
    hidden_states: tuple[Tensor, ...]  # input of the first layer run, then each layer's output
    self_mask: Tensor | None = None  # (B|1, 1, T|1, T) applied to self-attention; None = unmasked
    memory_mask: Tensor | None = None  # (B, 1, 1, S) applied to cross-attention keys


def layer_head_mask(head_mask: Tensor | None, layer: int, n_layers: int, n_heads: int) -> Tensor | None:
    """(L, H) or (B, L, H) -> that layer's (H,) or (B, H)."""
    if head_mask is None:
        return None
    if head_mask.dim() not in (2, 3) or tuple(head_mask.shape[-2:]) != (n_layers, n_heads):
        raise ValueError(f"head mask must be (n_layers, n_heads)=({n_layers}, {n_heads}) or (B, {n_layers}, "
                         f"{n_heads}), got {tuple(head_mask.shape)}")
    return head_mask[..., layer, :]


class Stack(nn.Module):
    """N identical layers and an optional final norm; shared by Encoder and Decoder."""

    kind = "stack"  # "encoder" / "decoder": the head_hook kind and record prefix of its self-attention

    def __init__(self, config: TransformerConfig, layers: list[nn.Module], bidirectional: bool):
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList(layers)
        self.norm = make_norm(config.norm, config.d_model, config.layer_norm_eps) if config.resolved_final_norm else None
        self.sliding_window: int | None = None  # set by Decoder
        self.relative_bias = (RelativePositionBias(config.relative_buckets, config.relative_max_distance,
                                                   config.n_heads, bidirectional)
                              if config.positional == "relative" else None)

    @property
    def n_heads(self) -> int:
        return self.config.n_heads

    def forward(self, x: Tensor, memory: Tensor | None = None, **kwargs) -> StackOutput:
        run = self.run(x, memory, **kwargs)
        return StackOutput(run.output, run.attentions)

    def run(self, x: Tensor, memory: Tensor | None = None, *, key_mask: Tensor | None = None,
            memory_key_mask: Tensor | None = None, attn_mask: Tensor | None = None,
            head_mask: Tensor | None = None, cross_head_mask: Tensor | None = None,
            need_weights: bool = True, first_layer: int = 0, positions: Tensor | None = None,
            weights_dtype: torch.dtype | None = None,
            head_hook: StackHeadHook | None = None, cache: DecoderCache | None = None,
            record: Record | None = None, resid_hook: ResidHook | None = None,
            receivers: Receivers | None = None) -> StackRun:
        """Run layers[first_layer:]; the head-importance sweep restarts above an unchanged prefix.
        weights_dtype: each layer's returned weights are made in it, block by block (float16 halves what a long
        input keeps); None keeps the compute dtype. cache: see the module docstring."""
        if cache is not None and (first_layer or not isinstance(self, Decoder)):
            raise ValueError("only a decoder stack run from its first layer decodes with a cache")
        if cache is not None and receivers is not None:
            raise ValueError("per-receiver inputs (receivers) do not decode with a cache")
        past = 0 if cache is None else cache.length
        inputs = self.layer_inputs(x, key_mask, memory_key_mask, attn_mask, positions, need_weights, past)
        inputs = inputs._replace(head_hook=head_hook, cache=cache, weights_dtype=weights_dtype, record=record,
                                 plans={}, resid_hook=resid_hook, receivers=receivers)
        L = len(self.layers)
        self_weights, cross_weights, hidden = [], [], [x]
        for i in range(first_layer, L):
            if resid_hook is not None:
                x = hidden[-1] = call_resid_hook(resid_hook, f"{self.kind}.{i}.resid_pre", x)
            x, sw, cw = self.run_layer(i, x, memory, inputs, layer_head_mask(head_mask, i, L, self.n_heads),
                                       layer_head_mask(cross_head_mask, i, L, self.n_heads))
            hidden.append(x)
            if sw is not None:
                self_weights.append(sw)
            if cw is not None:
                cross_weights.append(cw)
        if cache is not None:
            cache.length = past + x.shape[1]
        if receivers is not None:
            x = call_resid_hook(receivers, f"{self.kind}.final", x, "receivers")
        if self.norm is not None:
            if record is not None:
                record.at(f"{self.kind}.final").put_scale("scale", self.norm, x)
            x = self.norm(x)
        return StackRun(x, StackAttentions(tuple(self_weights), tuple(cross_weights)), tuple(hidden),
                        inputs.self_mask, inputs.memory_mask)

    def layer_inputs(self, x: Tensor, key_mask: Tensor | None, memory_key_mask: Tensor | None,
                     attn_mask: Tensor | None, positions: Tensor | None, need_weights: bool,
                     past: int = 0) -> LayerInputs:
        """Masks, rotary tables and relative bias of the T query rows past..past+T-1 over keys 0..past+T-1."""
        T = x.shape[1]
        K = past + T
        window = (None if self.sliding_window is None
                  else sliding_window_mask(K, self.sliding_window, x.device)[past:])  # (T, K)
        self_mask = combine_masks(None if key_mask is None else key_mask_to_attention(key_mask), attn_mask, window)
        memory_mask = None if memory_key_mask is None else key_mask_to_attention(memory_key_mask)
        rotary = None
        if self.config.positional == "rotary":
            rotary = rotary_tables(position_ids(key_mask, K, x.device)[:, past:] if positions is None else positions,
                                   self.config)
        score_bias = self.relative_bias(T, K, past) if self.relative_bias is not None else None
        return LayerInputs(self_mask, memory_mask, rotary, score_bias, need_weights)

    def run_layer(self, i: int, x: Tensor, memory: Tensor | None, inputs: LayerInputs, head_mask: Tensor | None,
                  cross_head_mask: Tensor | None) -> tuple[Tensor, Tensor | None, Tensor | None]:
        raise NotImplementedError


class Encoder(Stack):
    kind = "encoder"

    def __init__(self, config: TransformerConfig, n_layers: int | None = None):
        n = config.encoder_layers if n_layers is None else n_layers
        super().__init__(config, [EncoderLayer(config) for _ in range(n)], bidirectional=True)

    def run_layer(self, i, x, memory, inputs, head_mask, cross_head_mask):
        if memory is not None:
            raise ValueError("an encoder stack takes no memory")
        x, weights = self.layers[i](x, inputs.self_mask, head_mask, inputs.need_weights, inputs.rotary,
                                    inputs.score_bias, bind_hook(inputs.head_hook, "encoder", i),
                                    weights_dtype=inputs.weights_dtype,
                                    record=None if inputs.record is None else inputs.record.at(f"encoder.{i}"),
                                    plans=inputs.plans, resid_hook=bind_resid_hook(inputs.resid_hook, "encoder", i),
                                    receivers=bind_receivers(inputs.receivers, "encoder", i))
        return x, weights, None

    @classmethod
    def from_torch(cls, module: nn.TransformerEncoder) -> "Encoder":
        """Copy a torch.nn.TransformerEncoder into an explorer Encoder (same outputs, plus weights)."""
        config = config_from_torch_layer(module.layers[0], len(module.layers), module.norm is not None, "encoder")
        stack = cls(config, len(module.layers))
        load_renamed(stack, module.state_dict(), ENCODER_RENAMES)
        return stack.train(module.training)


class Decoder(Stack):
    kind = "decoder"

    def __init__(self, config: TransformerConfig, n_layers: int | None = None, cross_attention: bool | None = None):
        n = config.decoder_layers if n_layers is None else n_layers
        cross = config.arch == "encoder-decoder" if cross_attention is None else cross_attention
        super().__init__(config, [DecoderLayer(config, cross) for _ in range(n)], bidirectional=False)
        self.sliding_window = config.sliding_window

    def run_layer(self, i, x, memory, inputs, head_mask, cross_head_mask):
        cache, record = inputs.cache, inputs.record
        return self.layers[i](x, memory, inputs.self_mask, inputs.memory_mask, head_mask, cross_head_mask,
                              inputs.need_weights, inputs.rotary, inputs.score_bias,
                              bind_hook(inputs.head_hook, "decoder", i), bind_hook(inputs.head_hook, "cross", i),
                              None if cache is None else cache.self_attn[i], None if cache is None else cache.cross[i],
                              weights_dtype=inputs.weights_dtype,
                              record=None if record is None else record.at(f"decoder.{i}"),
                              cross_record=None if record is None else record.at(f"cross.{i}"), plans=inputs.plans,
                              resid_hook=bind_resid_hook(inputs.resid_hook, "decoder", i),
                              receivers=bind_receivers(inputs.receivers, "decoder", i),
                              cross_receivers=bind_receivers(inputs.receivers, "cross", i))

    @classmethod
    def from_torch(cls, module: nn.TransformerDecoder) -> "Decoder":
        """Copy a torch.nn.TransformerDecoder (self + cross attention) into an explorer Decoder."""
        config = config_from_torch_layer(module.layers[0], len(module.layers), module.norm is not None,
                                         "encoder-decoder")
        stack = cls(config, len(module.layers), cross_attention=True)
        load_renamed(stack, module.state_dict(), DECODER_RENAMES)
        return stack.train(module.training)


class EncoderDecoderStacks(nn.Module):
    """Both stacks of a `torch.nn.Transformer` (which has no embeddings), with attention returned.

    forward(src_x (B, S, D), tgt_x (B, T, D), *, src_key_mask, tgt_key_mask, src_attn_mask,
            tgt_attn_mask, head_mask={"encoder", "decoder", "cross"}) -> (y (B, T, D), attentions)
    where attentions has `.encoder`, `.decoder` and `.cross` tuples. The source key mask also
    masks cross-attention keys (torch's `memory_key_padding_mask`).
    """

    def __init__(self, encoder: Encoder, decoder: Decoder):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    @classmethod
    def from_torch(cls, module: nn.Transformer) -> "EncoderDecoderStacks":
        return cls(Encoder.from_torch(module.encoder), Decoder.from_torch(module.decoder)).train(module.training)

    def forward(self, src_x: Tensor, tgt_x: Tensor, *, src_key_mask: Tensor | None = None,
                tgt_key_mask: Tensor | None = None, src_attn_mask: Tensor | None = None,
                tgt_attn_mask: Tensor | None = None, head_mask: dict[str, Tensor] | None = None,
                need_weights: bool = True):
        head_mask = head_mask or {}
        memory, enc_attn = self.encoder(src_x, key_mask=src_key_mask, attn_mask=src_attn_mask,
                                        head_mask=head_mask.get("encoder"), need_weights=need_weights)
        y, dec_attn = self.decoder(tgt_x, memory, key_mask=tgt_key_mask, memory_key_mask=src_key_mask,
                                   attn_mask=tgt_attn_mask, head_mask=head_mask.get("decoder"),
                                   cross_head_mask=head_mask.get("cross"), need_weights=need_weights)
        return y, Attentions(enc_attn.self_attn, dec_attn.self_attn, dec_attn.cross)


# ------------------------------------------------------------------------------------------ torch import
ATTENTION_RENAMES = {"in_proj_weight": "in_proj.weight", "in_proj_bias": "in_proj.bias"}
ENCODER_RENAMES = {"self_attn.": "self_attn.", "linear1.": "feed_forward.linear1.",
                   "linear2.": "feed_forward.linear2.", "norm1.": "attn_sublayer.norm.",
                   "norm2.": "ff_sublayer.norm."}
DECODER_RENAMES = {"self_attn.": "self_attn.", "multihead_attn.": "cross_attn.",
                   "linear1.": "feed_forward.linear1.", "linear2.": "feed_forward.linear2.",
                   "norm1.": "self_sublayer.norm.", "norm2.": "cross_sublayer.norm.",
                   "norm3.": "ff_sublayer.norm."}


def rename_torch_key(key: str, layer_renames: dict[str, str]) -> str:
    """'layers.0.norm1.weight' -> 'layers.0.attn_sublayer.norm.weight'; 'norm.weight' stays."""
    if not key.startswith("layers."):
        return key
    _, index, rest = key.split(".", 2)
    for old, new in layer_renames.items():
        if rest.startswith(old):
            rest = new + rest[len(old):]
            break
    for old, new in ATTENTION_RENAMES.items():
        if rest.endswith(old):
            rest = rest[: -len(old)] + new
    return f"layers.{index}.{rest}"


def load_renamed(stack: Stack, torch_state: dict[str, Tensor], renames: dict[str, str]) -> None:
    state = {rename_torch_key(k, renames): v for k, v in torch_state.items()}
    stack.load_state_dict(state, strict=True)


def config_from_torch_layer(layer: nn.Module, n_layers: int, final_norm: bool, arch: str) -> TransformerConfig:
    attn = layer.self_attn
    if not attn._qkv_same_embed_dim:
        raise ValueError("cannot import torch attention whose key/value widths differ from d_model")
    activation = torch_activation_name(layer.activation)
    if attn.in_proj_bias is None or layer.linear1.bias is None or layer.norm1.bias is None:
        raise ValueError("torch layers built with bias=False cannot be imported")
    return TransformerConfig(
        arch=arch, vocab_size=1, d_model=attn.embed_dim, n_heads=attn.num_heads, n_layers=n_layers,
        d_ff=layer.linear1.out_features, dropout=layer.dropout1.p, attention_dropout=float(attn.dropout),
        ffn_dropout=layer.dropout.p, norm_first=layer.norm_first,
        final_norm=final_norm, activation=activation, layer_norm_eps=layer.norm1.eps,
        positional="none")



def torch_activation_name(activation) -> str:
    """torch layers keep F.relu / F.gelu (from a string) or a module instance."""
    if activation is F.relu or isinstance(activation, nn.ReLU):
        return "relu"
    if activation is F.gelu or (isinstance(activation, nn.GELU) and activation.approximate == "none"):
        return "gelu"
    raise ValueError(f"only relu and gelu feed-forward activations can be imported, not {activation!r}")

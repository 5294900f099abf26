"""Llama, Mistral and Qwen2 (TinyLlama, SmolLM, Qwen2.5, ...): one layout with per-type differences
as data. A pre-norm decoder with RMSNorm, rotary positions (rotate_half layout, optional "linear" or
"llama3" scaling), the gated SwiGLU feed-forward down(silu(gate x) * up x), grouped-query attention
(`num_key_value_heads`), a final RMSNorm and a tied or untied output projection.

    llama    biases as `attention_bias` (q, k, v and o) and `mlp_bias` say; no window
    mistral  no biases; `sliding_window` keys (null in recent versions)
    qwen2    q, k, v biased, o not; a window only with `use_sliding_window`, and only on layers from
             `max_window_layers` on: a window on some layers but not others is refused

Weights: separate q_proj, k_proj, v_proj stack into our in_proj [W_q; W_k; W_v]; gate_proj, up_proj,
down_proj are feed_forward.gate, .linear1, .linear2. `rotary_emb.inv_freq` in old checkpoints is a buffer.
"""

from __future__ import annotations

import re
from typing import Any

from ..model import TransformerConfig
from .weight_plan import Family, HFConfig, Target, rope_settings, stack_rows


def qwen2_window(cfg: HFConfig, n_layers: int) -> int | None:
    """Qwen2's window: on layers >= max_window_layers when use_sliding_window (or as layer_types lists)."""
    if not cfg.get("use_sliding_window", False) or cfg.get("sliding_window") is None:
        return None
    types = cfg.get("layer_types") or ["sliding_attention" if i >= cfg.get("max_window_layers", n_layers)
                                       else "full_attention" for i in range(n_layers)]
    sliding = [i for i, kind in enumerate(types) if kind == "sliding_attention"]
    if not sliding:
        return None
    if len(sliding) != n_layers:
        raise cfg.error(f"a sliding window on layers {sliding[0]}..{sliding[-1]} only is not supported (the "
                        f"explorer applies one window to every layer)")
    return cfg.get("sliding_window")


def type_options(cfg: HFConfig, n_layers: int) -> dict[str, Any]:
    """What differs between the three model types: biases and the sliding window."""
    kind = cfg.get("model_type")
    if kind == "qwen2":
        return dict(qkv_bias=True, out_bias=False, mlp_bias=False, sliding_window=qwen2_window(cfg, n_layers))
    if kind == "mistral":
        return dict(qkv_bias=False, out_bias=False, mlp_bias=False, sliding_window=cfg.get("sliding_window"))
    bias = bool(cfg.get("attention_bias", False))
    return dict(qkv_bias=bias, out_bias=bias, mlp_bias=bool(cfg.get("mlp_bias", False)), sliding_window=None)


def llama_config(cfg: HFConfig) -> TransformerConfig:
    d_model, n_heads = cfg.require("hidden_size"), cfg.require("num_attention_heads")
    n_layers = cfg.require("num_hidden_layers")
    head_dim = cfg.get("head_dim")
    return cfg.build(
        arch="decoder", vocab_size=cfg.require("vocab_size"), d_model=d_model, n_heads=n_heads,
        n_kv_heads=cfg.get("num_key_value_heads", n_heads), n_layers=n_layers,
        head_dim=None if head_dim == d_model // n_heads else head_dim, d_ff=cfg.require("intermediate_size"),
        max_len=cfg.require("max_position_embeddings"), norm_first=True, final_norm=True, norm="rmsnorm",
        layer_norm_eps=float(cfg.get("rms_norm_eps", 1e-6)), positional="rotary", **rope_settings(cfg),
        mlp="gated", activation=cfg.activation("hidden_act", "silu"), **type_options(cfg, n_layers),
        dropout=0.0, attention_dropout=float(cfg.get("attention_dropout", 0.0)),
        tie_embeddings=bool(cfg.get("tie_word_embeddings", False)), lm_head_bias=False, pad_id=cfg.pad_id())


def llama_plan(config: TransformerConfig, prefix: str, weights) -> list[Target]:
    p = prefix
    plan = [Target("tgt_embed.token.weight", (f"{p}embed_tokens.weight",))]
    for i in range(config.n_layers):
        h, o = f"{p}layers.{i}.", f"decoder.layers.{i}."
        attn = f"{h}self_attn."
        for leaf in ("weight", "bias") if config.qkv_bias else ("weight",):
            plan.append(Target(f"{o}self_attn.in_proj.{leaf}", tuple(f"{attn}{x}_proj.{leaf}" for x in "qkv"),
                               stack_rows))
        plan += [Target(f"{o}self_attn.out_proj.{leaf}", (f"{attn}o_proj.{leaf}",))
                 for leaf in (("weight", "bias") if config.out_bias else ("weight",))]
        plan += [Target(f"{o}self_sublayer.norm.weight", (f"{h}input_layernorm.weight",)),
                 Target(f"{o}ff_sublayer.norm.weight", (f"{h}post_attention_layernorm.weight",))]
        for ours, theirs in (("gate", "gate_proj"), ("linear1", "up_proj"), ("linear2", "down_proj")):
            plan += [Target(f"{o}feed_forward.{ours}.{leaf}", (f"{h}mlp.{theirs}.{leaf}",))
                     for leaf in (("weight", "bias") if config.mlp_bias else ("weight",))]
    plan.append(Target("decoder.norm.weight", (f"{p}norm.weight",)))
    if not config.tie_embeddings:
        plan.append(Target("generator.proj.weight", ("lm_head.weight",)))
    return plan


LLAMA = Family(name="Llama-family", model_types=("llama", "mistral", "qwen2"), make_config=llama_config, plan=llama_plan,
               prefix="model.", ignore=re.compile(r"^layers\.\d+\.self_attn\.rotary_emb\.inv_freq$|^lm_head\.weight$"))

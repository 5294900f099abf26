"""GPT-NeoX (EleutherAI's Pythia, GPT-NeoX-20B): a pre-norm decoder with rotary positions on the
first `rotary_pct` of each head (partial rotary, rotate_half layout), exact GELU, a final LayerNorm,
an untied output projection (`embed_out`) and, by default, the parallel residual
x + attn(ln1 x) + mlp(ln2 x).

Weights: `attention.query_key_value` is interleaved per head, rows [h0 q, h0 k, h0 v, h1 q, ...],
each Dh wide; our in_proj wants [all q; all k; all v], so the rows are regrouped
(H, 3, Dh, D) -> (3, H, Dh, D). `attention.bias` / `masked_bias` / `rotary_emb.inv_freq` in old
checkpoints are buffers, not weights.
"""

from __future__ import annotations

import re

from torch import Tensor

from ..model import TransformerConfig
from .weight_plan import Family, HFConfig, Target, rope_settings


def neox_config(cfg: HFConfig) -> TransformerConfig:
    bias = bool(cfg.get("attention_bias", True))
    return cfg.build(
        arch="decoder", vocab_size=cfg.require("vocab_size"), d_model=cfg.require("hidden_size"),
        n_heads=cfg.require("num_attention_heads"), n_layers=cfg.require("num_hidden_layers"),
        d_ff=cfg.require("intermediate_size"), max_len=cfg.require("max_position_embeddings"),
        norm_first=True, final_norm=True, positional="rotary", **rope_settings(cfg, default_fraction=0.25),
        activation=cfg.activation("hidden_act", "gelu"), layer_norm_eps=float(cfg.get("layer_norm_eps", 1e-5)),
        parallel_residual=bool(cfg.get("use_parallel_residual", True)), qkv_bias=bias, out_bias=bias,
        dropout=float(cfg.get("hidden_dropout", 0.0)), attention_dropout=float(cfg.get("attention_dropout", 0.0)),
        ffn_dropout=0.0, tie_embeddings=bool(cfg.get("tie_word_embeddings", False)), lm_head_bias=False,
        pad_id=cfg.pad_id())


def regroup_qkv(config: TransformerConfig):
    """Rows [h0 q,k,v][h1 q,k,v]... -> [q h0..h(H-1)][k ...][v ...] for a weight (3D, D) or a bias (3D,)."""
    H, Dh = config.n_heads, config.resolved_head_dim

    def regroup(t: Tensor) -> Tensor:
        grouped = t.reshape(H, 3, Dh, *t.shape[1:])  # (H, 3, Dh[, D])
        return grouped.transpose(0, 1).reshape(t.shape)  # (3, H, Dh[, D]) -> (3D[, D])
    return regroup


def neox_plan(config: TransformerConfig, prefix: str, weights) -> list[Target]:
    p, regroup = prefix, regroup_qkv(config)
    plan = [Target("tgt_embed.token.weight", (f"{p}embed_in.weight",))]
    leaves = ("weight", "bias") if config.qkv_bias else ("weight",)
    for i in range(config.n_layers):
        h, o = f"{p}layers.{i}.", f"decoder.layers.{i}."
        plan += [Target(f"{o}self_attn.in_proj.{leaf}", (f"{h}attention.query_key_value.{leaf}",), regroup)
                 for leaf in leaves]
        plan += [Target(f"{o}self_attn.out_proj.{leaf}", (f"{h}attention.dense.{leaf}",)) for leaf in leaves]
        for ours, theirs in (("self_sublayer.norm", "input_layernorm"), ("ff_sublayer.norm", "post_attention_layernorm"),
                             ("feed_forward.linear1", "mlp.dense_h_to_4h"), ("feed_forward.linear2", "mlp.dense_4h_to_h")):
            plan += [Target(f"{o}{ours}.{leaf}", (f"{h}{theirs}.{leaf}",)) for leaf in ("weight", "bias")]
    plan += [Target(f"decoder.norm.{leaf}", (f"{p}final_layer_norm.{leaf}",)) for leaf in ("weight", "bias")]
    if not config.tie_embeddings:
        plan.append(Target("generator.proj.weight", ("embed_out.weight",)))
    return plan


GPT_NEOX = Family(name="GPT-NeoX", model_types=("gpt_neox",), make_config=neox_config, plan=neox_plan,
                  prefix="gpt_neox.",
                  ignore=re.compile(r"^layers\.\d+\.attention\.(bias|masked_bias|rotary_emb\.inv_freq)$"
                                    r"|^embed_out\.weight$"))

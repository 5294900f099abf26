"""GPT-2 (gpt2, distilgpt2, ...): a pre-norm decoder with learned positions, tanh-GELU feed-forward,
a final LayerNorm and the output projection tied to the token embedding.

Weights: GPT-2's Conv1D layers store (in, out), so every projection is transposed into a torch
Linear (out, in). `attn.c_attn` already holds q, k and v side by side ([D -> 3D], q first), which is
our packed in_proj once transposed. `h.i.attn.bias` / `masked_bias` are the causal-mask buffers of
old checkpoints, not weights. Checkpoints come with or without the "transformer." prefix.

`scale_attn_by_inverse_layer_idx` (scores divided by layer index + 1) is refused;
`reorder_and_upcast_attn` only changes the float16 order of operations and computes the same
scores in float32, which is what the explorer runs, so it is accepted.
"""

from __future__ import annotations

import re

from ..model import TransformerConfig
from .weight_plan import Family, HFConfig, Target, as_is, transpose


def gpt2_config(cfg: HFConfig) -> TransformerConfig:
    if cfg.get("scale_attn_by_inverse_layer_idx", False):
        raise cfg.error("scale_attn_by_inverse_layer_idx=true (scores divided by the layer number) is not "
                        "supported")
    if cfg.get("add_cross_attention", False):
        raise cfg.error("a GPT-2 with cross-attention (add_cross_attention) is not supported")
    d_model = cfg.require("n_embd", "hidden_size")
    return cfg.build(
        arch="decoder", vocab_size=cfg.require("vocab_size"), d_model=d_model,
        n_heads=cfg.require("n_head", "num_attention_heads"), n_layers=cfg.require("n_layer", "num_hidden_layers"),
        d_ff=cfg.get("n_inner", 4 * d_model), max_len=cfg.require("n_positions", "max_position_embeddings"),
        norm_first=True, final_norm=True, positional="learned", activation=cfg.activation("activation_function", "gelu_new"),
        layer_norm_eps=float(cfg.get("layer_norm_epsilon", 1e-5)), dropout=float(cfg.get("resid_pdrop", 0.1)),
        embedding_dropout=float(cfg.get("embd_pdrop", 0.1)), attention_dropout=float(cfg.get("attn_pdrop", 0.1)),
        ffn_dropout=0.0, attn_scale=None if cfg.get("scale_attn_weights", True) else 1.0,
        tie_embeddings=bool(cfg.get("tie_word_embeddings", True)), lm_head_bias=False, pad_id=cfg.pad_id())


def gpt2_plan(config: TransformerConfig, prefix: str, weights) -> list[Target]:
    p = prefix
    plan = [Target("tgt_embed.token.weight", (f"{p}wte.weight",)),
            Target("tgt_embed.position.weight", (f"{p}wpe.weight",))]
    for i in range(config.n_layers):
        h, o = f"{p}h.{i}.", f"decoder.layers.{i}."
        for ours, theirs, conv in (("self_sublayer.norm", "ln_1", False), ("self_attn.in_proj", "attn.c_attn", True),
                                   ("self_attn.out_proj", "attn.c_proj", True), ("ff_sublayer.norm", "ln_2", False),
                                   ("feed_forward.linear1", "mlp.c_fc", True),
                                   ("feed_forward.linear2", "mlp.c_proj", True)):
            plan.append(Target(f"{o}{ours}.weight", (f"{h}{theirs}.weight",), transpose if conv else as_is))
            plan.append(Target(f"{o}{ours}.bias", (f"{h}{theirs}.bias",)))
    plan += [Target("decoder.norm.weight", (f"{p}ln_f.weight",)), Target("decoder.norm.bias", (f"{p}ln_f.bias",))]
    if not config.tie_embeddings:
        plan.append(Target("generator.proj.weight", ("lm_head.weight",)))
    return plan


GPT2 = Family(name="GPT-2", model_types=("gpt2",), make_config=gpt2_config, plan=gpt2_plan, prefix="transformer.",
              ignore=re.compile(r"^h\.\d+\.attn\.(bias|masked_bias)$|^lm_head\.weight$"))

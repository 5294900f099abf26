"""T5 (google-t5/t5-small, google/flan-t5-small, ...): a pre-norm encoder-decoder with T5's RMS norm
(no mean, no bias), no absolute positions but a learned relative position bias per stack
(positional="relative": buckets of signed distance, bidirectional in the encoder, causal in the
decoder, computed once and added in every layer), no 1/sqrt(d) scaling of the scores
(`attn_scale=1.0`), no biases anywhere, heads `d_kv` wide (flan-t5-small: 6 heads of 64 on d_model 512),
one token embedding shared by both stacks, and a final norm in each.

    feed_forward_proj "relu"        t5-small: wo(relu(wi x))
                      "gated-gelu"  flan-t5 / T5 v1.1: wo(gelu_tanh(wi_0 x) * wi_1 x) (transformers' gelu_new)
    LM head: tied to the embedding and scaled by d_model ** -0.5 (original T5), or its own `lm_head.weight`
             without scaling (T5 v1.1, flan-t5: `tie_word_embeddings: false`). transformers unties only when
             the checkpoint's lm_head differs from the embedding; so does this importer.

Weights: `{encoder,decoder}.block.i.layer.0.SelfAttention.{q,k,v,o}`, `layer.1.EncDecAttention` (decoder),
the feed-forward in the last `layer`, each sublayer's `layer_norm`; block 0's
`relative_attention_bias` is the stack's bias table. Tokens: tokenizer.json (SentencePiece Unigram, "▁",
"</s>" appended); the decoder starts from the padding id.
"""

from __future__ import annotations

import re

import torch

from ..model import TransformerConfig
from ..outputs.hub_tasks import seq2seq_task
from .weight_plan import HF_ACTIVATIONS, Family, HFConfig, Target, stack_rows
from .files import WeightFiles


def feed_forward(cfg: HFConfig) -> dict:
    kind = str(cfg.get("feed_forward_proj", "relu"))
    parts = kind.split("-")
    if len(parts) > 2 or (len(parts) == 2 and parts[0] != "gated"):
        raise cfg.error(f"feed_forward_proj={kind!r} is not T5's \"ACT\" or \"gated-ACT\"")
    act = "gelu_new" if kind == "gated-gelu" else parts[-1]  # transformers' backward-compatible reading
    if act not in HF_ACTIVATIONS:
        raise cfg.error(f"feed_forward_proj={kind!r}: activation {act!r} is not supported")
    return dict(mlp="gated" if len(parts) == 2 else "standard", activation=HF_ACTIVATIONS[act])


def lm_head_tied(cfg: HFConfig) -> bool:
    """Tied unless the checkpoint has an lm_head.weight that differs from the shared embedding."""
    if not cfg.has_tensors("lm_head.weight"):
        return True
    weights = cfg.weights()
    shared = next((n for n in ("shared.weight", "encoder.embed_tokens.weight") if n in weights), None)
    return shared is not None and torch.equal(weights.get("lm_head.weight"), weights.get(shared))


def t5_config(cfg: HFConfig) -> TransformerConfig:
    d_model, tied = cfg.require("d_model", "hidden_size"), lm_head_tied(cfg)
    scaled = cfg.get("scale_decoder_outputs", cfg.get("tie_word_embeddings", True) is not False)
    n_layers = cfg.require("num_layers", "num_hidden_layers")
    return cfg.build(
        arch="encoder-decoder", vocab_size=cfg.require("vocab_size"), d_model=d_model,
        n_heads=cfg.require("num_heads", "num_attention_heads"), head_dim=cfg.require("d_kv", "head_dim"),
        n_encoder_layers=n_layers, n_decoder_layers=cfg.get("num_decoder_layers", n_layers), d_ff=cfg.require("d_ff"),
        max_len=int(cfg.get("n_positions", 512)), norm_first=True, final_norm=True, norm="rmsnorm",
        layer_norm_eps=float(cfg.get("layer_norm_epsilon", 1e-6)), positional="relative",
        relative_buckets=cfg.int_field("relative_attention_num_buckets", 32),
        relative_max_distance=cfg.int_field("relative_attention_max_distance", 128), attn_scale=1.0,
        **feed_forward(cfg), qkv_bias=False, out_bias=False, mlp_bias=False, lm_head_bias=False,
        share_embeddings=True, tie_embeddings=tied, output_scale=d_model ** -0.5 if scaled else 1.0,
        pad_id=cfg.token_id("pad_token_id"), dropout=float(cfg.get("dropout_rate", 0.1)))


def attention_plan(ours: str, theirs: str) -> list[Target]:
    return [Target(f"{ours}.in_proj.weight", tuple(f"{theirs}.{x}.weight" for x in "qkv"), stack_rows),
            Target(f"{ours}.out_proj.weight", (f"{theirs}.o.weight",))]


def feed_forward_plan(config: TransformerConfig, ours: str, theirs: str) -> list[Target]:
    names = (("gate", "wi_0"), ("linear1", "wi_1")) if config.mlp == "gated" else (("linear1", "wi"),)
    return [Target(f"{ours}.{o}.weight", (f"{theirs}.{t}.weight",)) for o, t in (*names, ("linear2", "wo"))]


def t5_plan(config: TransformerConfig, prefix: str, weights: WeightFiles) -> list[Target]:
    shared = next((n for n in ("shared.weight", "encoder.embed_tokens.weight") if n in weights), "shared.weight")
    plan = [Target("src_embed.token.weight", (shared,))]
    if not config.tie_embeddings:
        plan.append(Target("generator.proj.weight", ("lm_head.weight",)))
    for stack, n in (("encoder", config.encoder_layers), ("decoder", config.decoder_layers)):
        plan += [Target(f"{stack}.relative_bias.table.weight",
                        (f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight",)),
                 Target(f"{stack}.norm.weight", (f"{stack}.final_layer_norm.weight",))]
        for i in range(n):
            h, o = f"{stack}.block.{i}.layer.", f"{stack}.layers.{i}."
            self_norm = "self_sublayer" if stack == "decoder" else "attn_sublayer"
            plan += attention_plan(f"{o}self_attn", f"{h}0.SelfAttention")
            plan.append(Target(f"{o}{self_norm}.norm.weight", (f"{h}0.layer_norm.weight",)))
            ff = 1
            if stack == "decoder":
                plan += attention_plan(f"{o}cross_attn", f"{h}1.EncDecAttention")
                plan.append(Target(f"{o}cross_sublayer.norm.weight", (f"{h}1.layer_norm.weight",)))
                ff = 2
            plan += feed_forward_plan(config, f"{o}feed_forward", f"{h}{ff}.DenseReluDense")
            plan.append(Target(f"{o}ff_sublayer.norm.weight", (f"{h}{ff}.layer_norm.weight",)))
    return plan


T5 = Family(name="T5", model_types=("t5",), make_config=t5_config, plan=t5_plan, prefix="",
            ignore=re.compile(r"^(shared|(encoder|decoder)\.embed_tokens|lm_head)\.weight$"
                              r"|^decoder\.block\.0\.layer\.1\.EncDecAttention\.relative_attention_bias\.weight$"),
            task=seq2seq_task)

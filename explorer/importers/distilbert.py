"""DistilBERT (distilbert-base-uncased, ...): a post-norm encoder with learned positions (or a fixed
sinusoidal table stored as the same weight when `sinusoidal_pos_embds`), a LayerNorm on the summed
embeddings, no token types, every LayerNorm with eps 1e-12, and BERT's WordPiece tokenizer.

Weights (under "distilbert."): `transformer.layer.i.attention.{q,k,v}_lin` stack into our in_proj,
`out_lin` is W_o, `ffn.lin1` / `ffn.lin2` the feed-forward, `sa_layer_norm` / `output_layer_norm` the
two post-norms. `DistilBertForMaskedLM`'s head (vocab_transform -> activation -> vocab_layer_norm ->
vocab_projector tied to the word embeddings + bias) loads as our `mlm` head, task "masked-lm".
"""

from __future__ import annotations

import re

from ..model import TransformerConfig
from .bert import encoder_task, load_bert_tokenizer
from .weight_plan import Family, HFConfig, Target, stack_rows
from .files import WeightFiles

EPS = 1e-12  # hard-coded in transformers' DistilBERT


def distilbert_config(cfg: HFConfig) -> TransformerConfig:
    mlm = cfg.has_tensors("vocab_projector.bias")
    return cfg.build(
        arch="encoder", vocab_size=cfg.require("vocab_size"), d_model=cfg.require("dim", "hidden_size"),
        n_heads=cfg.require("n_heads", "num_attention_heads"), n_layers=cfg.require("n_layers", "num_hidden_layers"),
        d_ff=cfg.require("hidden_dim"), max_len=cfg.require("max_position_embeddings"), norm_first=False,
        final_norm=False, positional="learned", activation=cfg.activation("activation", "gelu"), layer_norm_eps=EPS,
        type_vocab_size=0, embedding_norm=True, pad_id=cfg.token_id("pad_token_id") or 0,
        dropout=float(cfg.get("dropout", 0.1)), attention_dropout=float(cfg.get("attention_dropout", 0.1)),
        ffn_dropout=0.0, mlm_head=mlm, tie_embeddings=mlm and bool(cfg.get("tie_word_embeddings", True)))


def distilbert_plan(config: TransformerConfig, prefix: str, weights: WeightFiles) -> list[Target]:
    p = prefix
    plan = [Target("src_embed.token.weight", (f"{p}embeddings.word_embeddings.weight",)),
            Target("src_embed.position.weight", (f"{p}embeddings.position_embeddings.weight",))]
    plan += [Target(f"src_embed.norm.{leaf}", (f"{p}embeddings.LayerNorm.{leaf}",)) for leaf in ("weight", "bias")]
    for i in range(config.n_layers):
        h, o = f"{p}transformer.layer.{i}.", f"encoder.layers.{i}."
        for leaf in ("weight", "bias"):
            plan.append(Target(f"{o}self_attn.in_proj.{leaf}",
                               tuple(f"{h}attention.{x}_lin.{leaf}" for x in "qkv"), stack_rows))
            for ours, theirs in (("self_attn.out_proj", "attention.out_lin"), ("feed_forward.linear1", "ffn.lin1"),
                                 ("feed_forward.linear2", "ffn.lin2"), ("attn_sublayer.norm", "sa_layer_norm"),
                                 ("ff_sublayer.norm", "output_layer_norm")):
                plan.append(Target(f"{o}{ours}.{leaf}", (f"{h}{theirs}.{leaf}",)))
    if config.mlm_head:
        for ours, theirs in (("dense", "vocab_transform"), ("norm", "vocab_layer_norm")):
            plan += [Target(f"mlm.{ours}.{leaf}", (f"{theirs}.{leaf}",)) for leaf in ("weight", "bias")]
        plan.append(Target("mlm.proj.bias", ("vocab_projector.bias",)))
        if not config.tie_embeddings:
            plan.append(Target("mlm.proj.weight", ("vocab_projector.weight",)))
    return plan


DISTILBERT = Family(name="DistilBERT", model_types=("distilbert",), make_config=distilbert_config,
                    plan=distilbert_plan, prefix="distilbert.", ignore=re.compile(r"^embeddings\.position_ids$"),
                    load_tokenizer=load_bert_tokenizer, task=encoder_task)

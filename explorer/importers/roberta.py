"""RoBERTa (FacebookAI/roberta-base, ...): BERT's post-norm encoder and BERT's tensor names under
"roberta.", with two differences the config carries:

- positions start after the padding id: transformers computes position ids from the input ids as
  padding_idx + 1 + (count of real tokens so far), so our learned table has `position_offset =
  pad_token_id + 1` unused rows and the model's usable length is max_position_embeddings - offset
  (514 - 2 = 512). Real tokens get the same rows with right or left padding; a padding token's own
  row (transformers gives it row padding_idx) is never read by a real token, since it is masked as a key;
- one token type (type_vocab_size 1), byte-level BPE tokens (`Ġ`) with <s> ... </s>.

`RobertaForMaskedLM` keeps its head under "lm_head." (dense -> exact GELU -> LayerNorm -> decoder tied
to the word embeddings + bias); with it the task is "masked-lm", without it "sentence-embedding".
"""

from __future__ import annotations

import re

from ..model import TransformerConfig
from .bert import bert_body_plan, encoder_task, mlm_plan
from .weight_plan import Family, HFConfig, Target
from .files import WeightFiles

ROBERTA_MLM = "lm_head."


def roberta_config(cfg: HFConfig) -> TransformerConfig:
    if cfg.get("position_embedding_type", "absolute") != "absolute":
        raise cfg.error(f"position_embedding_type={cfg.get('position_embedding_type')!r} is not supported")
    if cfg.get("is_decoder", False) or cfg.get("add_cross_attention", False):
        raise cfg.error("a RoBERTa used as a decoder (is_decoder / add_cross_attention) is not supported")
    pad = cfg.token_id("pad_token_id")
    pad = 1 if pad is None else pad
    offset = pad + 1
    positions = cfg.require("max_position_embeddings")
    if positions <= offset:
        raise cfg.error(f"max_position_embeddings={positions} leaves no positions after padding_idx {pad}")
    mlm = cfg.has_tensors(f"{ROBERTA_MLM}bias")
    return cfg.build(
        arch="encoder", vocab_size=cfg.require("vocab_size"), d_model=cfg.require("hidden_size"),
        n_heads=cfg.require("num_attention_heads"), n_layers=cfg.require("num_hidden_layers"),
        d_ff=cfg.require("intermediate_size"), max_len=positions - offset, position_offset=offset,
        norm_first=False, final_norm=False, positional="learned", activation=cfg.activation("hidden_act", "gelu"),
        layer_norm_eps=float(cfg.get("layer_norm_eps", 1e-5)), type_vocab_size=cfg.get("type_vocab_size", 1),
        embedding_norm=True, pad_id=pad, dropout=float(cfg.get("hidden_dropout_prob", 0.1)),
        attention_dropout=float(cfg.get("attention_probs_dropout_prob", 0.1)), ffn_dropout=0.0,
        mlm_head=mlm, mlm_activation="gelu", tie_embeddings=mlm and bool(cfg.get("tie_word_embeddings", True)))


def roberta_plan(config: TransformerConfig, prefix: str, weights: WeightFiles) -> list[Target]:
    return bert_body_plan(config, prefix, weights) + mlm_plan(config, weights, ROBERTA_MLM, "dense", "layer_norm",
                                                              "bias", "decoder")


ROBERTA = Family(name="RoBERTa", model_types=("roberta",), make_config=roberta_config, plan=roberta_plan,
                 prefix="roberta.", ignore=re.compile(r"^(pooler\.|embeddings\.(position_ids|token_type_ids)$)"),
                 task=encoder_task)

"""BERT-family encoders (bert-base, all-MiniLM-L6-v2, ...): a post-norm encoder with learned positions,
token-type embeddings and a LayerNorm on the summed embeddings, so it maps one to one onto
`TransformerConfig(arch="encoder", norm_first=False, positional="learned", embedding_norm=True)`.

Weights: separate query/key/value projections stack into our in_proj [W_q; W_k; W_v]; TF-era
LayerNorm names (gamma/beta) are read as weight/bias. Checkpoints of task models carry the body
under "bert.". A masked-LM head (`cls.predictions.*`: BertForMaskedLM, BertForPreTraining) is loaded
as our `mlm` head (dense -> activation -> LayerNorm -> decoder tied to the word embeddings + bias) and
the task is "masked-lm" (explorer.outputs.masked_lm); other heads (NSP, classifiers) and the pooler are ignored
(listed in `LoadedModel.notes` and `task["ignored_tensors"]`). Without a head the task is
"sentence-embedding" (pooling and similarity in explorer.outputs.embeddings). RoBERTa (roberta.py) reuses
the body plan.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..checkpoints import CheckpointError, describe
from ..file_reads import check_size
from ..outputs.hub_tasks import mask_token, masked_lm_task
from ..model import TransformerConfig
from ..tokenizer import Tokenizer
from .weight_plan import Family, HFConfig, Target, stack_rows
from .files import WeightFiles
from .model_files import FolderFiles, ModelFiles
from .tokenizer_files import TOKENIZER_FILE, read_backend, tokenizer_config

BERT_MLM = "cls.predictions."  # BertForMaskedLM / BertForPreTraining head prefix


def bert_config(cfg: HFConfig) -> TransformerConfig:
    """Hugging Face BertConfig dict -> TransformerConfig (CheckpointError names config.json on a problem)."""
    pos_type = cfg.get("position_embedding_type", "absolute")
    if pos_type != "absolute":
        raise cfg.error(f"position_embedding_type={pos_type!r} is not supported (only absolute learned positions)")
    if cfg.get("is_decoder", False) or cfg.get("add_cross_attention", False):
        raise cfg.error("a BERT used as a decoder (is_decoder / add_cross_attention) is not supported")
    pad = cfg.token_id("pad_token_id")
    mlm = cfg.has_tensors(f"{BERT_MLM}bias")
    return cfg.build(
        mlm_head=mlm, tie_embeddings=mlm and bool(cfg.get("tie_word_embeddings", True)),
        arch="encoder", vocab_size=cfg.require("vocab_size"), d_model=cfg.require("hidden_size"),
        n_heads=cfg.require("num_attention_heads"), n_layers=cfg.require("num_hidden_layers"),
        d_ff=cfg.require("intermediate_size"), max_len=cfg.require("max_position_embeddings"), norm_first=False,
        final_norm=False, positional="learned", activation=cfg.activation("hidden_act", "gelu"),
        layer_norm_eps=float(cfg.get("layer_norm_eps", 1e-12)), type_vocab_size=cfg.get("type_vocab_size", 2),
        embedding_norm=True, pad_id=0 if pad is None else pad, dropout=float(cfg.get("hidden_dropout_prob", 0.1)),
        attention_dropout=float(cfg.get("attention_probs_dropout_prob", 0.1)),
        ffn_dropout=0.0)  # BERT's intermediate (feed-forward) block has no dropout inside


def norm_leaves(weights: WeightFiles, base: str) -> dict[str, str]:
    """Our weight/bias -> the checkpoint's name: weight/bias, or gamma/beta in TF-era checkpoints."""
    if f"{base}.gamma" in weights and f"{base}.weight" not in weights:
        return {"weight": f"{base}.gamma", "bias": f"{base}.beta"}
    return {"weight": f"{base}.weight", "bias": f"{base}.bias"}


def bert_body_plan(config: TransformerConfig, prefix: str, weights: WeightFiles) -> list[Target]:
    """Embeddings and encoder layers in BERT's names (also RoBERTa's)."""
    p = prefix
    plan = [Target(f"src_embed.{ours}.weight", (f"{p}embeddings.{theirs}.weight",)) for ours, theirs in
            (("token", "word_embeddings"), ("position", "position_embeddings"), ("token_type", "token_type_embeddings"))]
    plan += [Target(f"src_embed.norm.{leaf}", (name,))
             for leaf, name in norm_leaves(weights, f"{p}embeddings.LayerNorm").items()]
    for i in range(config.n_layers):
        h, o = f"{p}encoder.layer.{i}.", f"encoder.layers.{i}."
        for leaf in ("weight", "bias"):
            plan.append(Target(f"{o}self_attn.in_proj.{leaf}",
                               tuple(f"{h}attention.self.{x}.{leaf}" for x in ("query", "key", "value")), stack_rows))
            for ours, theirs in (("self_attn.out_proj", "attention.output.dense"),
                                 ("feed_forward.linear1", "intermediate.dense"), ("feed_forward.linear2", "output.dense")):
                plan.append(Target(f"{o}{ours}.{leaf}", (f"{h}{theirs}.{leaf}",)))
        for ours, theirs in (("attn_sublayer.norm", "attention.output.LayerNorm"), ("ff_sublayer.norm", "output.LayerNorm")):
            plan += [Target(f"{o}{ours}.{leaf}", (name,)) for leaf, name in norm_leaves(weights, h + theirs).items()]
    return plan


def mlm_plan(config: TransformerConfig, weights: WeightFiles, head: str, dense: str, norm: str, bias: str,
             decoder: str) -> list[Target]:
    """The masked-LM head: dense, norm, the vocabulary bias, and the decoder weight unless it is tied."""
    if not config.mlm_head:
        return []
    plan = [Target(f"mlm.dense.{leaf}", (f"{head}{dense}.{leaf}",)) for leaf in ("weight", "bias")]
    plan += [Target(f"mlm.norm.{leaf}", (name,)) for leaf, name in norm_leaves(weights, head + norm).items()]
    plan.append(Target("mlm.proj.bias", (f"{head}{bias}",)))
    if not config.tie_embeddings:
        plan.append(Target("mlm.proj.weight", (f"{head}{decoder}.weight",)))
    return plan


def bert_plan(config: TransformerConfig, prefix: str, weights: WeightFiles) -> list[Target]:
    return bert_body_plan(config, prefix, weights) + mlm_plan(config, weights, BERT_MLM, "transform.dense",
                                                              "transform.LayerNorm", "bias", "decoder")


def load_bert_tokenizer(files: ModelFiles, cfg: HFConfig) -> tuple[Tokenizer, Path]:
    """tokenizer.json if present, else a folder's vocab.txt (lowercasing from tokenizer_config.json, default on)."""
    if files.has(TOKENIZER_FILE):
        return Tokenizer(read_backend(files)), files.path(TOKENIZER_FILE)
    vocab = files.path("vocab.txt")
    if isinstance(files, FolderFiles) and files.has("vocab.txt"):
        lowercase = bool(tokenizer_config(files).get("do_lower_case", True))
        check_size(vocab, "tokenizer")  # the tokenizers library reads it whole
        try:
            return Tokenizer.from_vocab_txt(vocab, lowercase=lowercase), vocab
        except Exception as err:  # tokenizers raises plain Exception subclasses
            raise CheckpointError(f"{describe(vocab)} is not a valid WordPiece vocabulary: {err}") from err
    raise CheckpointError(f"missing file tokenizer.json (or vocab.txt) in {files.name}")


def pooling_mode(files: ModelFiles) -> str:
    """sentence-transformers' 1_Pooling/config.json says mean or CLS pooling; mean by default."""
    name = "1_Pooling/config.json"
    if files.has(name):
        try:
            cfg = files.json(name)
        except CheckpointError:  # an unreadable pooling config: BERT's default, as before
            return "mean"
        if isinstance(cfg, dict) and cfg.get("pooling_mode_cls_token") and not cfg.get("pooling_mode_mean_tokens"):
            return "cls"
    return "mean"


EXAMPLE_PAIRS = [
    ("A man is playing a guitar.", "Someone plays an instrument."),
    ("The cat sits on the mat.", "A dog runs in the park."),
    ("How do I reset my password?", "I forgot my login password."),
    ("The weather is lovely today.", "Stock prices fell sharply this morning."),
]


def encoder_task(name: str, files: ModelFiles, tokenizer: Tokenizer, config: TransformerConfig, family: str) -> dict:
    """"masked-lm" for an encoder with its MLM head, else "sentence-embedding"."""
    if config.mlm_head:
        configured = tokenizer_config(files).get("mask_token")
        mask = mask_token(tokenizer, configured if isinstance(configured, str) else None)
        if mask is None:
            raise CheckpointError(f"the tokenizer of {files.name} has no mask token ([MASK] or <mask>) for the "
                                  "masked-LM head")
        return masked_lm_task(name, tokenizer, config, family, mask)
    return embedding_task(name, files, tokenizer, config, family)


def embedding_task(name: str, files: ModelFiles, tokenizer: Tokenizer, config: TransformerConfig, family: str) -> dict:
    pooling = pooling_mode(files)
    return {
        "name": "sentence-embedding",
        "pooling": pooling,
        "description": f"{family} encoder ({name}): type sentences to see each layer's and head's attention; "
                       f"sentence embeddings are the {pooling} of the last layer's token vectors, compared by "
                       f"cosine similarity.",
        "examples": [s for pair in EXAMPLE_PAIRS for s in pair],
        "pairs": [list(pair) for pair in EXAMPLE_PAIRS],
        "pad_id": config.pad_id,
        "cls_id": tokenizer.cls_id if tokenizer.cls_id is not None else tokenizer.bos_id,
        "sep_id": tokenizer.sep_id if tokenizer.sep_id is not None else tokenizer.eos_id,
    }


BERT = Family(name="BERT", model_types=("bert",), make_config=bert_config, plan=bert_plan, prefix="bert.",
              ignore=re.compile(r"^(pooler\.|embeddings\.position_ids$)"), load_tokenizer=load_bert_tokenizer,
              task=encoder_task)

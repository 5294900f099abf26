"""BART (facebook/bart-base, ...) and Marian (Helsinki-NLP/opus-mt-*): post-norm encoder-decoders with
one layout of tensors; what differs is data.

    bart     learned positions with 2 unused rows (`position_offset=2`), a LayerNorm on the summed
             embeddings of each stack (`layernorm_embedding`), GELU, byte-level BPE (tokenizer.json)
    marian   sinusoidal positions in Marian's layout (all sines, then all cosines; no weights: old
             checkpoints store the table, which is ignored), no embedding norm, SiLU ("swish"), its own
             SentencePiece tokenizers (marian_tokens.py)

Both: `scale_embedding` (x sqrt(d_model)), one token embedding shared by encoder and decoder when the
config says so (BART `tie_word_embeddings`, Marian `share_encoder_decoder_embeddings`: one Parameter),
the LM head tied to the decoder's token embedding, and `final_logits_bias` (1, V) as the LM head's
bias. Encoder and decoder must have the same head count and feed-forward width.

Weights (under "model."): q_proj, k_proj, v_proj stack into our in_proj; out_proj is W_o;
self_attn_layer_norm / encoder_attn_layer_norm / final_layer_norm are the post-norms of the
self-attention, cross-attention and feed-forward sublayers; fc1 / fc2 the feed-forward.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..model import TransformerConfig
from ..outputs.hub_tasks import seq2seq_task
from ..tokenizer import Tokenizer
from .weight_plan import Family, HFConfig, Target, stack_rows
from .files import WeightFiles
from .marian_tokens import load_marian_tokenizer
from .model_files import ModelFiles


def same_in_both_stacks(cfg: HFConfig, encoder: str, decoder: str) -> int:
    value = cfg.require(encoder, decoder)
    if cfg.get(decoder, value) != value:
        raise cfg.error(f"{encoder}={value} and {decoder}={cfg.get(decoder)} differ; the explorer builds both stacks "
                        f"with one width")
    return value


def bart_config(cfg: HFConfig) -> TransformerConfig:
    marian = cfg.get("model_type") == "marian"
    vocab = cfg.require("vocab_size")
    share = bool(cfg.get("share_encoder_decoder_embeddings", True) if marian else cfg.get("tie_word_embeddings", True))
    tgt_vocab = vocab if share else cfg.get("decoder_vocab_size", vocab)
    if cfg.get("normalize_before", False) or cfg.get("add_final_layer_norm", False):
        raise cfg.error("pre-norm BART variants (normalize_before / add_final_layer_norm, mBART) are not supported")
    positions = dict(positional="sinusoidal", sinusoid_layout="split") if marian else \
        dict(positional="learned", position_offset=2, embedding_norm=True)
    return cfg.build(
        arch="encoder-decoder", vocab_size=vocab, tgt_vocab_size=None if tgt_vocab == vocab else tgt_vocab,
        d_model=cfg.require("d_model"), n_heads=same_in_both_stacks(cfg, "encoder_attention_heads",
                                                                    "decoder_attention_heads"),
        n_encoder_layers=cfg.require("encoder_layers"), n_decoder_layers=cfg.require("decoder_layers"),
        d_ff=same_in_both_stacks(cfg, "encoder_ffn_dim", "decoder_ffn_dim"), max_len=cfg.require("max_position_embeddings"),
        norm_first=False, final_norm=False, **positions, scale_embeddings=bool(cfg.get("scale_embedding", False)),
        activation=cfg.activation("activation_function", "gelu"), layer_norm_eps=1e-5,
        share_embeddings=share, tie_embeddings=bool(cfg.get("tie_word_embeddings", True)),
        lm_head_bias=cfg.has_tensors("final_logits_bias"), pad_id=cfg.token_id("pad_token_id"),
        dropout=float(cfg.get("dropout", 0.1)), attention_dropout=float(cfg.get("attention_dropout", 0.0)),
        ffn_dropout=float(cfg.get("activation_dropout", 0.0)))


def attention_plan(ours: str, theirs: str) -> list[Target]:
    plan = [Target(f"{ours}.in_proj.{leaf}", tuple(f"{theirs}.{x}_proj.{leaf}" for x in "qkv"), stack_rows)
            for leaf in ("weight", "bias")]
    return plan + [Target(f"{ours}.out_proj.{leaf}", (f"{theirs}.out_proj.{leaf}",)) for leaf in ("weight", "bias")]


def layer_plan(o: str, h: str, decoder: bool) -> list[Target]:
    plan = attention_plan(f"{o}self_attn", f"{h}self_attn")
    norms = [("self_sublayer" if decoder else "attn_sublayer", "self_attn_layer_norm"),
             ("ff_sublayer", "final_layer_norm")]
    if decoder:
        plan += attention_plan(f"{o}cross_attn", f"{h}encoder_attn")
        norms.append(("cross_sublayer", "encoder_attn_layer_norm"))
    for ours, theirs in norms + [("feed_forward.linear1", "fc1"), ("feed_forward.linear2", "fc2")]:
        name = ours if ours.startswith("feed_forward") else f"{ours}.norm"
        plan += [Target(f"{o}{name}.{leaf}", (f"{h}{theirs}.{leaf}",)) for leaf in ("weight", "bias")]
    return plan


def first_present(weights: WeightFiles, *names: str) -> str:
    """The first of `names` the checkpoint holds (tied copies are saved under any of them), else the first."""
    return next((n for n in names if n in weights), names[0])


def bart_plan(config: TransformerConfig, prefix: str, weights: WeightFiles) -> list[Target]:
    p = prefix
    shared, own = f"{p}shared.weight", f"{p}encoder.embed_tokens.weight"
    src = first_present(weights, shared, own) if config.share_embeddings else first_present(weights, own, shared)
    plan = [Target("src_embed.token.weight", (src,))]
    if not config.share_embeddings:
        plan.append(Target("tgt_embed.token.weight", (f"{p}decoder.embed_tokens.weight",)))
    for stack, embed, n, decoder in (("encoder", "src_embed", config.encoder_layers, False),
                                     ("decoder", "tgt_embed", config.decoder_layers, True)):
        if config.positional == "learned":
            plan.append(Target(f"{embed}.position.weight", (f"{p}{stack}.embed_positions.weight",)))
        if config.embedding_norm:
            plan += [Target(f"{embed}.norm.{leaf}", (f"{p}{stack}.layernorm_embedding.{leaf}",))
                     for leaf in ("weight", "bias")]
        for i in range(n):
            plan += layer_plan(f"{stack}.layers.{i}.", f"{p}{stack}.layers.{i}.", decoder)
    if config.lm_head_bias:
        plan.append(Target("generator.proj.bias", ("final_logits_bias",), lambda t: t.reshape(-1)))  # (1, V) -> (V,)
    if not config.tie_embeddings:
        plan.append(Target("generator.proj.weight", ("lm_head.weight",)))
    return plan


def load_marian(files: ModelFiles, cfg: HFConfig) -> tuple[Tokenizer, Path]:
    return load_marian_tokenizer(files, cfg, "source")


def marian_target(files: ModelFiles, cfg: HFConfig) -> tuple[Tokenizer, Path]:
    return load_marian_tokenizer(files, cfg, "target")


# copies of the shared embedding under other names, and the LM head when it is tied
IGNORE = re.compile(r"^(shared|(encoder|decoder)\.embed_tokens)\.weight$|^lm_head\.weight$|^final_logits_bias$")
BART = Family(name="BART", model_types=("bart",), make_config=bart_config, plan=bart_plan, prefix="model.",
              ignore=IGNORE, task=seq2seq_task)
MARIAN = Family(name="Marian", model_types=("marian",), make_config=bart_config, plan=bart_plan, prefix="model.",
                ignore=re.compile(IGNORE.pattern + r"|^(encoder|decoder)\.embed_positions\.weight$"),
                load_tokenizer=load_marian, load_target_tokenizer=marian_target, task=seq2seq_task)

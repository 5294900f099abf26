"""Tiny random-weight Hub-layout models saved into a folder the app may load, for the app tests, the browser test
and the screenshots: a Marian translation model (MarianMTModel with its source.spm / target.spm / vocab.json), a
T5 (relative position bias), a Llama (rotary positions) and masked LMs (BERT, RoBERTa). Built with transformers
and the importer tests' tokenizers (tests/importers), perturbed off their default init, seeded: the same weights
every time."""

from __future__ import annotations

from pathlib import Path

import torch
import transformers

from tests.importers.harness import VOCAB, perturb, save_folder, sentencepiece_tokenizer
from tests.importers.seq2seq_harness import (roberta_tokenizer, save_marian_tokenizer, unigram_metaspace_tokenizer,
                                             wordpiece_tokenizer)

MARIAN_TEXT = "The cat sat on the mat."  # a source whose output a cross-attention head changes (MARIAN_HEAD)
MARIAN_HEAD = "L1 H0"  # switched off alone, it changes the tiny Marian's output for MARIAN_TEXT (tested)


def saved(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return perturb(model, seed=seed).eval()


def tiny_marian(folder: Path) -> torch.nn.Module:
    """A 2+2-layer, 4-head MarianMTModel (English -> German spm tokenizers trained here); returns transformers'
    model with eager attention."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = save_marian_tokenizer(folder)
    pad = vocab["<pad>"]
    config = transformers.MarianConfig(vocab_size=len(vocab), d_model=48, encoder_layers=2, decoder_layers=2,
                                       encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=96,
                                       decoder_ffn_dim=96, max_position_embeddings=64, pad_token_id=pad,
                                       eos_token_id=0, decoder_start_token_id=pad, scale_embedding=True,
                                       bad_words_ids=[[pad]])
    torch.manual_seed(0)
    hf = saved(transformers.MarianMTModel(config))
    hf.set_attn_implementation("eager")
    hf.save_pretrained(folder)
    return hf


def tiny_t5(folder: Path, **overrides) -> torch.nn.Module:
    """A 2+2-layer T5 with t5-small's relative bias settings (8 heads, 32 buckets, max distance 128)."""
    fields = dict(vocab_size=VOCAB, d_model=64, d_kv=8, d_ff=96, num_layers=2, num_decoder_layers=2, num_heads=8,
                  relative_attention_num_buckets=32, relative_attention_max_distance=128, pad_token_id=0,
                  eos_token_id=1, decoder_start_token_id=0)
    torch.manual_seed(0)
    hf = saved(transformers.T5ForConditionalGeneration(transformers.T5Config(**{**fields, **overrides})))
    hf.set_attn_implementation("eager")
    save_folder(hf, unigram_metaspace_tokenizer(), folder)
    return hf


def tiny_llama(folder: Path) -> torch.nn.Module:
    """A 2-layer Llama with SmolLM2's rotary settings (head width 64, rope_theta 100,000)."""
    config = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=128, num_attention_heads=2, num_key_value_heads=1,
                                      num_hidden_layers=2, intermediate_size=96, max_position_embeddings=256,
                                      rope_theta=100000.0, bos_token_id=1, eos_token_id=2)
    torch.manual_seed(0)
    hf = saved(transformers.LlamaForCausalLM(config))
    save_folder(hf, sentencepiece_tokenizer(), folder, {"add_bos_token": True, "add_eos_token": False,
                                                        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"})
    return hf


MLM_SHAPE = dict(vocab_size=VOCAB, hidden_size=48, num_attention_heads=6, num_hidden_layers=2, intermediate_size=96,
                 max_position_embeddings=40)


def tiny_bert_mlm(folder: Path) -> torch.nn.Module:
    hf = saved(transformers.BertForMaskedLM(transformers.BertConfig(**MLM_SHAPE)))
    hf.set_attn_implementation("eager")
    save_folder(hf, wordpiece_tokenizer(), folder)
    return hf


def tiny_roberta_mlm(folder: Path) -> torch.nn.Module:
    config = transformers.RobertaConfig(**MLM_SHAPE, pad_token_id=1, bos_token_id=0, eos_token_id=2)
    hf = saved(transformers.RobertaForMaskedLM(config))
    hf.set_attn_implementation("eager")
    save_folder(hf, roberta_tokenizer(), folder, {"mask_token": "<mask>"})
    return hf


def tiny_gpt2(folder: Path) -> torch.nn.Module:
    """A 2-layer, 6-head GPT-2 with a byte-level BPE tokenizer ("Ġthe"; tiny_llama's splits the same text otherwise)."""
    from tests.importers.harness import byte_level_tokenizer

    config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=48, n_head=6, n_layer=2, n_positions=64, bos_token_id=0,
                                     eos_token_id=0)
    torch.manual_seed(0)
    hf = saved(transformers.GPT2LMHeadModel(config))
    hf.set_attn_implementation("eager")
    save_folder(hf, byte_level_tokenizer(), folder, {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                                                     "add_bos_token": False})
    return hf

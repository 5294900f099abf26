"""A GPT-2-layout model with a 1,064-token context (1,024 input tokens + the 40 the app keeps for a continuation),
saved in the Hugging Face layout with a byte-level tokenizer without merges (one ASCII character = one token), for
the tests of 1,024-token inputs. Width does not change what the page is sent (that depends on heads and tokens)."""

from __future__ import annotations

from pathlib import Path

CONTEXT = 1024 + 40
TOKENIZER_CONFIG = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "add_bos_token": False}


def save_long_gpt2(folder: Path, n_layer: int, n_head: int, n_embd: int) -> Path:
    import torch
    import transformers

    from benchmarks.hub_lm import byte_tokenizer
    from tests.importers.harness import save_folder

    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=260, n_embd=n_embd, n_head=n_head, n_layer=n_layer,
                                     n_positions=CONTEXT, bos_token_id=256, eos_token_id=256)
    return save_folder(transformers.GPT2LMHeadModel(config).eval(), byte_tokenizer(), folder, TOKENIZER_CONFIG)


def long_text(tokens: int = 1500) -> str:
    """ASCII text of `tokens` characters (more than 1,024: the app cuts it, with a notice)."""
    words = "the cat sat on a mat and the dog ran to the park ".split()
    return " ".join(words[i % len(words)] for i in range(tokens))[:tokens]

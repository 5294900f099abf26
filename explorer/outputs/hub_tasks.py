"""What the app offers for a model loaded from the Hub, per kind of output head: the task dicts the importers attach
to a loaded model (its examples, special ids and limits), in one neutral home that loading (explorer.importers) and
the output modules (explorer.outputs.causal_lm, explorer.outputs.seq2seq, explorer.outputs.masked_lm) both read,
so neither reaches into the other.

    causal_lm_task(name, tokenizer, config, family)             -> {"name": "causal-lm", "examples", "bos_id", ...}
    seq2seq_task(name, files, tokenizer, config, family)        -> {"name": "seq2seq", "bos_id": the decoder start
                                                                    token, "eos_id", "suppress_ids", "examples", ...}
    masked_lm_task(name, tokenizer, config, family, mask)       -> {"name": "masked-lm", "mask_token", "mask_id", ...}
    mask_token(tokenizer, configured)                           -> the tokenizer's mask token, or None
"""

from __future__ import annotations

from typing import Any, Mapping

from ..model import TransformerConfig
from ..tokenizer import Tokenizer

LM_EXAMPLES = [
    "The capital of France is",
    "Once upon a time, there was a little",
    "The quick brown fox jumps over the lazy",
    "1, 2, 3, 4, 5,",
    "def fibonacci(n):",
]
MASK_TOKENS = ("[MASK]", "<mask>")
MLM_EXAMPLES = [
    "The capital of France is {mask}.",
    "I love to eat {mask} for breakfast.",
    "The {mask} barked at the mailman all morning.",
    "She put the milk back in the {mask} after breakfast.",
    "Paris is the {mask} of France, and Berlin is the {mask} of Germany.",
]
TRANSLATION_EXAMPLES = [
    "The weather is lovely today, so we are going for a walk in the park.",
    "I would like to book a table for two people at eight o'clock.",
    "The cat is sleeping on the sofa.",
    "Where is the nearest train station?",
    "Machine translation has improved a lot in recent years.",
]
T5_EXAMPLES = [
    "translate English to German: The house is wonderful.",
    "translate English to French: Where is the nearest train station?",
    "summarize: The quick brown fox jumped over the lazy dog in the garden, while the cat watched from the "
    "window and the birds sang in the old oak tree until the sun went down.",
    "cola sentence: The course is jumping well.",
    "question: What is the capital of France? context: Paris is the capital and largest city of France.",
]
BART_EXAMPLES = [
    "The cat sat on the <mask> and looked out of the window.",
    "UN Chief Says There Is No <mask> in Syria",
    "The weather is lovely today, so we are going for a walk in the park.",
    "My friends are <mask> but they eat too many carbs.",
]
DEFAULT_MAX_NEW_TOKENS = 40


def causal_lm_task(name: str, tokenizer: Tokenizer, config: TransformerConfig, family: str) -> dict[str, Any]:
    """The task dict of a loaded language model (what the app offers for it)."""
    return {
        "name": "causal-lm",
        "description": f"{family} language model ({name}): type a text to see each layer's and head's causal "
                       f"attention, the next token's top 10, the surprisal of every token, and a greedy "
                       f"continuation; switch heads off to see what changes.",
        "examples": list(LM_EXAMPLES),
        "bos_id": tokenizer.bos_id,
        "eos_id": tokenizer.eos_id,
        "pad_id": config.pad_id,
    }


def mask_token(tokenizer: Tokenizer, configured: str | None = None) -> str | None:
    """The tokenizer's mask token: `configured` (tokenizer_config.json's mask_token) or [MASK] / <mask>."""
    for token in (configured, *MASK_TOKENS):
        if token and tokenizer.token_to_id(token) is not None:
            return token
    return None


def masked_lm_task(name: str, tokenizer: Tokenizer, config: TransformerConfig, family: str,
                   mask: str) -> dict[str, Any]:
    """The task dict of an encoder with a masked-LM head (what the app offers for it)."""
    return {
        "name": "masked-lm",
        "description": f"{family} masked language model ({name}): write {mask} where a word is missing to see the "
                       f"model's 10 most probable fillers, and each layer's and head's attention; switch heads off "
                       f"to see how the fillers change.",
        "examples": [e.format(mask=mask) for e in MLM_EXAMPLES],
        "mask_token": mask,
        "mask_id": tokenizer.token_to_id(mask),
        "pad_id": config.pad_id,
        "cls_id": tokenizer.cls_id if tokenizer.cls_id is not None else tokenizer.bos_id,
        "sep_id": tokenizer.sep_id if tokenizer.sep_id is not None else tokenizer.eos_id,
    }


def start_token(hf: Mapping[str, Any], tokenizer: Tokenizer) -> int | None:
    """The decoder start token: decoder_start_token_id, else the padding id (T5's convention), else BOS."""
    for key in ("decoder_start_token_id", "pad_token_id", "bos_token_id"):
        value = hf.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return tokenizer.pad_id if tokenizer.pad_id is not None else tokenizer.bos_id


def suppressed_ids(hf: Mapping[str, Any]) -> list[int]:
    """Single-token `bad_words_ids` of config.json (Marian never generates its padding token)."""
    bad = hf.get("bad_words_ids") or []
    return sorted({int(w[0]) for w in bad if isinstance(w, list) and len(w) == 1 and isinstance(w[0], int)})


def examples_for(family: str, name: str) -> list[str]:
    if family == "T5":
        return list(T5_EXAMPLES)
    if family == "BART":
        return list(BART_EXAMPLES)
    return list(TRANSLATION_EXAMPLES)


def seq2seq_task(name: str, files: Any, tokenizer: Tokenizer, config: TransformerConfig, family: str) -> dict:
    """The task dict of a loaded encoder-decoder (`tokenizer` is its target side; `files` the model's small files,
    explorer.importers.model_files, whose config.json is read)."""
    hf = files.json("config.json")
    eos = hf.get("eos_token_id")
    eos = eos[0] if isinstance(eos, list) and eos else eos
    return {
        "name": "seq2seq",
        "description": f"{family} encoder-decoder ({name}): type a text to see the encoder's attention, and the "
                       f"decoder's self-attention and cross-attention for every token it generates (greedy); "
                       f"switch heads off, a cross-attention head say, to see the output change.",
        "examples": examples_for(family, name),
        "bos_id": start_token(hf, tokenizer),
        "eos_id": eos if isinstance(eos, int) and not isinstance(eos, bool) else tokenizer.eos_id,
        "pad_id": config.pad_id,
        "suppress_ids": suppressed_ids(hf),
        "max_new_tokens": DEFAULT_MAX_NEW_TOKENS,
    }

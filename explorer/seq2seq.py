"""What an encoder-decoder from the Hub says (T5, BART, Marian translation models), as plain functions
the app (or a notebook) shows: the greedy output of a source text with every generated token's decoder
self-attention and cross-attention, and the same with heads switched off, side by side.

Shapes: S source tokens, N generated tokens, H heads, L layers.

    seq2seq_task(name, folder, tokenizer, config, family) -> task dict {"name": "seq2seq", "bos_id": the
        decoder start token, "eos_id", "suppress_ids", "examples", ...}
    translate(loaded, text, max_new_tokens, head_mask)  -> Output (source ids, ids, labels, text, probs,
        generation: generation.steps[n].cross[l] (1, H, S), .decoder[l] (1, H, n + 1))
    compare_outputs(loaded, text, head_mask, ...)       -> OutputChange (baseline, toggled, first position
        where they differ or None)

Generation is greedy from the decoder start token (`decoder_start_token_id`: T5 and Marian start with
the padding id, BART with </s>) until EOS or `max_new_tokens`; it equals transformers' greedy
`generate` token for token (tests/importers/test_seq2seq_generation.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import torch

from .checkpoints import read_json
from .generate import Generation, generate
from .model import TransformerConfig
from .tokenizer import Tokenizer

if TYPE_CHECKING:
    from .checkpoints import LoadedModel

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


def seq2seq_task(name: str, folder: Path, tokenizer: Tokenizer, config: TransformerConfig, family: str) -> dict:
    """The task dict of a loaded encoder-decoder (`tokenizer` is its target side)."""
    hf = read_json(folder / "config.json")
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


@dataclass
class Output:
    source_ids: list[int]
    ids: list[int]  # generated tokens, up to and including EOS if it came (the start token excluded)
    labels: list[str]  # their labels (Tokenizer.labels of the target side)
    text: str  # the generated tokens decoded, special tokens skipped
    probs: list[float]  # the model's probability of each chosen token
    generation: Generation  # generation.steps[n].cross[layer] (1, H, S), .decoder[layer] (1, H, n + 1)


@dataclass
class OutputChange:
    baseline: Output  # every head on
    toggled: Output  # with the heads switched off
    first_difference: int | None  # first generated position where the two differ; None = same output


@torch.no_grad()
def translate(loaded: LoadedModel, text: str, max_new_tokens: int | None = None, *,
              head_mask: Mapping[str, Any] | None = None, max_length: int | None = None) -> Output:
    """Greedy output of an encoder-decoder for one source text (encoded with its special tokens)."""
    model, task = loaded.model, loaded.task
    if model.config.arch != "encoder-decoder":
        raise ValueError("translate needs an encoder-decoder model")
    source = loaded.tokenizer.encode(text, max_length=max_length or model.config.max_len).ids
    if not source:
        raise ValueError("the text gives no tokens")
    src = torch.tensor([source], device=model.device)
    eos = task.get("eos_id", loaded.target_tokenizer.eos_id)
    gen = generate(model, src, bos_id=task["bos_id"], eos_id=eos, head_mask=head_mask,
                   max_new_tokens=max_new_tokens or task.get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS),
                   key_mask=torch.ones_like(src, dtype=torch.bool), suppress_ids=task.get("suppress_ids", ()))
    ids = gen.tokens[0].tolist()
    if eos is not None and eos in ids:
        ids = ids[: ids.index(eos) + 1]
    tok = loaded.target_tokenizer
    return Output(source, ids, tok.labels(ids), tok.decode(ids), gen.log_probs[0, : len(ids)].exp().tolist(), gen)


def compare_outputs(loaded: LoadedModel, text: str, head_mask: Mapping[str, Any], max_new_tokens: int | None = None,
                    **kwargs: Any) -> OutputChange:
    """Baseline (every head on) and toggled outputs of one source text, and where they first differ."""
    base = translate(loaded, text, max_new_tokens, **kwargs)
    toggled = translate(loaded, text, max_new_tokens, head_mask=head_mask, **kwargs)
    pairs = list(zip(base.ids, toggled.ids))
    first = next((n for n, (a, b) in enumerate(pairs) if a != b), None)
    if first is None and len(base.ids) != len(toggled.ids):
        first = len(pairs)
    return OutputChange(base, toggled, first)

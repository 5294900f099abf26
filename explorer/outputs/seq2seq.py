"""What an encoder-decoder from the Hub says (T5, BART, Marian translation models), as plain functions
the app (or a notebook) shows: the greedy output of a source text with every generated token's decoder
self-attention and cross-attention, and the same with heads switched off, side by side.

Shapes: S source tokens, N generated tokens, H heads, L layers.

    translate(loaded, text, max_new_tokens, head_mask, sampling) -> Output (source ids, ids, labels, text, probs,
        generation: generation.steps[n].cross[l] (1, H, S), .decoder[l] (1, H, n + 1))
    compare_outputs(loaded, text, head_mask, ...)       -> OutputChange (baseline, toggled, first position
        where they differ or None)

Generation is greedy from the decoder start token (`decoder_start_token_id`: T5 and Marian start with
the padding id, BART with </s>) until EOS or `max_new_tokens`; it equals transformers' greedy
`generate` token for token (tests/importers/test_seq2seq_generation.py). With `sampling` (explorer.outputs.sampling) each
token is drawn instead; compare_outputs gives both runs the same seed, so they differ only where the heads do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

import torch

from .generate import Generation, generate
from .hub_tasks import DEFAULT_MAX_NEW_TOKENS
from .sampling import Sampling

if TYPE_CHECKING:
    from ..checkpoints import LoadedModel




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
              head_mask: Mapping[str, Any] | None = None, max_length: int | None = None,
              sampling: Sampling | None = None) -> Output:
    """Greedy (or, with `sampling`, sampled) output of an encoder-decoder for one source text (encoded with its
    special tokens)."""
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
                   key_mask=torch.ones_like(src, dtype=torch.bool), suppress_ids=task.get("suppress_ids", ()),
                   sampling=sampling)
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

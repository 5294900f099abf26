"""What kind of head each one is (explorer.interpret.roles), as the Roles tab scores it: on the typed text and on the
probe the app generates (random tokens of the model's own vocabulary, repeated; seeded); and the heads "switch off the
top heads of this role" picks. The roles a stack scores and the All heads tiles' labels are run.role_labels'.

Shapes: L layers, H heads, T tokens. Scores are {role: (L, H)} in [0, 1], NaN where the text defines the role
on no query (induction and duplicate need a repeated token; induction only on a causal stack). For a decoder-only
model the tab also shows the next-token loss on the probe's first and repeated copies, with every head on and with the
page's head toggles: switching an induction head off raises the repeated-copy loss.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from ....checkpoints import LoadedModel
from ....interpret import ROLES, CopyLosses, RepeatedTokens, copy_losses, head_roles, repeated_tokens, top_heads
from ...run.readings import Reading, read_texts
from ...run.role_labels import stack_roles
from ...run.view import KIND_TITLES
from ...serving.errors import AppError

PROBE_SPAN, PROBE_REPEATS, PROBE_BATCH, PROBE_SEED = 20, 2, 4, 0
RANK_BY = ("probe", "typed text", "effect on the output")  # "switch these heads off": ranked on
NOT_CAUSAL = ("Induction is not scored on {stack}: it is a left-to-right mechanism (predict the next token from "
              "what followed its earlier copy) and this stack sees both directions.")


def stack_of(loaded: LoadedModel, kind: str) -> str:
    """The self-attention stack a page's attention kind names ("cross" has no roles: the decoder's instead)."""
    kinds = [k for k in loaded.config.attention_kinds() if k != "cross"]
    return kind if kind in kinds else ("decoder" if "decoder" in kinds else kinds[0])


@dataclass
class RoleResult:
    stack: str  # "encoder" or "decoder"
    text: dict[str, Tensor]  # {role: (L, H)} on the typed sentence (sentence 1)
    probe: dict[str, Tensor]  # {role: (L, H)} on the probe, mean over its rows
    probe_text: str  # what the probe is
    losses: tuple[CopyLosses, CopyLosses | None] | None  # decoder-only: (every head on, with the toggles)


def probe_ids(loaded: LoadedModel, tokenizer_of: str, prefix: list[int] | None = None
              ) -> tuple[RepeatedTokens, str]:
    """Probe rows (B, T) from the tokenizer of one stack, fitted into the model's context, and their description."""
    tok = loaded.tokenizer if tokenizer_of == "source" else loaded.target_tokenizer
    vocab = loaded.config.vocab_size if tokenizer_of == "source" else (loaded.config.tgt_vocab_size or
                                                                         loaded.config.vocab_size)
    first = 1 if prefix is None and (tok.bos_id is not None or tok.cls_id is not None) else len(prefix or [])
    span = min(PROBE_SPAN, (loaded.config.max_len - first) // PROBE_REPEATS)
    if span < 2:
        raise AppError(f"this model's context ({loaded.config.max_len} tokens) is too short for a repeated probe")
    probe = repeated_tokens(tok, span=span, repeats=PROBE_REPEATS, batch=PROBE_BATCH, seed=PROBE_SEED,
                            vocab_size=vocab, prefix=prefix)
    return probe, (f"{PROBE_BATCH} rows of {span} random tokens of the model's vocabulary, repeated "
                   f"{PROBE_REPEATS} times (seed {PROBE_SEED})")


@torch.inference_mode()
def score_roles(loaded: LoadedModel, text: str | None, kind: str, head_mask: dict[str, Tensor] | None,
                max_tokens: int) -> RoleResult:
    """Score one stack's heads on sentence 1 and on the probe; for a decoder-only model, the probe's copy losses
    with every head on and (if any head is off) with `head_mask` ({kind: (L, H)}, 1 = on)."""
    model, stack = loaded.model, stack_of(loaded, kind)
    reading: Reading = read_texts(loaded, text, None, max_tokens)[0]
    src, tgt = reading.tensors(model.device)
    causal = stack == "decoder"
    text_roles = head_roles(model, src, tgt, padding=False)[stack]
    probe, what = probe_ids(loaded, "source")
    if loaded.arch == "encoder-decoder":
        bos = loaded.task.get("bos_id", loaded.target_tokenizer.bos_id)
        tgt_probe, _ = probe_ids(loaded, "target", prefix=[bos])
        probe_roles = head_roles(model, probe.ids.to(model.device), tgt_probe.ids.to(model.device),
                                 padding=False)[stack]
        probe = tgt_probe if stack == "decoder" else probe
    else:
        probe_roles = head_roles(model, probe.ids.to(model.device), padding=False)[stack]
    keep = stack_roles(causal)
    losses = None
    if loaded.arch == "decoder":
        losses = (copy_losses(model, probe), None if head_mask is None else copy_losses(model, probe,
                                                                                         head_mask=head_mask))
    return RoleResult(stack, {r: text_roles[r].cpu() for r in keep}, {r: probe_roles[r].cpu() for r in keep}, what,
                      losses)


def role_ablation(result: RoleResult, role: str, k: int, rank_by: str) -> list[tuple[int, int]]:
    """The k heads of `role` with the highest scores (on the probe or the typed text), best first; a NaN score
    (the role undefined on that text) is never picked (`top_heads`)."""
    if role not in ROLES:
        raise AppError(f"unknown role {role!r}; choose from {', '.join(ROLES)}")
    scores = (result.probe if rank_by == "probe" else result.text).get(role)
    if scores is None:
        raise AppError(NOT_CAUSAL.format(stack=KIND_TITLES[result.stack]))
    return top_heads(scores, max(0, int(k)))


@torch.inference_mode()
def output_effects(loaded: LoadedModel, text: str, max_tokens: int) -> Any:
    """Every head switched off alone, its exact effect on the model's own next token after sentence 1 as the model
    reads it (explorer.interpret.head_effects): what "switch these heads off" ranks a role's heads on by effect."""
    from ....interpret.head_effects import head_effects

    reading = read_texts(loaded, text, None, max_tokens)[0]
    src, tgt = reading.tensors(loaded.model.device)
    return head_effects(loaded.model, src[0], position=-1, tgt=None if tgt is None else tgt[0])

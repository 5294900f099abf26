"""Why this token: every head of the model ranked by its exact effect on one predicted token when switched off alone
(explorer.interpret.head_effects, one batched sweep), and, when no head alone moves it, the best pair among the
strongest; for a model that generates, its answer regenerated with the top head (or pair) off. Read on sentence 1 as
the Contributions tab reads it (explorer.app.run.readings), at the same position and token.

Shapes: L layers, H heads per attention kind. The result is small and picklable (it may come from a GPU worker).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from ....checkpoints import LoadedModel
from ....interpret.head_effects import Head, heads_name, regenerate, why_token
from ...run.inputs import answer_length, codec_for, encode_inputs
from ...run.readings import Reading, read_texts, token_id
from ...run.toggles import Head as PageHead
from ...run.toggles import Toggles, head_mask
from ...serving.errors import AppError, escape_md

SHOWN = 8  # heads listed


@dataclass(frozen=True)
class WhyRequest:
    """Sentence 1, the position read (as the Contributions tab counts it), the token (blank: the top one; text or
    #id), ids a language model's continuation adds to the reading, the page's head switches, and whether to search
    pairs even when a head moves the token alone."""

    text: str
    position: int = -1
    token: str = ""
    extend: tuple[int, ...] = ()
    heads_on: Mapping[str, frozenset[PageHead]] | None = None
    search_pairs: bool = False


@dataclass(frozen=True)
class WhyResult:
    token: str  # the token's label
    position: int
    baseline_prob: float
    rows: list[list[Any]]  # the strongest heads: [head, p without it, change, top token without it]
    top: Head | None  # the head whose switch-off moves the token most (None: nothing to switch)
    moved_by_one: bool
    pair: tuple[str, float, str] | None  # the best pair: (its heads, p without them, the top token without them)
    regenerated: list[tuple[str, str]]  # (heads off, the answer) for a model that generates: baseline first
    threshold: float


def extended(loaded: LoadedModel, reading: Reading, ids: tuple[int, ...]) -> Reading:
    """The reading with a language model's continuation tokens appended."""
    if not ids:
        return reading
    return Reading([*reading.src, *ids], [*reading.src_labels, *codec_for(loaded).labels(list(ids))])


def masks(loaded: LoadedModel, heads_on: Mapping[str, frozenset[PageHead]] | None) -> dict | None:
    if heads_on is None:
        return None
    kinds = loaded.config.attention_kinds()
    return head_mask(loaded.config, Toggles(heads_on={k: v for k, v in heads_on.items() if k in kinds}))


@torch.inference_mode()
def why(loaded: LoadedModel, request: WhyRequest, max_tokens: int) -> WhyResult:
    """The heads ranked by their effect on the token (module docstring); AppError for what the person can fix."""
    if loaded.arch == "encoder" and loaded.model.mlm is None:
        raise AppError("This model predicts no token (it has no output head over the vocabulary).")
    reading = extended(loaded, read_texts(loaded, request.text, None, max_tokens)[0], request.extend)
    src, tgt = reading.tensors(loaded.model.device)
    token = token_id(loaded, request.token, "token")
    mask = masks(loaded, request.heads_on)
    try:
        found = why_token(loaded.model, src[0], position=request.position, token=token,
                          tgt=None if tgt is None else tgt[0], head_mask=mask,
                          search_pairs=True if request.search_pairs else None)
    except ValueError as err:
        raise AppError(str(err)) from err
    s = found.singles
    codec = codec_for(loaded)
    label = codec.labels([s.token])[0]
    order = [v for v in s.order() if s.sets[v]][:SHOWN]
    rows = [[heads_name(s.sets[v]), round(float(s.prob[v]), 4), round(float(s.prob[v] - s.baseline_prob), 4),
             codec.labels([int(s.top[v])])[0]] for v in order]
    pair = None
    if found.pairs is not None:
        v = found.pairs.order()[0]
        pair = (heads_name(found.pairs.sets[v]), float(found.pairs.prob[v]),
                codec.labels([int(found.pairs.top[v])])[0])
    top = s.sets[order[0]][0] if order else None
    regenerated = answers(loaded, request.text, max_tokens, mask, top, found.pairs)
    return WhyResult(label, s.position, float(s.baseline_prob), rows, top, found.moved_by_one, pair, regenerated,
                     found.threshold)


def answers(loaded: LoadedModel, text: str, max_tokens: int, mask: dict | None, top: Head | None,
            pairs: Any) -> list[tuple[str, str]]:
    """A sequence model's greedy answer as the page has it, with the top head off and with the best pair off; []
    for a model whose output is not a generated answer (a language model's continuation is the page's own)."""
    task = loaded.task
    if loaded.arch == "encoder" or task.get("name") == "causal-lm" or top is None:
        return []
    sets = [(top,)] + ([pairs.sets[pairs.order()[0]]] if pairs is not None else [])
    codec = codec_for(loaded)
    prompt = torch.tensor([encode_inputs(loaded, codec, text, None, max_tokens).rows[0]], device=loaded.model.device)
    regen = regenerate(loaded.model, prompt, sets, bos_id=task.get("bos_id", loaded.target_tokenizer.bos_id),
                       eos_id=task.get("eos_id", loaded.target_tokenizer.eos_id),
                       max_new_tokens=answer_length(loaded), suppress_ids=task.get("suppress_ids", ()),
                       head_mask=mask, decode=codec.decode)
    out = [("every head on" if mask is None else "the page's switches", regen.baseline.text or "")]
    return out + [(heads_name(a.heads) + " off", a.text or "") for a in regen.variants]


def why_markdown(r: WhyResult) -> str:
    """The plain-words summary above the table."""
    lines = [f"p(“{escape_md(r.token)}”) at position {r.position} is **{r.baseline_prob:.3f}**. The heads whose "
             f"switch-off changes it most, each switched off alone (exact: the model run again):"]
    if not r.moved_by_one:
        lines.append(f"**No single head moves it** (a drop of {r.threshold:g} or a change of the top token).")
    if r.pair is not None:
        heads, p, top = r.pair
        lines.append(f"The best pair: **{escape_md(heads)}** off gives p = {p:.3f} (top token “{escape_md(top)}”).")
    for heads, answer in r.regenerated:
        lines.append(f"With {escape_md(heads)}: the answer is “{escape_md(answer)}”.")
    return "\n\n".join(lines)


WHY_HEADERS = ["head switched off", "p without it", "change", "top token without it"]

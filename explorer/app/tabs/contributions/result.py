"""Where one prediction comes from (the Contributions tab's result), on sentence 1 as the model reads it (a sequence
model: prompt or source and its own greedy answer; explorer.app.run.readings).

Three answers, each from the model actually run:
- direct logit attribution (explorer.interpret.dla): each head's, each MLP's, the embeddings' and the biases' share
  of the logit of the chosen token (or of a logit difference) at the chosen position, for the baseline (every head
  on) and, when a head switch is off, for the toggled model; the shares add up to the model's own logit;
- every head's promoted and suppressed tokens there (its output times the unembedding);
- token attribution (token_attribution): each input token's share of the same logit, on the model as switched.

`contributions(loaded, request, max_tokens)` computes a small picklable `Contributions` (numpy arrays, labels);
explorer.app.tabs.contributions.text turns it into the tab's figures, Markdown and tables. The contribution graph
(Information Flow Routes, explorer.interpret.flow) of the same prediction, baseline and toggled, is part of the result.

Shapes: L layers, H heads (per attention kind: "decoder" or "encoder" self-attention, "cross"), T tokens of the
decoder reading (of the encoder for a masked LM), S source tokens (encoder-decoder), k tokens per head list.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import torch

from ....checkpoints import LoadedModel
from ....interpret.attribution import MAX_STEPS, METHODS
from ....interpret.dla import ResidualParts, residual_parts
from ....interpret.flow import ContributionGraph, contribution_graph
from ...page.head_labels import head_label
from ...run.inputs import codec_for
from ...run.model_run import is_masked_lm
from ...run.readings import Reading, read_texts, token_id
from ...run.toggles import Head, Toggles, head_mask
from ...serving.errors import AppError
from .token_attribution import DEFAULT_STEPS, Attribution, attribute_tokens
from .why_token import extended

TOP_K = 10  # promoted / suppressed tokens kept per head
NO_LOGIT = ("There is no logit to attribute: this encoder has no output head (a sentence-embedding model). Load a "
            "language model, an encoder-decoder or a masked language model.")
CLASSIFIER = ("This tab attributes token logits (a language model's, an encoder-decoder's decoder's or a masked "
              "LM's); this encoder has a classifier head.")
DEFAULT_THRESHOLD = 0.04  # the graph keeps the parts of an update with at least this share (the paper's tau)
RUN_NAMES = ("without toggles", "with toggles")


@dataclass(frozen=True)
class ContributionRequest:
    """What the tab asks: sentence 1, the position read (negative: from the end; a masked LM's default -1 reads its
    first mask token), the target token and an optional token to subtract (text as typed, "#id" for an id, blank:
    the baseline's top token), the attribution method and its steps, which heads are on (kind -> (layer, head)
    pairs; None: all), and the contribution graph's threshold (0 < threshold <= 1). Steps 0: chosen per request."""

    text: str
    position: int = -1
    token: str = ""
    minus: str = ""
    method: str = "integrated_gradients"
    steps: int = DEFAULT_STEPS
    heads_on: Mapping[str, frozenset[Head]] | None = None
    threshold: float = DEFAULT_THRESHOLD
    extend: tuple[int, ...] = ()  # a language model's continuation before the token asked about: appended
    asked: str = ""  # what was clicked ("“3”, token 6 of the answer"), for the summary

    def __post_init__(self) -> None:
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, (int, float)) or \
                not 0 < self.threshold <= 1:
            raise AppError(f"the graph's threshold must be a number above 0 and at most 1, got {self.threshold!r}")
        if self.method not in METHODS:
            raise AppError(f"unknown method {self.method!r}; choose from {', '.join(METHODS)}")
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or not 0 <= self.steps <= MAX_STEPS:
            raise AppError(f"steps must be a whole number from 0 (automatic) to {MAX_STEPS}, got {self.steps!r}")
        if isinstance(self.position, bool) or not isinstance(self.position, int):
            raise AppError(f"the position must be a whole number, got {self.position!r}")


@dataclass(frozen=True)
class RunShares:
    """One run's direct logit attribution and every head's promoted / suppressed tokens."""

    heads: dict[str, np.ndarray]  # kind -> (L, H) float32 shares, kinds in drawing order
    mlps: np.ndarray  # (L,)
    embeddings: float
    rest: float
    logit: float  # the model's own logit (difference) of this run
    total: float  # the sum of the parts (== logit up to float error)
    top: int  # this run's own top token at the position
    off: dict[str, np.ndarray] | None  # kind -> (L, H) bool, True = switched off; None: every head on
    promoted: dict[str, tuple[np.ndarray, np.ndarray]]  # kind -> ids (L, H, k) int64, shares (L, H, k) float32
    suppressed: dict[str, tuple[np.ndarray, np.ndarray]]  # the same, most negative first


@dataclass(frozen=True)
class Contributions:
    """The tab's result: small, picklable (it comes back from a GPU worker)."""

    kinds: list[str]  # attention kinds with a direct share: ["decoder"], ["decoder", "cross"], ["encoder"]
    position: int  # the position read, from 0
    position_text: str  # "after “t8” (position 12)"
    token: int
    minus: int | None
    target_text: str  # "logit(t250)" or "logit(t250) − logit(t13)" (unescaped)
    labels: dict[int, str]  # id -> label of every token named in the result
    baseline: RunShares
    toggled: RunShares | None  # None when every head is on
    attribution: Attribution
    graphs: tuple[ContributionGraph, ContributionGraph | None]  # baseline, toggled (None when every head is on)
    graph_labels: tuple[list[str], list[str] | None]  # the traced stack's token labels, an encoder-decoder's source
    notices: list[str] = field(default_factory=list)
    asked: str = ""  # what was clicked, as the request names it
    heads_on: Mapping[str, frozenset[Head]] | None = None  # the request's head switches (None: all on)

    def label(self, token: int) -> str:
        return self.labels.get(int(token), f"#{int(token)}")

    def head_choices(self) -> list[str]:
        """Every head with a direct share, as the head picker lists them: "L1 H0" (self), "cross L1 H0"."""
        out = []
        for kind in self.kinds:
            L, H = self.baseline.heads[kind].shape
            prefix = "cross " if kind == "cross" else ""
            out += [prefix + head_label(la, h) for la in range(L) for h in range(H)]
        return out

    def strongest_head(self) -> str:
        """The head picker's default: the head with the largest share in the baseline."""
        best, name = -math.inf, ""
        for kind in self.kinds:
            values = self.baseline.heads[kind]
            la, h = np.unravel_index(int(np.argmax(values)), values.shape)
            if float(values[la, h]) > best:
                best, name = float(values[la, h]), ("cross " if kind == "cross" else "") + head_label(int(la), int(h))
        return name


# ----------------------------------------------------------------------------------------------- input
def check_model(loaded: LoadedModel) -> None:
    if loaded.arch == "encoder" and loaded.model.mlm is None:
        raise AppError(CLASSIFIER if loaded.model.classifier is not None else NO_LOGIT)


def resolve_position(loaded: LoadedModel, reading: Reading, position: int, notices: list[str]) -> int:
    """The position read, from 0: AppError outside the reading. A masked LM's default (-1) is its first mask token."""
    ids = reading.decoder_ids
    n = len(ids)
    if loaded.arch == "encoder" and position == -1:
        mask_id = loaded.task.get("mask_id")
        masks = [t for t, i in enumerate(ids) if i == mask_id] if is_masked_lm(loaded) else []
        if not masks:
            token = loaded.task.get("mask_token", "[MASK]")
            raise AppError(f"Sentence 1 has no {token}: write {token} where a word is missing, or choose a position "
                           "(a masked LM's logits at a position score the token there).")
        if len(masks) > 1:
            notices.append(f"Sentence 1 has {len(masks)} mask tokens; the first (position {masks[0]}) is read.")
        return masks[0]
    if not -n <= position < n:
        what = "decoder tokens (its answer included)" if reading.tgt is not None else "tokens"
        raise AppError(f"Position {position} is outside sentence 1, which the model reads as {n} {what}: choose "
                       f"0..{n - 1}, or −1..−{n} from the end.")
    return position % n


def position_text(loaded: LoadedModel, reading: Reading, position: int) -> str:
    label = reading.decoder_labels[position]
    if loaded.arch == "encoder":
        return f"at “{label}” (position {position})"
    return f"after “{label}” (position {position})"


# ----------------------------------------------------------------------------------------------- compute
def masks_of(loaded: LoadedModel, heads_on: Mapping[str, frozenset[Head]] | None) -> dict[str, torch.Tensor] | None:
    if heads_on is None:
        return None
    kinds = loaded.config.attention_kinds()
    return head_mask(loaded.config, Toggles(heads_on={k: v for k, v in heads_on.items() if k in kinds}))


def run_shares(parts: ResidualParts, token: int, minus: int | None, masks: dict[str, torch.Tensor] | None,
               k: int) -> RunShares:
    a = parts.attribute(token, minus)
    heads = {parts.kind: a.heads.numpy()}
    if a.cross is not None:
        heads["cross"] = a.cross.numpy()
    tokens = parts.all_head_tokens(k)
    promoted = {kind: (t.promoted_ids.cpu().numpy(), t.promoted_logits.float().cpu().numpy())
                for kind, t in tokens.items()}
    suppressed = {kind: (t.suppressed_ids.cpu().numpy(), t.suppressed_logits.float().cpu().numpy())
                  for kind, t in tokens.items()}
    off = None if masks is None else {kind: (masks[kind] == 0).cpu().numpy() for kind in heads}
    return RunShares(heads, a.mlps.numpy(), a.embeddings, a.rest, a.logit, a.total(), int(parts.logits.argmax()),
                     off, promoted, suppressed)


def contributions(loaded: LoadedModel, request: ContributionRequest, max_tokens: int, k: int = TOP_K
                  ) -> Contributions:
    """Direct logit attribution (baseline, and toggled when a head is off), every head's tokens and the token
    attribution of one prediction on sentence 1. AppError for anything the person can fix."""
    check_model(loaded)
    notices: list[str] = []
    reading = extended(loaded, read_texts(loaded, request.text, None, max_tokens)[0], request.extend)
    position = resolve_position(loaded, reading, request.position, notices)
    token = token_id(loaded, request.token, "target token", notices)
    minus = token_id(loaded, request.minus, "minus token", notices)
    masks = masks_of(loaded, request.heads_on)
    model = loaded.model
    src, tgt = reading.tensors(model.device)
    with torch.inference_mode():
        base_parts = residual_parts(model, src, tgt=tgt, position=position)
        token = int(base_parts.logits.argmax()) if token is None else token
        if minus == token:
            raise AppError("The minus token is the target token: their logit difference is 0. Type another one, or "
                           "leave it blank.")
        baseline = run_shares(base_parts, token, minus, None, k)
        toggled = None
        if masks is not None:
            toggled = run_shares(residual_parts(model, src, tgt=tgt, position=position, head_mask=masks), token,
                                 minus, masks, k)
        graphs = tuple(None if m is False else
                       contribution_graph(model, src[0], tgt=None if tgt is None else tgt[0], position=position,
                                          head_mask=m, threshold=request.threshold)
                       for m in (None, False if masks is None else masks))  # baseline, toggled
    attribution = attribute_tokens(loaded, reading, position, token, minus, request.method, request.steps, masks)
    notices.extend(attribution.notices)  # each a paragraph of its own, said in the page's language
    ids = {token, baseline.top} | ({minus} if minus is not None else set())
    for run in (baseline, toggled):
        if run is None:
            continue
        ids.add(run.top)
        for table in (run.promoted, run.suppressed):
            for kind_ids, _ in table.values():
                ids.update(int(i) for i in np.unique(kind_ids))
    ordered = sorted(ids)
    labels = dict(zip(ordered, codec_for(loaded).labels(ordered)))
    target = f"logit({labels[token]})" + ("" if minus is None else f" − logit({labels[minus]})")
    graph_labels = ((reading.decoder_labels, reading.src_labels) if loaded.arch == "encoder-decoder"
                    else (reading.src_labels, None))
    return Contributions(list(baseline.heads), position, position_text(loaded, reading, position), token, minus,
                         target, labels, baseline, toggled, attribution, graphs, graph_labels, notices, request.asked,
                         request.heads_on)

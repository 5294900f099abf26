"""Why this token: every head ranked by its exact effect on one token's probability when it is switched off.

For one prediction (a position of the sequence the model reads, and a token), each head of every attention kind
(encoder self, decoder self, cross) is switched off alone and the model run again: the token's probability, its
logit and the top token at that position, against the baseline with every head on (or with the heads a given
`head_mask` switches off, the page's switches: each variant then switches its heads off on top). A head "moves" the
token when switching it off lowers the token's probability by at least DEFAULT_DROP, or changes the top token there
(a "flip"). When no single head does, every pair of the DEFAULT_PAIR_HEADS strongest single heads is switched off
together (28 runs for 8 heads; kinds mix: a pair may be a cross head and a decoder head). `regenerate` writes a
sequence model's greedy answer again with heads off, so a page can say what a pair does to the whole answer, and
`role_heads_by_effect` orders the heads of a role (explorer.interpret.roles) by their effect.

Exact, and batched as the head-importance sweep (explorer.interpret.importance): layers below the first head switched off do
not change, so every variant (a set of heads off) restarts at that layer from the baseline's hidden state, and
the variants that restart at the same layer run as one batch with a (V, L, H) head mask per kind. The decoder is
causal, so only its tokens up to the position read are run; an encoder head restarts the encoder at its layer,
then the whole decoder on the changed memory. The model reads the sequence as `residual_parts` (direct logit
attribution) does: default masks, padding where ids == pad_id, an encoder-decoder's decoder start token real.

Shapes: V variants, L layers, H heads, S source / T decoder length, D model width, W output vocabulary (classes).

    head_effects(model, ids (T,)|(1, T), position, token, tgt) -> Effects of V = every head, alone
    pair_effects(model, ids, heads, ...)                        -> Effects of every pair of `heads`
    why_token(model, ids, ...)                                   -> TokenEffects: singles, pairs when none moves it
    regenerate(model, src, head_sets, bos_id, eos_id, ...)       -> Regenerations: greedy answers, heads off
    role_heads_by_effect(scores (L, H), effects, kind, k)        -> [RoleHead] best effect first
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from ..outputs.generate import generate
from ..model import Transformer
from ..model.masks import causal_mask
from .sequence import as_row, check_reading, check_token, resolve_position

DEFAULT_DROP = 0.5  # a head moves the token when switching it off lowers p(token) by this much (or flips the top)
DEFAULT_PAIR_HEADS = 8  # pairs are searched among this many top single heads: 8 * 7 / 2 = 28 runs
MAX_PAIR_HEADS = 16  # at most 16 * 15 / 2 = 120 pair runs
DEFAULT_BATCH = 64  # variants run in one batch
ROLE_MIN_SCORE = 0.5  # a head counts as a head of a role from this pattern score (explorer.training.induction's threshold)


class Head(NamedTuple):
    """One attention head: kind "encoder" / "decoder" (self-attention) / "cross", layer and head from 0."""

    kind: str
    layer: int
    head: int

    def name(self, several_kinds: bool = True) -> str:
        """"L1 H3" for the only kind of a model; "cross L0 H1", "encoder L1 H2", "decoder L0 H3" otherwise (a cross
        head is always named so)."""
        label = f"L{self.layer} H{self.head}"
        return f"{self.kind} {label}" if several_kinds or self.kind == "cross" else label


def heads_name(heads: Sequence[Head], several_kinds: bool = True) -> str:
    """"cross L0 H1 + cross L1 H3"."""
    return " + ".join(h.name(several_kinds) for h in heads)


@dataclass(frozen=True)
class Effects:
    """The token's probability, logit and the top token at the position, per variant (a set of heads switched off),
    and the same with every head on. Numpy arrays: small and picklable."""

    sets: list[tuple[Head, ...]]  # (V,) the heads each variant switches off
    prob: np.ndarray  # (V,) float64 p(token) with those heads off
    logit: np.ndarray  # (V,) float64 logit(token)
    top: np.ndarray  # (V,) int64 the top token at the position
    top_prob: np.ndarray  # (V,) float64 its probability
    baseline_prob: float
    baseline_logit: float
    baseline_top: int
    position: int  # from 0, in the sequence the logits are read in (an encoder-decoder's decoder input)
    token: int
    shapes: dict[str, tuple[int, int]]  # kind -> (L, H): the model's attention kinds, in order
    switched_off: tuple[Head, ...] = ()  # heads off in the baseline too (the head_mask given)

    @property
    def drop(self) -> np.ndarray:
        """(V,) p(token) with every head on minus with the variant's heads off: > 0 where they helped the token."""
        return self.baseline_prob - self.prob

    @property
    def flips(self) -> np.ndarray:
        """(V,) True where the top token at the position changes."""
        return self.top != self.baseline_top

    def moves(self, threshold: float = DEFAULT_DROP) -> np.ndarray:
        """(V,) True where the variant lowers p(token) by at least `threshold` or flips the top token."""
        return (self.drop >= threshold) | self.flips

    def order(self) -> list[int]:
        """Variant indices, largest drop first (a flip first among equal drops; then the order given)."""
        return sorted(range(len(self.sets)), key=lambda v: (-float(self.drop[v]), not bool(self.flips[v]), v))

    def ranked(self, k: int | None = None) -> list[tuple[Head, ...]]:
        return [self.sets[v] for v in self.order()[:k]]

    def index(self, heads: Sequence[Head]) -> int:
        """The variant switching off exactly `heads` (any order); ValueError when there is none."""
        wanted = frozenset(heads)
        for v, s in enumerate(self.sets):
            if frozenset(s) == wanted:
                return v
        raise ValueError(f"no variant switches off exactly {heads_name(list(heads))}")

    def grid(self, kind: str, values: np.ndarray | None = None) -> np.ndarray:
        """(L, H) map of one kind's single-head variants (NaN where a head has none): `values` (V,) per variant,
        default the drop. For a heatmap beside direct logit attribution."""
        if kind not in self.shapes:
            raise ValueError(f"no {kind!r} heads here; kinds: {', '.join(self.shapes)}")
        values = self.drop if values is None else np.asarray(values)
        out = np.full(self.shapes[kind], np.nan)
        for v, s in enumerate(self.sets):
            if len(s) == 1 and s[0].kind == kind:
                out[s[0].layer, s[0].head] = values[v]
        return out

    @property
    def several_kinds(self) -> bool:
        return len(self.shapes) > 1


@dataclass(frozen=True)
class TokenEffects:
    """why_token's answer: every head alone, and (when no head alone moves the token) pairs of the strongest."""

    singles: Effects
    pairs: Effects | None  # None when not searched (a head moves the token alone), or fewer than 2 heads to pair
    threshold: float

    @property
    def moved_by_one(self) -> bool:
        return bool(self.singles.moves(self.threshold).any())

    def best(self) -> tuple[tuple[Head, ...], float, int]:
        """(heads, p(token) with them off, top token then): the best single head when one moves the token, else the
        best pair (the best single head when no pair was searched)."""
        effects = self.singles if self.pairs is None or self.moved_by_one else self.pairs
        v = effects.order()[0]
        return effects.sets[v], float(effects.prob[v]), int(effects.top[v])


# ----------------------------------------------------------------------------------------------- runs
@dataclass
class _Baseline:
    """One run with the base head mask (every head on by default): what the variants restart from."""

    enc_hidden: tuple[Tensor, ...]  # each encoder layer's input (1, S, D) (empty without an encoder)
    src_key_mask: Tensor | None  # (1, S)
    memory: Tensor | None  # (1, S, D) an encoder-decoder's encoder output
    dec_hidden: tuple[Tensor, ...]  # each decoder layer's input (1, T', D), T' = position + 1 (empty: no decoder)
    dec_key_mask: Tensor | None  # (1, T')
    self_mask: Tensor | None  # (T', T') causal
    logits: Tensor  # (1, W) at the position
    position: int  # where the logits are read in the stack's output (T' - 1 in a decoder)
    masks: dict[str, Tensor]  # kind -> (L, H) the base head mask, 1 = on, every kind


def _head_logits(model: Transformer, out: Tensor, t: int) -> Tensor:
    """The stack's output (V, T, D) -> (V, W) logits at position t, through the model's own head."""
    if model.generator is not None:
        return model.generator.logits(out[:, t])
    if model.mlm is not None:
        return model.mlm(out[:, t])
    return model.classifier(out)  # reads token 0 (t == 0, checked)


def _baseline(model: Transformer, ids: Tensor, tgt: Tensor | None, position: int, masks: dict[str, Tensor]
              ) -> tuple[_Baseline, int]:
    """-> the baseline and the position read (from 0, in the whole sequence)."""
    arch = model.config.arch
    check_reading(model, "the head effects", tgt, "token probability to change")
    enc_hidden, src_key_mask, memory = (), None, None
    if arch != "decoder":
        enc = model.encode(ids, need_weights=False, head_mask=masks["encoder"])
        enc_hidden, src_key_mask, memory = enc.hidden_states[:-1], enc.key_mask, enc.memory
        if arch == "encoder":
            t = resolve_position(position, ids.shape[1])
            if model.classifier is not None and t != 0:
                raise ValueError(f"a classifier reads the first token only: pass position=0 (got {position})")
            return _Baseline(enc_hidden, src_key_mask, None, (), None, None, _head_logits(model, memory, t), t,
                             masks), t
    seq = ids if arch == "decoder" else tgt
    t = resolve_position(position, seq.shape[1])
    seq = seq[:, :t + 1]  # the decoder is causal: later tokens change nothing at t
    key_mask = model.key_mask(seq, True) if arch == "decoder" else model.target_key_mask(seq, True)
    dec = model.decode(seq, memory, src_key_mask, key_mask=key_mask, need_weights=False, head_mask=masks["decoder"],
                       cross_head_mask=masks.get("cross"))
    return _Baseline(enc_hidden, src_key_mask, memory if arch == "encoder-decoder" else None, dec.hidden_states[:-1],
                     key_mask, causal_mask(t + 1, seq.device), _head_logits(model, dec.output, t), t, masks), t


def _rows(t: Tensor | None, V: int) -> Tensor | None:
    """(1, ...) -> (V, ...) without a copy."""
    return None if t is None else t.expand(V, *t.shape[1:])


def _restart(model: Transformer, heads: Sequence[Head]) -> tuple[int, int]:
    """(stage, layer) where a variant with `heads` off starts: stage 0 = the encoder, 1 = the decoder (its self- and
    cross-attention heads of layer l both start at decoder layer l)."""
    return min((0 if h.kind == "encoder" else 1, h.layer) for h in heads)


def _run_group(model: Transformer, base: _Baseline, stage: int, layer: int,
               sets: Sequence[Sequence[Head]]) -> Tensor:
    """V variants that restart at (stage, layer) -> (V, W) logits at the position."""
    V = len(sets)
    masks = {kind: m.expand(V, *m.shape).clone() for kind, m in base.masks.items()}  # (V, L, H) 1 = on
    for v, heads in enumerate(sets):
        for h in heads:
            masks[h.kind][v, h.layer, h.head] = 0.0
    if stage == 0:
        enc = model.encoder.run(_rows(base.enc_hidden[layer], V), key_mask=_rows(base.src_key_mask, V),
                                head_mask=masks.get("encoder"), need_weights=False, first_layer=layer)
        if not base.dec_hidden:
            return _head_logits(model, enc.output, base.position)
        memory, layer = enc.output, 0
    else:
        memory = _rows(base.memory, V)
    run = model.decoder.run(_rows(base.dec_hidden[layer], V), memory, key_mask=_rows(base.dec_key_mask, V),
                            memory_key_mask=None if memory is None else _rows(base.src_key_mask, V),
                            attn_mask=base.self_mask, head_mask=masks.get("decoder"),
                            cross_head_mask=masks.get("cross"), need_weights=False, first_layer=layer)
    return _head_logits(model, run.output, base.position)


def _base_masks(model: Transformer, head_mask: Mapping[str, Any] | None) -> dict[str, Tensor]:
    """{kind: (L, H)} for every kind of the model: the given ones (as the forward takes them), ones for the rest."""
    given = model.head_masks(head_mask)
    masks = {}
    for kind, shape in model.config.attention_kinds().items():
        m = given.get(kind, torch.ones(shape, device=model.device))
        if tuple(m.shape) != shape:
            raise ValueError(f"head_mask[{kind!r}] must be (n_layers, n_heads) = {shape}, got {tuple(m.shape)}")
        masks[kind] = m
    unknown = set(given) - set(masks)
    if unknown:
        raise ValueError(f"this model has no {', '.join(sorted(unknown))} heads; kinds: {', '.join(masks)}")
    return masks


def _switched_off(masks: Mapping[str, Tensor]) -> tuple[Head, ...]:
    return tuple(Head(kind, int(la), int(h)) for kind, m in masks.items() for la, h in (m == 0).nonzero().tolist())


def _check_heads(model: Transformer, heads: Sequence[Head]) -> tuple[Head, ...]:
    kinds = model.config.attention_kinds()
    out = []
    for h in heads:
        h = Head(*h)
        if h.kind not in kinds:
            raise ValueError(f"this model has no {h.kind!r} heads; kinds: {', '.join(kinds)}")
        L, H = kinds[h.kind]
        if not (0 <= h.layer < L and 0 <= h.head < H):
            raise ValueError(f"{h.name()} is not a head of this model: {h.kind} layers 0..{L - 1}, heads 0..{H - 1}")
        out.append(h)
    if not out or len(set(out)) != len(out):
        raise ValueError(f"a variant switches off one or more distinct heads, got {list(heads)!r}")
    return tuple(out)


@torch.no_grad()
def effects_of(model: Transformer, ids: Tensor, sets: Sequence[Sequence[Head]], *, position: int = -1,
               token: int | None = None, tgt: Tensor | None = None, head_mask: Mapping[str, Any] | None = None,
               batch_size: int = DEFAULT_BATCH) -> Effects:
    """p(token), logit(token) and the top token at `position` with each set of heads switched off (one variant per
    set), exact and batched (module docstring). ids: the sequence (decoder-only, encoders) or the source
    (encoder-decoders, with `tgt` the decoder input; `position` then counts in tgt). token None: the baseline's top.
    head_mask: the heads already off ({kind: (L, H)}, 1 = on, as the forward takes it): the baseline is that model,
    and each variant switches its heads off on top of it."""
    if model.training:
        raise ValueError("head effects need the model in eval mode (model.eval()): dropout would change every run")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a whole number of at least 1, got {batch_size!r}")
    device = model.device
    ids = as_row(ids, "ids").to(device)
    tgt = None if tgt is None else as_row(tgt, "tgt").to(device)
    checked = [_check_heads(model, s) for s in sets]
    base, t = _baseline(model, ids, tgt, position, _base_masks(model, head_mask))
    vocab = base.logits.shape[-1]
    token = int(base.logits[0].argmax()) if token is None else check_token(token, vocab)
    logits = torch.empty(len(checked), vocab, dtype=torch.float64)
    groups: dict[tuple[int, int], list[int]] = {}
    for v, s in enumerate(checked):
        groups.setdefault(_restart(model, s), []).append(v)
    for (stage, layer), members in sorted(groups.items()):
        for start in range(0, len(members), batch_size):
            chunk = members[start:start + batch_size]
            logits[chunk] = _run_group(model, base, stage, layer, [checked[v] for v in chunk]).double().cpu()
    base_logits = base.logits.double().cpu()  # (1, W)
    log_p, base_log_p = logits.log_softmax(-1), base_logits.log_softmax(-1)  # float64 on the CPU
    top = log_p.argmax(-1)
    return Effects(checked, log_p[:, token].exp().numpy(), logits[:, token].numpy(), top.numpy(),
                   log_p.gather(1, top[:, None])[:, 0].exp().numpy(), float(base_log_p[0, token].exp()),
                   float(base_logits[0, token]), int(base_logits[0].argmax()), t, token,
                   dict(model.config.attention_kinds()), _switched_off(base.masks))


def every_head(model: Transformer) -> list[Head]:
    """Every head of every attention kind, kinds in order, then layer, then head."""
    return [Head(kind, layer, h) for kind, (L, H) in model.config.attention_kinds().items()
            for layer in range(L) for h in range(H)]


def head_effects(model: Transformer, ids: Tensor, *, position: int = -1, token: int | None = None,
                 tgt: Tensor | None = None, head_mask: Mapping[str, Any] | None = None,
                 batch_size: int = DEFAULT_BATCH) -> Effects:
    """Every head of every kind switched off alone (one variant per head, `every_head` order)."""
    return effects_of(model, ids, [(h,) for h in every_head(model)], position=position, token=token, tgt=tgt,
                      head_mask=head_mask, batch_size=batch_size)


def pair_effects(model: Transformer, ids: Tensor, heads: Sequence[Head], *, position: int = -1,
                 token: int | None = None, tgt: Tensor | None = None, head_mask: Mapping[str, Any] | None = None,
                 batch_size: int = DEFAULT_BATCH) -> Effects:
    """Every pair of `heads` switched off together (at most MAX_PAIR_HEADS heads: 120 pairs)."""
    heads = [Head(*h) for h in heads]
    if not 2 <= len(heads) <= MAX_PAIR_HEADS:
        raise ValueError(f"pairs are searched among 2..{MAX_PAIR_HEADS} heads, got {len(heads)}")
    return effects_of(model, ids, list(combinations(heads, 2)), position=position, token=token, tgt=tgt,
                      head_mask=head_mask, batch_size=batch_size)


def why_token(model: Transformer, ids: Tensor, *, position: int = -1, token: int | None = None,
              tgt: Tensor | None = None, threshold: float = DEFAULT_DROP, pair_heads: int = DEFAULT_PAIR_HEADS,
              search_pairs: bool | None = None, head_mask: Mapping[str, Any] | None = None,
              batch_size: int = DEFAULT_BATCH) -> TokenEffects:
    """Every head alone; then every pair of the `pair_heads` heads with the largest drops among those that do not
    move the token alone (a drop of `threshold` in p(token), or a flip of the top token). search_pairs None: only
    when no head moves it alone; True: always (what two heads do that neither does alone); False: never.
    head_mask: heads already off (the page's switches): the baseline, never paired."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
        raise ValueError(f"threshold must be a probability drop above 0 and at most 1, got {threshold!r}")
    if isinstance(pair_heads, bool) or not isinstance(pair_heads, int) or not 2 <= pair_heads <= MAX_PAIR_HEADS:
        raise ValueError(f"pair_heads must be a whole number from 2 to {MAX_PAIR_HEADS}, got {pair_heads!r}")
    singles = head_effects(model, ids, position=position, token=token, tgt=tgt, head_mask=head_mask,
                           batch_size=batch_size)
    pairs = None
    moves = singles.moves(threshold)
    off = set(singles.switched_off)
    # the strongest heads that do not move the token alone (and are not off already)
    quiet = [v for v in singles.order() if not moves[v] and singles.sets[v][0] not in off][:pair_heads]
    if (not moves.any() if search_pairs is None else search_pairs) and len(quiet) >= 2:
        candidates = [singles.sets[v][0] for v in quiet]
        pairs = pair_effects(model, ids, candidates, position=position, token=singles.token, tgt=tgt,
                             head_mask=head_mask, batch_size=batch_size)
    return TokenEffects(singles, pairs, float(threshold))


# ----------------------------------------------------------------------------------------------- answers
@dataclass(frozen=True)
class Answer:
    heads: tuple[Head, ...]  # switched off (empty: the baseline)
    ids: list[int]  # the greedy answer, up to and including the end token
    text: str | None  # decode(ids) when a decode was given


@dataclass(frozen=True)
class Regenerations:
    baseline: Answer
    variants: list[Answer]  # one per head set, in the order given

    def changed(self) -> list[Answer]:
        """The variants whose answer differs from the baseline's."""
        return [a for a in self.variants if a.ids != self.baseline.ids]


@torch.no_grad()
def regenerate(model: Transformer, src: Tensor, head_sets: Sequence[Sequence[Head]], *, bos_id: int | None = None,
               eos_id: int | None = None, max_new_tokens: int = 32, suppress_ids: Sequence[int] = (),
               head_mask: Mapping[str, Any] | None = None, decode: Callable[[list[int]], str] | None = None
               ) -> Regenerations:
    """The greedy answer with every head on (or `head_mask`'s heads off) and with each set of heads off on top, in one
    batch (row 0 the baseline, row v+1 head set v, each with its own (L, H) head mask). src: an encoder-decoder's
    source (decoding starts from bos_id) or a decoder-only model's prompt, one sequence, read whole (no padding), as
    the app generates."""
    if model.training:
        raise ValueError("regenerate needs the model in eval mode (model.eval())")
    sets = [()] + [_check_heads(model, s) for s in head_sets]
    src = as_row(src, "src").to(model.device)
    V = len(sets)
    base = _base_masks(model, head_mask)
    each = [masks_without(model.config.attention_kinds(), s, base) for s in sets]
    masks = {kind: torch.stack([m[kind] for m in each]).to(model.device) for kind in each[0]}  # (V, L, H)
    gen = generate(model, src.expand(V, -1), bos_id=bos_id, eos_id=eos_id, max_new_tokens=max_new_tokens,
                   head_mask=masks, key_mask=torch.ones(V, src.shape[1], dtype=torch.bool, device=model.device),
                   suppress_ids=suppress_ids)
    answers = []
    for heads, row in zip(sets, gen.tokens.tolist()):
        n = row.index(eos_id) + 1 if eos_id is not None and eos_id in row else len(row)
        answers.append(Answer(heads, row[:n], None if decode is None else decode(row[:n])))
    return Regenerations(answers[0], answers[1:])


# ----------------------------------------------------------------------------------------------- roles
@dataclass(frozen=True)
class RoleHead:
    layer: int
    head: int
    score: float  # the role's pattern score (explorer.interpret.roles)
    drop: float  # p(token) with every head on minus with this head alone off
    flip: bool  # the top token changes with it off


def role_heads_by_effect(scores: Tensor | np.ndarray, effects: Effects | Tensor | np.ndarray, kind: str, k: int, *,
                         min_score: float = ROLE_MIN_SCORE) -> list[RoleHead]:
    """The k heads of a role (pattern score >= min_score, NaN never) of `kind`, ordered by their effect on the output
    (largest drop in p(token) first, then a flip, then the higher score): for "switch these heads off" by effect.
    effects: the single-head sweep (`head_effects`), or any (L, H) map of effects, larger = stronger (e.g. the
    exact head-importance sweep's drop in the answer's log-probability); flips are then False."""
    scores = np.asarray(torch.as_tensor(scores).float().cpu())
    if isinstance(effects, Effects):
        if kind not in effects.shapes:
            raise ValueError(f"no {kind!r} heads here; kinds: {', '.join(effects.shapes)}")
        drop, flips = effects.grid(kind), effects.grid(kind, effects.flips.astype(float))
    else:
        drop = np.asarray(torch.as_tensor(effects).double().cpu())
        flips = np.zeros_like(drop)
    if scores.shape != drop.shape or scores.ndim != 2:
        raise ValueError(f"role scores must be (L, H) = {drop.shape} for the {kind} heads, got {scores.shape}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"k must be a whole number >= 0, got {k!r}")
    if np.isnan(drop).any():
        raise ValueError(f"the effects do not hold every {kind} head alone: use head_effects")
    heads = [RoleHead(int(la), int(h), float(scores[la, h]), float(drop[la, h]), bool(flips[la, h]))
             for la, h in zip(*np.nonzero(scores >= min_score))]  # NaN >= x is False
    heads.sort(key=lambda r: (-r.drop, not r.flip, -r.score, r.layer, r.head))
    return heads[:k]


def masks_without(shapes: Mapping[str, tuple[int, int]], heads: Sequence[Head],
                  base: Mapping[str, Tensor] | None = None) -> dict[str, Tensor]:
    """{kind: (L, H)} head masks (1 = on) with `heads` off (on top of `base`, default every head on): what a forward
    pass or generate takes."""
    masks = {kind: torch.ones(*shape) if base is None else base[kind].detach().float().cpu().clone()
             for kind, shape in shapes.items()}
    for h in heads:
        masks[h.kind][h.layer, h.head] = 0.0
    return masks

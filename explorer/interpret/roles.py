"""Head roles: how much of each head's attention goes where a kind of head is known to look.

Six roles, each a set of keys predicted for every query position q from the token ids alone:

    previous   key q-1                                     (previous-token head)
    duplicate  earlier keys k < q holding the same token as q
    induction  keys k <= q right after an earlier occurrence of q's token (ids[k-1] == ids[q], k-1 < q)
    first      key 0, the first token (attention sink)
    self       key q (the diagonal)
    local      keys with |q - k| <= window (the app's local-window mask; in a causal model the
               current token and the `window` before it)

A head's score is TransformerLens's "mul" head-detector metric (`detect_head`, error_measure="mul"):
the attention on the predicted keys divided by all the attention, sum(A * P) / sum(A), i.e. the mean
weight a query puts on the keys its role predicts, in [0, 1]. previous, duplicate and induction use
TransformerLens's detection patterns exactly. Deliberate differences, so that a perfect head scores
1.0 and scores are comparable across texts:

- only query rows where the role can be told apart from chance count: rows that predict at least
  one key the query may attend to, and not all of them (TransformerLens counts every row, so a
  perfect induction head on a twice-repeated sequence scores about 0.5 there). So row 0 of a causal
  model, which can only attend to itself, counts for no role; "local" counts from q = window + 1.
- padded query rows (``key_mask`` False) never count, and masked keys are never predicted;
- a batch is scored per sequence, then averaged over the sequences where the role is defined
  (TransformerLens averages a list of sequences the same way). Where no sequence defines a role
  (no repeated token for duplicate / induction) its scores are NaN.

Shapes: B batch, L layers, H heads, T sequence length.

    attentions  per layer (B, H, T, T) (a sequence of L tensors) or stacked (L, H, T, T) for one sequence
    ids         (B, T) or (T,) token ids; key_mask (B, T) True = real token; attn_mask (T, T) | (B, T, T)
    role_scores(...) -> {role: (L, H)}
    head_roles(model, ids (B, T), tgt=None) -> {"encoder" | "decoder": {role: (L, H)}}

The probe the app generates (random tokens, repeated) is in :mod:`explorer.interpret.probe`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch
from torch import Tensor

from ..model import Transformer
from ..model.masks import local_window_mask, normalize_mask

ROLES = ("previous", "duplicate", "induction", "first", "self", "local")
DEFAULT_WINDOW = 2  # "local": keys at most this many positions away from the query


def layer_attentions(attentions: Tensor | Sequence[Tensor]) -> list[Tensor]:
    """Per-layer (B, H, T, T) tensors or one stacked (L, H, T, T) -> L tensors (B, H, T, T), dtype kept (a
    float16 run stays float16; `row_sums` converts a block of rows at a time)."""
    if isinstance(attentions, Tensor):
        if attentions.dim() != 4:
            raise ValueError(f"stacked attentions must be (L, H, T, T), got {tuple(attentions.shape)}")
        return [a[None] for a in attentions]  # (1, H, T, T) each
    layers = list(attentions)
    if not layers:
        raise ValueError("no attention layers given")
    shapes = {tuple(a.shape) for a in layers}
    if len(shapes) != 1 or layers[0].dim() != 4:
        raise ValueError(f"per-layer attentions must all be (B, H, T, T), got {sorted(shapes)}")
    return layers


ROWS_AT_ONCE = 128  # query rows of every head converted to float32 at a time (1,024 keys, 12 heads: 6 MB)


def row_sums(layers: Sequence[Tensor]) -> Iterator[Tensor]:
    """Each layer's (B, H, T, T) rows summed in float32 -> (B, H, T). A float16 layer is read ROWS_AT_ONCE query rows
    at a time into one float32 buffer (each row's values and their order as in a whole float32 copy, so the same sums;
    at 1,024 tokens on GPT-2 small the role scores take 41 ms instead of 69 on 2 threads: no whole (B, H, T, T) copy
    written to memory and read back)."""
    buffer = None
    for a in layers:
        if a.dtype == torch.float32:
            yield a.sum(-1)
            continue
        B, H, T, S = a.shape
        rows = min(ROWS_AT_ONCE, T)
        if buffer is None or buffer.shape != (B, H, rows, S):
            buffer = torch.empty(B, H, rows, S, dtype=torch.float32, device=a.device)
        sums = torch.empty(B, H, T, dtype=torch.float32, device=a.device)
        for r in range(0, T, rows):
            n = min(rows, T - r)
            sums[:, :, r:r + n] = buffer[:, :, :n].copy_(a[:, :, r:r + n]).sum(-1)
        yield sums


def allowed_keys(ids: Tensor, *, key_mask: Tensor | None = None, causal: bool = True,
                 attn_mask: Tensor | None = None) -> Tensor:
    """(B, T) ids -> (B, T, T) True where query q may attend to key k (the model's own masks)."""
    B, T = ids.shape
    allowed = torch.ones(B, T, T, dtype=torch.bool, device=ids.device)
    if key_mask is not None:
        allowed &= key_mask[:, None, :]  # (B, 1, T): padded keys
    if causal:
        allowed &= torch.ones(T, T, dtype=torch.bool, device=ids.device).tril()
    if attn_mask is not None:
        allowed &= normalize_mask(attn_mask.to(ids.device))[:, 0]  # (B|1, T, T) custom mask
    return allowed


def role_patterns(ids: Tensor, window: int = DEFAULT_WINDOW) -> dict[str, Tensor]:
    """(B, T) ids -> {role: (B, T, T) bool}, True where the role predicts that query q attends to key k."""
    B, T = ids.shape
    pos = torch.arange(T, device=ids.device)
    q, k = pos[:, None], pos[None, :]  # (T, 1), (1, T)
    same = ids[:, :, None] == ids[:, None, :]  # (B, T, T) token at q == token at k
    duplicate = same & (k < q)
    induction = torch.zeros_like(duplicate)
    induction[:, :, 1:] = duplicate[:, :, :-1]  # key k follows an earlier copy (at k-1) of the query's token
    one = torch.ones(B, T, T, dtype=torch.bool, device=ids.device)
    return {
        "previous": one & (k == q - 1),
        "duplicate": duplicate,
        "induction": induction,
        "first": one & (k == 0),
        "self": one & (k == q),
        "local": one & local_window_mask(T, window, ids.device),
    }


def _as_batch(ids: Tensor) -> Tensor:
    if ids.dim() == 1:
        return ids[None]
    if ids.dim() != 2:
        raise ValueError(f"ids must be (T,) or (B, T), got {tuple(ids.shape)}")
    return ids


def role_scores(attentions: Tensor | Sequence[Tensor], ids: Tensor, *, key_mask: Tensor | None = None,
                causal: bool = True, attn_mask: Tensor | None = None, window: int = DEFAULT_WINDOW,
                roles: Sequence[str] = ROLES) -> dict[str, Tensor]:
    """{role: (L, H)} scores in [0, 1] (NaN where the role is defined on no query), see the module doc.

    ``key_mask``, ``causal`` and ``attn_mask`` describe the masks the attention was computed with
    (padding, look-ahead, custom); they decide which keys a query could attend to.
    """
    unknown = [r for r in roles if r not in ROLES]
    if unknown:
        raise ValueError(f"unknown role(s) {unknown}; choose from {', '.join(ROLES)}")
    layers = layer_attentions(attentions)
    device = layers[0].device
    ids = _as_batch(ids).to(device)
    key_mask = None if key_mask is None else key_mask.to(device)
    B, H, T, _ = layers[0].shape
    if tuple(ids.shape) != (B, T) or layers[0].shape[-1] != T:
        raise ValueError(f"ids {tuple(ids.shape)} do not match attentions of {B} sequence(s) of {T} tokens "
                         f"(self-attention, (..., {T}, {T}))")
    allowed = allowed_keys(ids, key_mask=key_mask, causal=causal, attn_mask=attn_mask)  # (B, T, T)
    n_allowed = allowed.sum(-1)  # (B, T)
    real_query = torch.ones(B, T, dtype=torch.bool, device=ids.device) if key_mask is None else key_mask.bool()
    patterns = role_patterns(ids, window)
    counted, predicted_keys = [], []
    for role in roles:
        predicted = patterns[role] & allowed  # (B, T, T)
        n_predicted = predicted.sum(-1)  # (B, T)
        rows = real_query & (n_predicted > 0) & (n_predicted < n_allowed)  # (B, T) query rows that count
        counted.append(rows.float())
        predicted_keys.append(predicted & rows[..., None])
    counted_rows = torch.stack(counted, -1)  # (B, T, R)
    # The predicted keys are few (about T per role, and each pair of equal tokens): per sequence, their flat
    # query * T + key positions and a (N, R) one-hot of their role, so each layer is gathered there, not read whole.
    where, one_hot = [], []  # per sequence: (N,) flat positions, (N, R) their roles
    for b in range(B):
        found = [torch.nonzero(keys[b]) for keys in predicted_keys]  # per role (N_r, 2)
        role = torch.repeat_interleave(torch.arange(len(roles), device=device),
                                       torch.tensor([len(f) for f in found], device=device))
        at = torch.cat(found)
        where.append(at[:, 0] * T + at[:, 1])
        one_hot.append(torch.nn.functional.one_hot(role, len(roles)).float())
    total, on_role = [], []
    for a, sums in zip(layers, row_sums(layers)):  # one layer at a time
        total.append(sums @ counted_rows)  # (B, H, R) attention of the counted rows
        on_role.append(torch.stack([a[b].reshape(H, T * T).index_select(1, w).float() @ h  # (H, R) ... on their
                                    for b, (w, h) in enumerate(zip(where, one_hot))]))  # predicted keys
    total, on_role = torch.stack(total), torch.stack(on_role)  # (L, B, H, R)
    per_sequence = on_role / total.clamp_min(torch.finfo(total.dtype).tiny)
    defined = (total > 0).float()  # a sequence without counted rows (or with all-zero rows) has no score
    n_defined = defined.sum(1)  # (L, H, R)
    score = (per_sequence * defined).sum(1) / n_defined.clamp_min(1)  # (L, H, R) mean over sequences
    score = score.masked_fill(n_defined == 0, float("nan"))
    return {role: score[..., r] for r, role in enumerate(roles)}


def top_heads(scores: Tensor, k: int = 1, *, min_score: float = 0.0) -> list[tuple[int, int]]:
    """The k highest-scoring heads of an (L, H) role map as (layer, head), best first.

    Heads below ``min_score`` and NaN scores are left out, so the list may be shorter than k
    (the one-click "switch off the top heads of this role" then switches off only real candidates).
    """
    if scores.dim() != 2:
        raise ValueError(f"scores must be (L, H), got {tuple(scores.shape)}")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    flat = scores.flatten().float()
    keep = ~flat.isnan() & (flat >= min_score)
    order = sorted(torch.nonzero(keep).flatten().tolist(), key=lambda i: (-float(flat[i]), i))[:k]
    H = scores.shape[1]
    return [(i // H, i % H) for i in order]


def head_mask_without(heads: Sequence[tuple[int, int]], n_layers: int, n_heads: int) -> Tensor:
    """(L, H) head mask (1 = on) with the given (layer, head) pairs switched off: the ablation of a role."""
    mask = torch.ones(n_layers, n_heads)
    for layer, head in heads:
        if not (0 <= layer < n_layers and 0 <= head < n_heads):
            raise ValueError(f"head ({layer}, {head}) is outside {n_layers} layers x {n_heads} heads")
        mask[layer, head] = 0.0
    return mask


# ------------------------------------------------------------------------------------------ model runs
@torch.no_grad()
def head_roles(model: Transformer, ids: Tensor, tgt: Tensor | None = None, *, padding: bool = True,
               causal: bool = True, attn_mask: Tensor | None = None,
               window: int = DEFAULT_WINDOW) -> dict[str, dict[str, Tensor]]:
    """Run the model once on ``ids`` (a probe or typed text) and score every self-attention head.

    -> {"encoder" and/or "decoder": {role: (L, H)}}. Decoder-only and encoder models read ``ids``;
    an encoder-decoder reads ``ids`` as the source and ``tgt`` as the decoder input (without ``tgt``
    only its encoder is scored). The masks are the model's own: ``padding`` masks pad keys (and pad
    query rows are not scored), ``causal`` is the decoder's look-ahead mask, ``attn_mask`` (T, T) or
    (B, T, T) the custom mask of the first stack. Cross-attention has no roles (two sequences).
    Call it on a model in eval mode (dropout off); nothing is stored on the model.
    """
    arch = model.config.arch
    if tgt is not None and arch != "encoder-decoder":
        raise ValueError(f"a {arch} model reads one sequence: pass it as ids, without tgt")
    ids = _as_batch(ids).to(model.device)
    tgt = None if tgt is None else _as_batch(tgt).to(model.device)
    if arch == "encoder-decoder" and tgt is None:
        attn = {"encoder": (model.encode(ids, padding=padding, attn_mask=attn_mask).attentions, ids)}
    else:
        out = model(ids, tgt, padding=padding, causal=causal, attn_mask=attn_mask)
        attn = {"encoder": (out.attentions.encoder, ids),
                "decoder": (out.attentions.decoder, ids if tgt is None else tgt)}
    first_stack = "decoder" if arch == "decoder" else "encoder"
    pad_id = model.config.pad_id  # None for models without padding (GPT-2): every token is real
    return {kind: role_scores(layers, seq, key_mask=seq != pad_id if padding and pad_id is not None else None,
                              causal=causal and kind == "decoder",
                              attn_mask=attn_mask if kind == first_stack else None, window=window)
            for kind, (layers, seq) in attn.items() if layers}

"""Direct logit attribution: where one logit comes from, as an exact sum of what each head, each MLP and the
embeddings wrote into the residual stream at that position.

One forward pass with a Record (explorer.model.record) gives, at every layer, each head's output z before
W_o, each MLP's output and what each norm divided by. At the ONE chosen position, the residual stream is a
sum of parts: the embeddings, each head's z_h @ W_o^h (per query head, also under grouped-query attention),
each MLP's output, and `rest` (attention output biases, norm betas, the head's biases). Freezing every norm's
divisor at its value in that forward pass (TransformerLens's `apply_ln`) makes every norm linear:

    LayerNorm  p -> gamma * (p - mean(p)) / sigma      beta goes to rest
    RMSNorm    p -> gamma * p / rms

so each part is carried through every norm after it and then dotted with the token's unembedding column;
the shares add up to the model's own logit. Pre-norm stacks have one such norm (the final one); post-norm
layers (BERT, RoBERTa, DistilBERT, BART, Marian, seed 001 / 002) end each sublayer with one, so every part
goes through every later norm, and each norm's beta joins `rest` where it is added. GPT-NeoX's parallel
residual and cross-attention are more parts; T5's relative bias writes nothing into the residual stream,
its tied head scales by d_model ** -0.5 (Generator.scale). A head switched off (head mask 0) has z = 0, so
its share is exactly 0.

Heads on top of the stack:
- LM head (decoder-only, encoder-decoder): output_scale, then the unembedding (+ its bias, e.g. Marian's
  final_logits_bias, to rest).
- Masked-LM head (BERT, RoBERTa, DistilBERT): dense -> activation -> norm -> unembedding. The dense layer
  is linear (its bias to rest); the activation is frozen as a gate at the forward pass's value,
  act(h) = h * g with g = act(h) / h per unit (g = 0 where h == 0, where any finite g keeps the sum
  exact); the norm is frozen as above.
- Classifier (seed 001, first token only): fc1 (bias to rest), ReLU frozen as a 0/1 gate, final layer;
  `token` is the class.
A bare encoder (sentence embeddings) has no logit: ValueError.

Promoted / suppressed tokens of a head (LM Transparency Tool's view): the head's part, carried as above
(through the frozen norms without their betas, and the frozen MLM head), times the whole unembedding; one
(heads, D) @ (D, V) product for every head at once. Its value at a token is that head's DLA share of it.

Shapes: L layers, H (query) heads, T length, D model width, V vocabulary (classes for a classifier),
N = parts (1 embeddings + L*H heads [+ L*H cross heads] + L MLPs + 1 rest), k tokens.

    residual_parts(model, ids (T,)|(1, T), position, tgt, head_mask) -> ResidualParts: parts (N, D) float64
    direct_logit_attribution(...)    -> LogitAttribution: heads (L, H), cross (L, H) | None, mlps (L,), ...
    ResidualParts.all_head_tokens(k) -> {kind: HeadTokens of (L, H, k)}
    head_tokens(model, ids, kind, layer, head, k) -> HeadTokens of (k,)
    direction_tokens(model, ids, site, directions (n, D), k) -> HeadTokens of (n, k): the same for directions added
                                     to the residual stream at a site (an SAE latent's decoder row, a steering vector)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from ..model import Record, Transformer
from ..model.record import norm_scale
from .sequence import as_row, check_reading, check_token, resolve_position


@dataclass
class LogitAttribution:
    """Each part's share of one logit (or of a logit difference) at one position. `total()` == `logit`."""

    heads: Tensor  # (L, H) self-attention heads of the stack the head reads (decoder; encoder of a masked LM)
    cross: Tensor | None  # (L, H) cross-attention heads of an encoder-decoder, else None
    mlps: Tensor  # (L,)
    embeddings: float  # token + position (+ token type) embeddings (after an embedding norm, without its beta)
    rest: float  # every bias and norm beta: attention output biases, norm betas, dense / LM head biases
    logit: float  # the model's own logit (difference) at that position, same head mask
    token: int  # the token (class) attributed
    minus: int | None  # the token subtracted (logit difference mode), else None
    position: int  # the position read, counted from 0
    kind: str  # the self-attention kind of `heads`: "decoder" or "encoder"

    def total(self) -> float:
        """The sum of every part: equals `logit` up to float error."""
        cross = 0.0 if self.cross is None else float(self.cross.sum())
        return float(self.heads.sum()) + cross + float(self.mlps.sum()) + self.embeddings + self.rest


@dataclass
class HeadTokens:
    """The tokens a head's output promotes and suppresses most at one position: ids and their logit shares,
    best first. (k,) for one head; (L, H, k) for every head of a kind."""

    promoted_ids: Tensor
    promoted_logits: Tensor
    suppressed_ids: Tensor  # most negative first
    suppressed_logits: Tensor


class ResidualParts:
    """The residual stream at one position as parts carried up to the unembedding.

    parts (N, Du) float64 on the CPU, rows: 0 embeddings, then each kind's heads (layer-major), then the MLPs,
    last `rest`; Du is the unembedding's input width (D; a classifier's hidden width).
    unembedding (V, Du) and bias (V,) | None are the model's own (on its device); logits (V,) the model's own at
    that position (same head mask).
    """

    def __init__(self, parts: Tensor, rows: dict[str, slice], shapes: dict[str, tuple[int, int]], unembedding: Tensor,
                 bias: Tensor | None, logits: Tensor, position: int, kind: str):
        self.parts = parts
        self.rows = rows  # "embeddings", "decoder"/"encoder", "cross", "mlps", "rest" -> rows of `parts`
        self.shapes = shapes  # attention kind -> (L, H)
        self.unembedding = unembedding
        self.bias = bias
        self.logits = logits
        self.position = position
        self.kind = kind

    def check_token(self, token: Any, name: str = "token") -> int:
        return check_token(token, self.logits.shape[-1], name)

    @torch.no_grad()
    def attribute(self, token: int | None = None, minus: int | None = None) -> LogitAttribution:
        """Each part's share of logit[token] (None: the model's top token), or of logit[token] - logit[minus]."""
        token = int(self.logits.argmax()) if token is None else self.check_token(token)
        minus = None if minus is None else self.check_token(minus, "minus")
        direction = self.unembedding[token].double().cpu()  # (Du,)
        logit = float(self.logits[token])  # Python floats: float64 on any device
        offset = 0.0 if self.bias is None else float(self.bias[token])
        if minus is not None:
            direction = direction - self.unembedding[minus].double().cpu()
            logit -= float(self.logits[minus])
            offset -= 0.0 if self.bias is None else float(self.bias[minus])
        shares = self.parts @ direction  # (N,)
        heads = {kind: shares[self.rows[kind]].view(*self.shapes[kind]).float()  # (L*H,) -> (L, H)
                 for kind in self.shapes}
        return LogitAttribution(
            heads=heads[self.kind], cross=heads.get("cross"), mlps=shares[self.rows["mlps"]].float(),
            embeddings=float(shares[self.rows["embeddings"]].sum()),
            rest=float(shares[self.rows["rest"]].sum()) + offset, logit=logit, token=token, minus=minus,
            position=self.position, kind=self.kind)

    def head_rows(self, kind: str) -> slice:
        if kind not in self.shapes:
            direct = ", ".join(self.shapes)
            why = (" (an encoder's heads reach an encoder-decoder's logits only through cross-attention)"
                   if kind == "encoder" else "")
            raise ValueError(f"no direct logit attribution for {kind!r} heads{why}; heads here: {direct}")
        return self.rows[kind]

    @torch.no_grad()
    def all_head_tokens(self, k: int = 10) -> dict[str, HeadTokens]:
        """Every head's promoted and suppressed tokens: kind -> HeadTokens of (L, H, k). One (heads, Du) @ (Du, V)
        product for all kinds together."""
        kinds = list(self.shapes)
        rows = torch.cat([self.parts[self.rows[kind]] for kind in kinds])  # (n heads, Du)
        logits = self._token_logits(rows)  # (n heads, V)
        k = min(self._check_k(k), logits.shape[-1])
        top, bottom = logits.topk(k, dim=-1), logits.topk(k, dim=-1, largest=False)
        out, start = {}, 0
        for kind in kinds:
            L, H = self.shapes[kind]
            part = slice(start, start + L * H)
            start += L * H
            out[kind] = HeadTokens(*(t[part].reshape(L, H, k) for t in  # (L*H, k) -> (L, H, k)
                                     (top.indices, top.values, bottom.indices, bottom.values)))
        return out

    @torch.no_grad()
    def head_tokens(self, kind: str, layer: int, head: int, k: int = 10) -> HeadTokens:
        """One head's promoted and suppressed tokens, (k,) each."""
        rows = self.head_rows(kind)
        L, H = self.shapes[kind]
        if not (0 <= layer < L and 0 <= head < H):
            raise ValueError(f"({kind}, layer {layer}, head {head}) is not a head of this model: layers 0..{L - 1}, "
                             f"heads 0..{H - 1}")
        row = self.parts[rows.start + layer * H + head][None]  # (1, Du)
        logits = self._token_logits(row)[0]  # (V,)
        k = min(self._check_k(k), logits.shape[-1])
        top, bottom = logits.topk(k), logits.topk(k, largest=False)
        return HeadTokens(top.indices, top.values, bottom.indices, bottom.values)

    @staticmethod
    def _check_k(k: Any) -> int:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive number of tokens, got {k!r}")
        return k

    def _token_logits(self, rows: Tensor) -> Tensor:
        """(n, Du) parts -> (n, V) their shares of every token's logit, in the model's dtype on its device.
        Computed as (V, Du) @ (Du, n), then transposed: on CPU BLAS this is ~20% faster than (n, Du) @ (Du, V)."""
        rows = rows.to(device=self.unembedding.device, dtype=self.unembedding.dtype)
        return (self.unembedding @ rows.T).T.contiguous()  # (V, n) -> (n, V)


# ----------------------------------------------------------------------------------------------- the walk
class _Parts:
    """The (N, D) parts at one position while the walk carries them up through the stack."""

    def __init__(self, rows: dict[str, slice], n: int, width: int):
        self.rows = rows
        self.p = torch.zeros(n, width, dtype=torch.float64)
        self.rest = rows["rest"].start

    def add(self, name: str, value: Tensor) -> None:
        self.p[self.rows[name]] += value.detach().double().cpu()

    def add_rest(self, value: Tensor | None) -> None:
        if value is not None:
            self.p[self.rest] += value.detach().double().cpu()

    def norm(self, norm: nn.Module, scale: Tensor) -> None:
        """Carry every part through `norm` with its divisor frozen at `scale`; its beta joins rest."""
        scale = float(scale)
        if isinstance(norm, nn.LayerNorm):
            self.p -= self.p.mean(-1, keepdim=True)
        elif not isinstance(norm, nn.RMSNorm):
            raise TypeError(f"cannot freeze a {type(norm).__name__}")
        self.p /= scale
        if norm.weight is not None:
            self.p *= norm.weight.detach().double().cpu()
        self.add_rest(getattr(norm, "bias", None))

    def linear(self, layer: nn.Linear) -> None:
        """Every part through a linear layer (weight only); its bias joins rest."""
        self.p = self.p @ layer.weight.detach().double().cpu().T  # (N, D) -> (N, out)
        self.add_rest(layer.bias)

    def gate(self, pre: Tensor, post: Tensor) -> None:
        """An activation frozen as post = pre * g: every part times g (g = 0 where pre == 0)."""
        pre, post = pre.detach().double().cpu(), post.detach().double().cpu()
        self.p *= torch.where(pre != 0, post / torch.where(pre != 0, pre, 1.0), 0.0)


def _head_out(attention, z: Tensor) -> Tensor:
    """z (H, Dh) of one position -> (H, D): what each head writes, z_h @ W_o^h.T."""
    H, Dh = z.shape
    weight = attention.out_proj.weight  # (D, H*Dh)
    return torch.einsum("hd,ehd->he", z.to(weight.dtype), weight.view(-1, H, Dh))  # (D, H*Dh) -> (D, H, Dh)


def _walk_stack(model: Transformer, stack, embed, record: Record, t: int, parts: _Parts) -> None:
    """Carry every part of `stack` (its embeddings, heads, cross heads, MLPs) up to its output at position t."""
    kind = stack.kind
    parts.add("embeddings", record[f"{kind}.embed"][0, t])
    if embed.norm is not None and getattr(embed.norm, "bias", None) is not None:
        parts.add("embeddings", -embed.norm.bias)  # the embedding norm's beta is rest, not embeddings
        parts.add_rest(embed.norm.bias)
    H = model.config.n_heads
    post = not model.config.norm_first
    for i, layer in enumerate(stack.layers):
        rows = parts.rows[kind]
        heads = slice(rows.start + i * H, rows.start + (i + 1) * H)
        parts.p[heads] += _head_out(layer.self_attn, record[f"{kind}.{i}.z"][0, :, t]).double().cpu()
        parts.add_rest(layer.self_attn.out_proj.bias)
        sublayer = layer.attn_sublayer if kind == "encoder" else layer.self_sublayer
        if post:
            parts.norm(sublayer.norm, record[f"{kind}.{i}.scale"][0, t])
        if getattr(layer, "cross_attn", None) is not None:
            rows = parts.rows["cross"]
            heads = slice(rows.start + i * H, rows.start + (i + 1) * H)
            parts.p[heads] += _head_out(layer.cross_attn, record[f"cross.{i}.z"][0, :, t]).double().cpu()
            parts.add_rest(layer.cross_attn.out_proj.bias)
            if post:
                parts.norm(layer.cross_sublayer.norm, record[f"cross.{i}.scale"][0, t])
        mlps = parts.rows["mlps"]
        parts.p[mlps.start + i] += record[f"{kind}.{i}.mlp"][0, t].double().cpu()
        if post:  # parallel residual is pre-norm only (validated): its two sublayers simply add
            parts.norm(layer.ff_sublayer.norm, record[f"{kind}.{i}.mlp.scale"][0, t])
    if stack.norm is not None:
        parts.norm(stack.norm, record[f"{kind}.final.scale"][0, t])


def recorded_run(model: Transformer, ids: Tensor, tgt: Tensor | None, head_mask: Mapping[str, Any] | None,
                 record: Record, what: str, resid_hook=None) -> tuple[Tensor, Tensor]:
    """One forward pass filling `record` (without the LM head) -> (the sequence whose logits are read (1, T), the
    output (1, T, D) of the stack the head reads, after its final norm). `what` names the analysis in messages;
    `resid_hook` goes to the model (to read the residual stream in the same pass)."""
    arch = model.config.arch
    check_reading(model, what, tgt, "logit to attribute")
    device = model.device
    ids = as_row(ids, "ids").to(device)
    masks = model.head_masks(head_mask)
    run = dict(need_weights=False, record=record, resid_hook=resid_hook)
    if arch == "decoder":
        return ids, model.decode(ids, head_mask=masks.get("decoder"), **run).output
    enc = model.encode(ids, head_mask=masks.get("encoder"), **run)
    if arch == "encoder":
        return ids, enc.memory
    seq = as_row(tgt, "tgt").to(device)
    out = model.decode(seq, enc.memory, enc.key_mask, head_mask=masks.get("decoder"),
                       cross_head_mask=masks.get("cross"), key_mask=model.target_key_mask(seq, True), **run).output
    return seq, out


def _through_head(model: Transformer, parts: _Parts, out: Tensor, t: int) -> tuple[Tensor, nn.Linear]:
    """Carry the parts through the head on top of the stack (frozen at position t of `out` (1, T, D)) -> (the model's
    own logits there (V,), the linear layer whose rows are the tokens' (classes') directions)."""
    x = out[0, t]  # (D,) the stack's output at the position, after its final norm
    if model.generator is not None:
        parts.p *= model.generator.scale
        return model.generator.logits(x), model.generator.proj  # (V,)
    if model.mlm is not None:
        mlm = model.mlm
        hidden = mlm.dense(x)  # (D,)
        active = mlm.activation(hidden)
        parts.linear(mlm.dense)
        parts.gate(hidden, active)
        parts.norm(mlm.norm, norm_scale(mlm.norm, active))
        return mlm(x), mlm.proj  # (V,)
    classifier = model.classifier
    hidden = classifier.fc1(x)  # (hidden,)
    parts.linear(classifier.fc1)
    parts.gate(hidden, torch.relu(hidden))
    return classifier(out[:, :1])[0], classifier.final  # (C,): the classifier reads token 0


@torch.no_grad()
def residual_parts(model: Transformer, ids: Tensor, *, position: int = -1, tgt: Tensor | None = None,
                   head_mask: Mapping[str, Any] | None = None) -> ResidualParts:
    """One forward pass with a record, then the parts at `position` carried up to the unembedding.

    ids: the sequence (decoder-only, encoders) or the source (encoder-decoders, with `tgt` the decoder input;
    `position` then counts in tgt). head_mask: as the model's forward takes it ({kind: (L, H)}, 1 = on)."""
    config, arch = model.config, model.config.arch
    record = Record()
    seq, out = recorded_run(model, ids, tgt, head_mask, record, "direct logit attribution")
    t = resolve_position(position, seq.shape[1])
    if model.classifier is not None and t != 0:
        raise ValueError(f"a classifier reads the first token only: pass position=0 (got {position})")
    kind = "encoder" if arch == "encoder" else "decoder"
    L = config.encoder_layers if kind == "encoder" else config.decoder_layers
    shapes = {kind: (L, config.n_heads)}
    if arch == "encoder-decoder":
        shapes["cross"] = (L, config.n_heads)
    rows, start = {"embeddings": slice(0, 1)}, 1
    for name, (layers, heads) in shapes.items():
        rows[name], start = slice(start, start + layers * heads), start + layers * heads
    rows["mlps"], start = slice(start, start + L), start + L
    rows["rest"] = slice(start, start + 1)
    parts = _Parts(rows, start + 1, config.d_model)
    stack, embed = (model.encoder, model.src_embed) if kind == "encoder" else (model.decoder, model.tgt_embed)
    _walk_stack(model, stack, embed, record, t, parts)
    logits, unembedding = _through_head(model, parts, out, t)
    return ResidualParts(parts.p, rows, shapes, unembedding.weight, unembedding.bias, logits.float(), t, kind)


def direct_logit_attribution(model: Transformer, ids: Tensor, *, position: int = -1, token: int | None = None,
                             tgt: Tensor | None = None, head_mask: Mapping[str, Any] | None = None,
                             minus: int | None = None) -> LogitAttribution:
    """Each head's, MLP's, the embeddings' and the biases' share of the logit of `token` (None: the model's top
    token) at `position`; with `minus`, of logit[token] - logit[minus]. See the module docstring."""
    return residual_parts(model, ids, position=position, tgt=tgt, head_mask=head_mask).attribute(token, minus)


def head_tokens(model: Transformer, ids: Tensor, kind: str, layer: int, head: int, *, position: int = -1,
                tgt: Tensor | None = None, head_mask: Mapping[str, Any] | None = None, k: int = 10) -> HeadTokens:
    """The k tokens head (kind, layer, head)'s output at `position` promotes most, and the k it suppresses most."""
    parts = residual_parts(model, ids, position=position, tgt=tgt, head_mask=head_mask)
    return parts.head_tokens(kind, layer, head, k)


# ----------------------------------------------------------------------------------------------- a direction
SITE_ORDER = {"resid_pre": 0, "resid_mid": 1, "resid_mid_cross": 2, "resid_post": 3}


def _walk_from_site(model: Transformer, stack, record: Record, t: int, layer: int, point: str, parts: _Parts) -> None:
    """Carry parts added to the residual stream at (layer, point) through every norm after it (post-norm layers end
    each sublayer with one: resid_mid is followed by the attention sublayer's norm, resid_mid_cross by the cross one,
    resid_post by the feed-forward one) and the stack's final norm, each frozen at position t."""
    kind = stack.kind
    if not model.config.norm_first:
        for i in range(layer, len(stack.layers)):
            block = stack.layers[i]
            sublayer = block.attn_sublayer if kind == "encoder" else block.self_sublayer
            norms = [("resid_mid", sublayer.norm, f"{kind}.{i}.scale")]
            if getattr(block, "cross_attn", None) is not None:
                norms.append(("resid_mid_cross", block.cross_sublayer.norm, f"cross.{i}.scale"))
            norms.append(("resid_post", block.ff_sublayer.norm, f"{kind}.{i}.mlp.scale"))
            for after, norm, scale in norms:
                if i > layer or SITE_ORDER[after] >= SITE_ORDER[point]:
                    parts.norm(norm, record[scale][0, t])
    if stack.norm is not None:
        parts.norm(stack.norm, record[f"{kind}.final.scale"][0, t])


def check_direct_site(model: Transformer, site: str) -> tuple[int, str]:
    """(layer, point) of a resid_hook site whose stack reaches the logits directly; ValueError otherwise."""
    stack_kind, layer, point = site.split(".")
    reads = "encoder" if model.config.arch == "encoder" else "decoder"
    if stack_kind != reads:
        why = " (an encoder's output reaches an encoder-decoder's logits only through cross-attention)" \
            if stack_kind == "encoder" else ""
        raise ValueError(f"site {site!r}: no direct path to the logits from the {stack_kind}{why}")
    if point not in SITE_ORDER:
        raise ValueError(f"site {site!r} is not a residual-stream site ({', '.join(SITE_ORDER)})")
    return int(layer), point


@torch.no_grad()
def tokens_of_directions(model: Transformer, record: Record, out: Tensor, length: int, site: str, directions: Tensor,
                         position: int = -1, k: int = 10) -> HeadTokens:
    """direction_tokens from a run already made (recorded_run with a Record of at least the norms' "scale" and
    "mlp.scale", its output `out` (1, T, D) and sequence length)."""
    layer, point = check_direct_site(model, site)
    single = directions.dim() == 1
    rows = directions.detach().double().cpu().reshape(-1, model.config.d_model)  # (n, D)
    t = resolve_position(position, length)
    if model.classifier is not None and t != 0:
        raise ValueError(f"a classifier reads the first token only: pass position=0 (got {position})")
    n = rows.shape[0]
    parts = _Parts({"rest": slice(n, n + 1)}, n + 1, model.config.d_model)
    parts.p[:n] = rows
    stack = model.encoder if model.config.arch == "encoder" else model.decoder
    _walk_from_site(model, stack, record, t, layer, point, parts)
    _, unembedding = _through_head(model, parts, out, t)
    weight = unembedding.weight  # (V, Du)
    logits = (weight @ parts.p[:n].to(device=weight.device, dtype=weight.dtype).T).T  # (V, n) -> (n, V)
    k = min(ResidualParts._check_k(k), logits.shape[-1])
    top, bottom = logits.topk(k, dim=-1), logits.topk(k, dim=-1, largest=False)
    pick = (lambda v: v[0]) if single else (lambda v: v)
    return HeadTokens(pick(top.indices), pick(top.values), pick(bottom.indices), pick(bottom.values))


@torch.no_grad()
def direction_tokens(model: Transformer, ids: Tensor, site: str, directions: Tensor, *, position: int = -1,
                     tgt: Tensor | None = None, head_mask: Mapping[str, Any] | None = None, k: int = 10) -> HeadTokens:
    """The tokens that residual-stream directions (n, D) | (D,) added at `site` ("{stack}.{layer}.{point}", the model's
    resid_hook sites) promote and suppress most through the direct path at `position`: each direction carried through
    every norm after the site (frozen at that position, betas left out) and the head, times the unembedding, as a
    head's tokens are. The values are the logit change adding the direction there makes through that path (an SAE
    latent's decoder row: explorer.interpret.sae.latent_tokens). -> HeadTokens of (n, k) ((k,) for one direction)."""
    check_direct_site(model, site)
    record = Record(only={"scale", "mlp.scale"})
    seq, out = recorded_run(model, ids, tgt, head_mask, record, "a direction's tokens")
    return tokens_of_directions(model, record, out, seq.shape[1], site, directions, position, k)

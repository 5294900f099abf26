"""How one head computes, on the page's own Run (the "Inside a head" tab and /head_computation): the chosen block of
the chosen sentence read exactly as the page's Run reads it, without and with the page's toggles, kept so that a
click on another query or head of the same block costs about a millisecond.

What the Run reads (explorer.app.run.model_run): both sentences padded into one batch (the chosen sentence is one
row, padded to the longer one: its padding keys are blocked by the padding mask, or seen without it); a sequence
model's decoder reads "[start] + the baseline's greedy answer" (its end token included), and the toggled run reads
the same tokens; a language model reads the sentences as typed; the custom mask covers the first stack's
self-attention. Each run is `explorer.interpret.capture_block` on that row: the model up to the block, nothing above.

Shapes: T query length and S key length of the chosen kind (the padded row), H heads, Dh head width.

    read_block(loaded, BlockRequest, max_tokens) -> BlockRead    (runs the model; through app.serving.compute.call)
    from_shown(loaded, session, BlockRequest, shown, store) -> BlockRead | None   the block the page's last Run captured
    BlockRead.query(position) -> int      a query position checked (negative: from the end of the sentence's tokens)
    BlockRead.computation(head, query) -> (baseline, toggled | None) HeadComputations (no model run)
    BlockRead.lines(heads, measure) -> (H', T, S) weights or weight x |value written| of the toggled run
    computation_json(comp) -> dict: every field as JSON (lists; -inf as None)
    key_table(...): the tab's table of the strongest keys (its words: head.summary)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch

from ....batching import pad_rows
from ....checkpoints import LoadedModel
from ....interpret import BlockCapture, HeadComputation, QueryKeyMap, capture_block, query_key_map
from ....interpret.head_computation import check_block, toggle_changes
from ....viz.head_computation import shown_keys
from ...run.captures import RunBlock
from ...run.inputs import answer_length, codec_for, encode_inputs, pad_id_of, row_mask
from ...run.model_run import answer, generate_rows, is_language_model, padded_labels, takes_length
from ...run.toggles import Toggles, custom_mask, head_mask
from ...run.view import default_kind
from ...serving.errors import AppError
from ...serving.kept import Shown

LINES_DEFAULT = 4  # heads drawn as lines when none are chosen: the chosen head and the next ones of its layer
LINES_MAX = 8  # colours a colour-blind reader can tell apart (explorer.viz.head_view.PALETTE)
TOP_ROWS = 12  # keys in the table (the strongest); /head_computation's JSON has every key


@dataclass(frozen=True)
class BlockRequest:
    """What a block's captures depend on: the page's sentences, toggles, the attention shown and the sentence."""

    text1: str
    text2: str
    toggles: Toggles
    kind: str  # "" = the model's default kind
    layer: int
    sentence: int  # 1 or 2
    new_tokens: int  # the page's "continue / generate at most" (a Hub encoder-decoder's answer length)


@dataclass
class BlockRead:
    """One block of one sentence as the page's Run computed it, without and with the toggles (CPU tensors)."""

    request: BlockRequest
    kind: str
    layer: int
    baseline: BlockCapture
    toggled: BlockCapture | None  # None: nothing toggled (the baseline is what the page shows)
    changes: tuple[str, ...]  # what the toggles change, e.g. ("causal mask off", "decoder L0 H1 off")
    query_labels: list[str]  # (T,) the page's labels of the row ([PAD] where padded)
    key_labels: list[str]  # (S,)
    real_queries: int  # the sentence's own query tokens (the rest of the row is padding)
    notices: list[str] = field(default_factory=list)
    maps: dict[int, QueryKeyMap] = field(default_factory=dict, repr=False)  # the last head's query-key map: a click
    # on another query of the same head redraws the picture without computing it again (its PCA is most of a click)

    @property
    def shown(self) -> BlockCapture:
        """The capture of the model as switched (what the Attention tab's "with toggles" heatmap shows)."""
        return self.toggled if self.toggled is not None else self.baseline

    @property
    def n_heads(self) -> int:
        return self.baseline.n_heads

    def query(self, position: Any) -> int:
        """A query position of the row: 0.. from the start, negative from the end of the sentence's own tokens."""
        T, real = self.baseline.n_queries, self.real_queries
        try:
            p = int(position)
        except (TypeError, ValueError):
            raise AppError(f"the query position must be a whole number, got {str(position)[:20]!r}") from None
        if not -real <= p < T:
            pad = f" (with {T - real} padding positions after them)" if T > real else ""
            raise AppError(f"query position {p} is outside the {real} query tokens of sentence "
                           f"{self.request.sentence}{pad}: use 0..{T - 1}, or -{real}..-1 from its last token")
        return p + real if p < 0 else p

    def head(self, head: Any) -> int:
        try:
            return self.baseline.check_head(int(head))
        except (TypeError, ValueError) as err:
            raise AppError(str(err) if isinstance(err, ValueError) and "outside" in str(err) else
                           f"the head must be a whole number, got {str(head)[:20]!r}") from None

    def computation(self, head: Any, query: Any) -> tuple[HeadComputation, HeadComputation | None]:
        """Head `head` at query `query`: the baseline's computation and the toggled run's (None: nothing toggled)."""
        h, i = self.head(head), self.query(query)
        return self.baseline.head(h, i), None if self.toggled is None else self.toggled.head(h, i)

    def query_key(self, head: int) -> QueryKeyMap:
        """The toggled run's query-key map of `head` (explorer.interpret.query_key), kept for the last head asked."""
        if head not in self.maps:
            self.maps.clear()
            self.maps[head] = query_key_map(self.shown, head)
        return self.maps[head]

    def lines(self, heads: tuple[int, ...], measure: str) -> np.ndarray:
        """(len(heads), T, S) the toggled run's weights of `heads`, or weight x |value written| ("values")."""
        cap, Dh = self.shown, self.baseline.head_dim
        out = []
        for h in heads:
            w = cap.weights(h)  # (T, S)
            if measure == "values":  # each key's |v_j W_O^h|, the length of what it writes through head h
                w = w * (cap.v[cap.kv_head(h)] @ cap.out_weight[:, h * Dh:(h + 1) * Dh].T).norm(dim=-1)
            out.append(w.float().numpy())
        return np.stack(out)


def lines_heads(chosen: Any, head: int, n_heads: int) -> tuple[int, ...]:
    """The heads drawn as lines: those chosen (head numbers, at most LINES_MAX), or the chosen head and the next
    ones of its layer."""
    if isinstance(chosen, str):
        chosen = [part for part in chosen.replace(",", " ").split() if part]
    try:
        picked = list(dict.fromkeys(int(h) for h in chosen or ()))
    except (TypeError, ValueError):
        raise AppError(f"the heads drawn as lines must be head numbers, got {str(chosen)[:40]!r}") from None
    bad = [h for h in picked if not 0 <= h < n_heads]
    if bad:
        raise AppError(f"head {bad[0]} is not a head of this layer (0..{n_heads - 1})")
    if len(picked) > LINES_MAX:
        raise AppError(f"at most {LINES_MAX} heads are drawn as lines at once; {len(picked)} were chosen")
    if picked:
        return tuple(sorted(picked))
    return tuple(sorted({(head + k) % n_heads for k in range(min(LINES_DEFAULT, n_heads))}))


def _rows(loaded: LoadedModel, request: BlockRequest, max_tokens: int):
    """The Run's batch: (src (B, S), tgt (B, T) | None, key masks, labels per kind, rows per kind, notices)."""
    codec = codec_for(loaded)
    inputs = encode_inputs(loaded, codec, request.text1, request.text2, max_tokens)
    device = loaded.model.device
    src_rows, labels = inputs.rows, inputs.padded_labels()
    if loaded.arch == "encoder" or is_language_model(loaded):
        return inputs, pad_rows(src_rows, pad_id_of(loaded), device), None, {"encoder": labels, "decoder": labels}, \
            {"encoder": src_rows, "decoder": src_rows}
    length = max(1, min(request.new_tokens, answer_length(loaded))) if takes_length(loaded) else None
    teacher = [answer(loaded, codec, g, b).ids for g, b in generate_rows(loaded, inputs, Toggles(), None, length)]
    if loaded.arch == "decoder":  # a decoder-only sequence model reads prompt + answer
        seqs = [[*r, *t] for r, t in zip(src_rows, teacher)]
        labels = padded_labels(codec, seqs, inputs.labels)
        return inputs, pad_rows(seqs, pad_id_of(loaded), device), None, {"decoder": labels}, {"decoder": seqs}
    bos = loaded.task.get("bos_id", loaded.target_tokenizer.bos_id)
    if bos is None:
        raise AppError("this model's task names no start token (bos_id): its decoder cannot be read")
    dec_rows = [[bos, *t] for t in teacher]
    tgt_labels = padded_labels(codec, dec_rows)
    return inputs, pad_rows(src_rows, pad_id_of(loaded), device), pad_rows(dec_rows, pad_id_of(loaded), device), \
        {"encoder": labels, "decoder": tgt_labels, "cross": tgt_labels}, {"encoder": src_rows, "decoder": dec_rows}


@torch.inference_mode()
def read_block(loaded: LoadedModel, request: BlockRequest, max_tokens: int) -> BlockRead:
    """The chosen block of the chosen sentence, without and with the toggles (see the module docstring)."""
    model = loaded.model
    kinds = loaded.config.attention_kinds()
    try:
        kind, layer = check_block(model, request.kind or default_kind(kinds), request.layer)
    except ValueError as err:
        raise AppError(str(err)) from None
    inputs, src, tgt, labels, rows = _rows(loaded, request, max_tokens)
    if request.sentence not in range(1, src.shape[0] + 1):
        raise AppError(f"sentence {request.sentence} is not one of the {src.shape[0]} sentences typed")
    b = request.sentence - 1
    src_mask = row_mask(rows["encoder" if tgt is not None else next(iter(rows))], model.device)
    tgt_mask = None if tgt is None else row_mask(rows["decoder"], model.device)
    ids = src[b:b + 1]  # (1, S) the chosen row, padded as in the Run's batch
    one = dict(tgt=None if tgt is None else tgt[b:b + 1], key_mask=src_mask[b:b + 1],
               tgt_key_mask=None if tgt_mask is None else tgt_mask[b:b + 1])
    baseline = capture_block(model, ids, kind, layer, **one)
    toggles = request.toggles
    attn_mask, notice = custom_mask(toggles, src.shape[1], model.device)
    heads = head_mask(loaded.config, toggles)
    changes = toggle_changes(model, toggles.padding, toggles.causal, attn_mask, heads)
    toggled = None
    if changes:
        toggled = capture_block(model, ids, kind, layer, padding=toggles.padding, causal=toggles.causal,
                                attn_mask=attn_mask, head_mask=heads, **one)
    query_seq = "encoder" if kind == "encoder" else "decoder"
    key_labels = labels[query_seq if kind != "cross" else "encoder"][b]
    return BlockRead(request, kind, layer, baseline, toggled, changes, labels[query_seq][b], key_labels,
                     len(rows[query_seq][b]), inputs.notices + ([notice] if notice and toggled is not None else []))


def from_run(loaded: LoadedModel, session: Any, request: BlockRequest, run: Any, block: RunBlock | None
             ) -> BlockRead | None:
    """The block a Run of `session` (its RunRequest `run`) captured (run.captures), when it is the one asked for: the
    same model, sentences, toggles, kind, layer and sentence, and for a sequence model (whose decoder reads the
    baseline's greedy answer) a greedy Run of the same length; else None."""
    if block is None or run is None or getattr(run.session, "key", None) != session.key:
        return None
    kind = request.kind or default_kind(loaded.config.attention_kinds())
    same = ((run.text1, run.text2, run.toggles, block.kind, block.layer, block.sentence)
            == (request.text1, request.text2, request.toggles, kind, request.layer, request.sentence))
    if loaded.arch != "encoder" and not is_language_model(loaded):
        same = same and run.sampling is None and (not takes_length(loaded) or run.new_tokens == request.new_tokens)
    if same and block.read is None:  # made once: it keeps the last head's query-key map
        block.read = BlockRead(request, block.kind, block.layer, block.baseline, block.toggled, block.changes,
                               block.query_labels, block.key_labels, block.real_queries, list(block.notices))
    return block.read if same else None


def from_shown(loaded: LoadedModel, session: Any, request: BlockRequest, shown: Any, store: Any) -> BlockRead | None:
    """`from_run` on the page's last Run (`shown`: its kept.Shown; None for an API client), if its result is kept."""
    analysis = shown.result(store) if isinstance(shown, Shown) else None
    return None if analysis is None else from_run(loaded, session, request, shown.request, analysis.block)


def _plain(value: Any) -> Any:
    """numpy -> JSON: lists of floats and ints, -inf (a blocked key's score) as None."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            return np.where(np.isfinite(value), value, None).tolist() if not np.isfinite(value).all() else \
                value.tolist()
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return list(value)
    return value


def computation_json(comp: HeadComputation | None) -> dict[str, Any] | None:
    """Every field of a HeadComputation as JSON-able data (numpy arrays as lists; -inf as None)."""
    if comp is None:
        return None
    return {name: _plain(value) for name, value in vars(comp).items()}


def key_table(read: BlockRead, base: Any, toggled: Any, labels: Any = None) -> pd.DataFrame:
    """The strongest keys: position, token (`labels`: the figures' unique labels, "0·2" for a second "0"), why
    blocked, q·k, score, weight (and with the toggles), |v W_O|; a blocked key has no q·k or score ("—")."""
    labels = read.key_labels if labels is None else labels

    def shown(r: Any, values: Any, j: int) -> Any:
        return "—" if r.blocked_by[j] else round(float(values[j]), 4)  # no score: the softmax reads −∞

    rows = []
    for j in sorted(shown_keys(base, toggled, TOP_ROWS).tolist(), key=lambda j: -base.weights[j]):
        row = [j, labels[j], base.blocked_by[j] or "", shown(base, base.dots, j), shown(base, base.scores, j),
               round(float(base.weights[j]), 4)]
        if toggled is not None:
            row += [toggled.blocked_by[j] or "", shown(toggled, toggled.scores, j), round(float(toggled.weights[j]), 4)]
        rows.append(row + [round(float(base.value_norms[j]), 4)])
    headers = ["key", "token", "blocked", "q·k", "score", "weight"]
    if toggled is not None:
        headers += ["blocked (toggled)", "score (toggled)", "weight (toggled)"]
    return pd.DataFrame(rows, columns=headers + ["|v W_O|"])

"""The induction task: random tokens in which a span repeats, so a small decoder learns to copy.

Vocabulary: numbered tokens ``t0 .. t{N-1}`` (word-level, whitespace-separated, case-insensitive)
after the specials [PAD]=0, [UNK], [BOS], [EOS]; typed text gets [BOS] first. A training row is
``[BOS]`` + random tokens + a random span of ``SPAN_RANGE`` tokens repeated until the row is full.
In half of the rows the first copy starts within 8 tokens of [BOS] (many repeated tokens: the
circuit forms sooner); in the other half anywhere that leaves room for a whole second copy (so the
previous-token head is needed at every position, not only near the start). The first copy of a
span cannot be predicted; every later token can, by finding the earlier copy of the current token and reading the token after it. A two-layer model
learns this with the classic circuit: a previous-token head in layer 0 and an induction head in
layer 1 (Olsson et al., 2022, "In-context Learning and Induction Heads").

Evaluation uses the app's probe (explorer.interpret.probe): fresh rows of ``[BOS]`` + 20 distinct
random tokens + the same 20 again, drawn with a fixed seed; head roles, copy losses, and the copy
losses with the induction (or previous-token) heads switched off.

Shapes: B batch, T row length (``seq_len``, [BOS] included), L layers, H heads.

    task.training_batch(B, generator) -> Batch(src (B, T-1), None, labels (B, T-1))
    evaluate(model, task) -> InductionReport (role scores (L, H), copy losses, ablations)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import models, normalizers, pre_tokenizers, processors

from ..interpret.probe import CopyLosses, copy_losses, probe_vocabulary, repeated_tokens
from ..interpret.roles import head_mask_without, head_roles, top_heads
from ..model import Transformer
from .tasks import Batch
from ..tokenizer import Tokenizer

NAME = "induction"
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[BOS]", "[EOS]")  # ids 0..3; [PAD] = 0 = config.pad_id
N_TOKENS = 300  # ordinary tokens t0 .. t299
SPAN_RANGE = (4, 30)  # lengths of the repeated spans in training rows (inclusive)
EARLY_SHARE, EARLY_PREFIX = 0.5, 8  # this share of rows starts the first copy within EARLY_PREFIX tokens of [BOS]
EVAL_SEED, EVAL_ROWS, EVAL_SPAN = 20_251_123, 100, 20  # the fixed probe of the card and the tests
ROLE_THRESHOLD = 0.5  # a head with at least this induction score counts as an induction head


def build_tokenizer(n_tokens: int = N_TOKENS) -> Tokenizer:
    """Word-level tokenizer over ``t0 .. t{n-1}``; ids = specials, then t0 = 4, t1 = 5, ..."""
    vocab = {tok: i for i, tok in enumerate([*SPECIAL_TOKENS, *(f"t{i}" for i in range(n_tokens))])}
    tk = HFTokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tk.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Lowercase()])
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    # no decoder: tokenizers joins decoded tokens with single spaces, which is this vocabulary's text
    tk.post_processor = processors.TemplateProcessing(single="[BOS] $A", special_tokens=[("[BOS]", vocab["[BOS]"])])
    tk.add_special_tokens(list(SPECIAL_TOKENS))
    return Tokenizer(tk)


def example_texts(tokenizer: Tokenizer) -> list[str]:
    """Texts for the app: spans repeated (the induction stripe), and one without a repeat to compare."""
    def words(ids: torch.Tensor) -> str:
        return " ".join(tokenizer.id_to_token(int(i)) for i in ids)

    return [words(repeated_tokens(tokenizer, span=12, repeats=2, seed=1, prefix=[]).ids[0]),
            words(repeated_tokens(tokenizer, span=8, repeats=3, seed=2, prefix=[]).ids[0]),
            " ".join(f"t{i}" for i in (1, 2, 3, 4, 5, 6, 1, 2, 3, 4)),
            words(repeated_tokens(tokenizer, span=20, repeats=2, seed=3, prefix=[]).ids[0, :20])]


class InductionTask:
    """Data, metadata and examples of the induction task (decoder-only)."""

    name = NAME
    arch = "decoder"
    description = ("Random tokens t0..t299 in which a span repeats: the model can only predict the repeated "
                   "tokens by copying what followed the same token before. Layer 0 has a previous-token head, "
                   "layer 1 an induction head; the attention map of a repeated span shows the induction stripe.")

    def __init__(self, tokenizer: Tokenizer, *, seq_len: int = 64, max_new_tokens: int = 8,
                 examples: Sequence[str] | None = None):
        if seq_len < 1 + 2 * SPAN_RANGE[1]:
            raise ValueError(f"seq_len={seq_len} leaves no room to repeat a span of {SPAN_RANGE[1]} tokens; use at "
                             f"least {1 + 2 * SPAN_RANGE[1]}")
        self.tokenizer = tokenizer
        self.pad_id, self.bos_id, self.eos_id = tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id
        self.seq_len = seq_len  # tokens per training row, [BOS] included
        self.max_new_tokens = max_new_tokens
        self.vocab = probe_vocabulary(tokenizer)  # (N,) ordinary token ids
        self.examples = list(examples) if examples is not None else example_texts(tokenizer)

    def training_batch(self, batch_size: int, generator: torch.Generator) -> Batch:
        """Rows [BOS] + prefix + span repeated to ``seq_len``; the loss covers every next token."""
        B, T = batch_size, self.seq_len
        rows = self.vocab[torch.randint(len(self.vocab), (B, T), generator=generator)]  # (B, T) random tokens
        rows[:, 0] = self.bos_id
        span = torch.randint(SPAN_RANGE[0], SPAN_RANGE[1] + 1, (B, 1), generator=generator)  # (B, 1)
        room = T - 1 - 2 * span  # (B, 1) random tokens that fit before the first copy
        early = torch.rand(B, 1, generator=generator) < EARLY_SHARE  # (B, 1) rows whose first copy starts early
        room = torch.where(early, room.clamp(max=EARLY_PREFIX), room)
        start = 1 + (torch.rand(B, 1, generator=generator) * (room + 1)).long()  # (B, 1) first copy, 1 .. 1 + room
        pos = torch.arange(T)[None]  # (1, T)
        source = torch.where(pos >= start, start + (pos - start) % span, pos)  # (B, T) copy from the first copy
        rows = rows.gather(1, source)
        return Batch(rows[:, :-1], None, rows[:, 1:])

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arch": self.arch, "description": self.description, "pad_id": self.pad_id,
                "bos_id": self.bos_id, "eos_id": self.eos_id, "seq_len": self.seq_len,
                "max_new_tokens": self.max_new_tokens, "examples": list(self.examples), "data": describe_data()}

    @classmethod
    def from_dict(cls, d: dict[str, Any], tokenizer: Tokenizer) -> InductionTask:
        if d.get("name") != NAME:
            raise ValueError(f"task {d.get('name')!r} is not the induction task")
        return cls(tokenizer, seq_len=int(d.get("seq_len", 64)), max_new_tokens=int(d.get("max_new_tokens", 8)),
                   examples=d.get("examples"))


def describe_data() -> str:
    return (f"Rows of [BOS] + random tokens + a random span of {SPAN_RANGE[0]}-{SPAN_RANGE[1]} tokens repeated "
            f"to the end of the row; the first copy starts within {EARLY_PREFIX} tokens of [BOS] in "
            f"{EARLY_SHARE:.0%} of the rows, anywhere a second copy still fits in the others; tokens drawn "
            f"uniformly from t0..t{N_TOKENS - 1}, fresh every step (seeded by --seed and the step).")


def step_generator(seed: int, step: int) -> torch.Generator:
    """The data of training step ``step``: recomputable, so a resumed run sees the same rows."""
    return torch.Generator().manual_seed(seed * 1_000_003 + step)


@dataclass
class InductionReport:
    scores: dict[str, torch.Tensor]  # role -> (L, H) on the probe
    induction_heads: list[tuple[int, int]]  # heads with induction score >= ROLE_THRESHOLD, best first
    previous_heads: list[tuple[int, int]]  # the same for previous-token
    losses: CopyLosses  # all heads on
    ablations: dict[str, CopyLosses]  # which heads are off -> losses


def evaluate(model: Transformer, task: InductionTask, *, rows: int = EVAL_ROWS, seed: int = EVAL_SEED,
             span: int = EVAL_SPAN) -> InductionReport:
    """Role scores and copy losses on the fixed probe, and the losses with role heads switched off."""
    probe = repeated_tokens(task.tokenizer, span=span, batch=rows, seed=seed, vocab_size=model.config.vocab_size)
    scores = head_roles(model, probe.ids)["decoder"]
    induction = top_heads(scores["induction"], scores["induction"].numel(), min_score=ROLE_THRESHOLD)
    previous = top_heads(scores["previous"], scores["previous"].numel(), min_score=ROLE_THRESHOLD)
    L, H = scores["induction"].shape
    ablations = {}
    for label, heads in (("top induction head", induction[:1]), ("all induction heads", induction),
                         ("top previous-token head", previous[:1]), ("all previous-token heads", previous)):
        if heads:
            off = {"decoder": head_mask_without(heads, L, H)}
            ablations[f"{label} off ({heads_text(heads)})"] = copy_losses(model, probe, head_mask=off)
    return InductionReport(scores, induction, previous, copy_losses(model, probe), ablations)


def heads_text(heads: Sequence[tuple[int, int]]) -> str:
    return ", ".join(f"L{layer} H{head}" for layer, head in heads)


def progress(model: Transformer, task: InductionTask) -> dict[str, float]:
    """The periodic check during training: best role scores and copy losses on a small probe."""
    probe = repeated_tokens(task.tokenizer, span=EVAL_SPAN, batch=20, seed=EVAL_SEED + 1,
                            vocab_size=model.config.vocab_size)
    scores = head_roles(model, probe.ids)["decoder"]
    losses = copy_losses(model, probe)
    return {"induction": scores["induction"].max().item(), "previous": scores["previous"].max().item(),
            "loss_first": losses.first, "loss_repeated": losses.repeated}


def report_dict(report: InductionReport) -> dict[str, Any]:
    """The report as JSON for config.json (scores rounded to 4 decimals, losses in nats)."""
    return {
        "probe": {"rows": EVAL_ROWS, "span": EVAL_SPAN, "repeats": 2, "seed": EVAL_SEED, "prefix": "[BOS]"},
        "scores": {role: [[round(float(v), 4) for v in row] for row in s] for role, s in report.scores.items()},
        "induction_heads": [list(h) for h in report.induction_heads],
        "previous_heads": [list(h) for h in report.previous_heads],
        "loss_first_copy": round(report.losses.first, 4), "loss_repeated_copy": round(report.losses.repeated, 4),
        "ablations": {k: {"loss_first_copy": round(v.first, 4), "loss_repeated_copy": round(v.repeated, 4)}
                      for k, v in report.ablations.items()},
    }


def _score_table(scores: torch.Tensor) -> list[str]:
    L, H = scores.shape
    lines = ["| layer | " + " | ".join(f"H{h}" for h in range(H)) + " |", "| --- " * (H + 1) + "|"]
    return lines + [f"| L{layer} | " + " | ".join(f"{float(v):.3f}" for v in scores[layer]) + " |"
                    for layer in range(L)]


def make_card(*, model: Transformer, task: InductionTask, report: InductionReport, training: dict[str, Any],
              name: str, device: str) -> str:
    """The checkpoint's README.md: what it learned (measured on the fixed probe), how it was trained."""
    ind, prev = report.induction_heads, report.previous_heads
    top_i, top_p = (ind[0] if ind else None), (prev[0] if prev else None)
    lines = [
        f"# {name}", "", task.description, "",
        "## Use", "", "```python",
        "from explorer.checkpoints import load_checkpoint",
        "from explorer.interpret import copy_losses, head_roles, repeated_tokens", "",
        f'loaded = load_checkpoint("checkpoints/{name}")',
        f"probe = repeated_tokens(loaded.tokenizer, span={EVAL_SPAN}, batch={EVAL_ROWS}, seed={EVAL_SEED})",
        'head_roles(loaded.model, probe.ids)["decoder"]["induction"]  # (layers, heads) scores',
        "copy_losses(loaded.model, probe)  # first copy vs repeated copy", "```", "",
        "## Training command", "", "```", training["command"], "```", "",
        f"## Results on fresh repeated sequences ({EVAL_ROWS} rows of [BOS] + {EVAL_SPAN} distinct random tokens "
        f"+ the same {EVAL_SPAN} again, seed {EVAL_SEED})", "",
        f"- **Induction head: L{top_i[0]} H{top_i[1]}, score {float(report.scores['induction'][top_i]):.3f}**"
        if top_i else
        "- No head reaches an induction score of 0.5.",
        f"- **Previous-token head: L{top_p[0]} H{top_p[1]}, score {float(report.scores['previous'][top_p]):.3f}**"
        if top_p else
        "- No head reaches a previous-token score of 0.5.",
        f"- Next-token loss on the first copy {report.losses.first:.3f} nats (chance: ln {len(task.vocab)} = "
        f"{torch.tensor(float(len(task.vocab))).log().item():.3f}), on the repeated copy "
        f"**{report.losses.repeated:.3f}** nats.", "",
        "Scores are the mean attention a head puts on the keys its role predicts (TransformerLens's \"mul\" "
        "head-detector score, counted on the positions where the role is defined; see explorer.interpret.roles).",
        "", "Induction scores:", "", *_score_table(report.scores["induction"]), "",
        "Previous-token scores:", "", *_score_table(report.scores["previous"]), "",
        "Switching heads off (loss on the first copy / on the repeated copy, nats):", "",
        "| heads off | first copy | repeated copy |", "| --- | --- | --- |",
        f"| none | {report.losses.first:.3f} | {report.losses.repeated:.3f} |",
        *[f"| {k} | {v.first:.3f} | {v.repeated:.3f} |" for k, v in report.ablations.items()], "",
    ]
    lines += _what_to_look_at(task, top_i, top_p) + _training_lines(model, training, device)
    return "\n".join(lines)


def _what_to_look_at(task: InductionTask, top_i, top_p) -> list[str]:
    i = f"head L{top_i[0]} H{top_i[1]}" if top_i else "the induction head"
    p = f"head L{top_p[0]} H{top_p[1]}" if top_p else "the previous-token head"
    return [
        "## What to look at", "",
        f"- Type a span and repeat it, e.g. `{task.examples[0]}`. In {i}, the **induction stripe**: each "
        "token of the second copy attends to the token *after* its earlier copy (a diagonal one step right of "
        "the repeat's offset). In " + p + ", the previous token (the sub-diagonal): this head writes "
        "\"which token came before me\" into each position, which the induction head's keys then match.",
        f"- Switch {i} off: the loss on the repeated copy goes up (table above); switch all induction heads off "
        f"and copying stops. Switching {p} off takes away the induction heads' input, so copying fails too.",
        "- The logit lens shows the copy appear only after layer 1: the residual stream after layer 0 does not "
        "yet predict the next token of the repeat.", "",
    ]


def _training_lines(model: Transformer, training: dict[str, Any], device: str) -> list[str]:
    c = model.config
    history = training.get("history", [])
    lines = [
        "## Training", "",
        f"- Data: {describe_data()}",
        (f"- {training['steps']:,} steps of batch {training['batch_size']}, seed {training['seed']}; "
         f"wall time {training['seconds'] / 60:.1f} min, CPU time {training['cpu_seconds'] / 60:.1f} min on "
         f"{training['device']} ({device}, {training['threads']} thread{'s' if training['threads'] > 1 else ''}), "
         f"torch {torch.__version__}; the machine was shared with other jobs, so the wall time is an upper bound."),
        "", "Progress (training loss; best head scores and copy losses on a 20-row probe):", "",
        "| step | training loss | best induction | best previous-token | loss first copy | loss repeated copy |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    lines += [f"| {h['step']} | {h['loss']:.3f} | {h['induction']:.3f} | {h['previous']:.3f} | "
              f"{h['loss_first']:.3f} | {h['loss_repeated']:.3f} |" for h in history]
    lines += [
        "", "## Model", "",
        "| field | value |", "| --- | --- |",
        f"| architecture | decoder-only, {c.decoder_layers} layers |",
        f"| parameters | {model.num_parameters():,} |",
        f"| d_model / heads / d_ff | {c.d_model} / {c.n_heads} / {c.d_ff} |",
        f"| norm | {'pre' if c.norm_first else 'post'}-norm |",
        f"| positions | {c.positional}, up to {c.max_len} tokens |",
        f"| vocabulary | {c.vocab_size}: [PAD] [UNK] [BOS] [EOS] and t0..t{N_TOKENS - 1} (word-level) |",
        "", ("Files: config.json (model configuration, task metadata and the measurements above), "
             "model.safetensors (float32 weights), tokenizer.json (word-level tokenizer), README.md (this card)."), "",
    ]
    return lines

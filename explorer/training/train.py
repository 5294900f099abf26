"""Train a model and write it as an explorer checkpoint: ``python -m explorer.training.train --task ... --out ...``.

Date tasks: build the char tokenizer and the task (explorer.training.tasks), draw seeded disjoint train/val/test
splits (explorer.training.dates.splits), train with AdamW + linear warmup + cosine decay, report loss
and examples/s on a tqdm bar, measure validation exact match every ``--eval-every`` steps, then
measure exact match on the held-out test dates and save model, tokenizer, task metadata and a model
card through explorer.checkpoints.save_checkpoint.

``--task induction`` (explorer.training.induction): fresh rows of random tokens with a repeated span every
step; every ``--eval-every`` steps the best induction and previous-token head scores; at the end the
head roles, copy losses and ablations on a fixed probe go into the card. Both share :func:`fit`.

Resume: every ``--save-every`` steps the run writes ``training_state.pt`` into the output folder
(model, optimizer, scheduler, RNG states, step, elapsed time: plain tensors and dicts, read back with
``torch.load(weights_only=True)``). ``--resume`` continues from it with the data order and dropout
noise of an uninterrupted run. The file is deleted when the run finishes (``--keep-state`` keeps it).

Shapes: B batch, S source/sequence length, T target length, V vocabulary.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import random
import shlex
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor
from tqdm import tqdm

from . import induction
from ..checkpoints import save_checkpoint
from . import dates
from ..device import pick_device
from ..model import Transformer, TransformerConfig
from .head_sparsity import head_group_lasso
from .tasks import IGNORE_INDEX, TASKS, Batch, DateTask, make_task

STATE_FILE = "training_state.pt"
# Arguments that define the run: a resumed run must use the same ones.
_RUN_DEFINING = ("task", "d_model", "heads", "head_dim", "layers", "encoder_layers", "decoder_layers", "d_ff",
                 "dropout", "norm_first", "positional", "activation", "max_len", "steps", "batch_size", "lr", "warmup",
                 "min_lr_ratio", "weight_decay", "head_l1", "head_l1_start", "head_l1_shape", "head_l1_tau",
                 "label_smoothing", "clip", "seed", "data_seed", "n_train",
                 "length_pool")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m explorer.training.train", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--task", choices=sorted([*TASKS, induction.NAME]), default="date-translation",
                   help="induction: fresh random rows every step; the --n-*, --data-seed, --length-pool and "
                        "--eval-batch-size options are for the date tasks; --max-len is the row length")
    p.add_argument("--out", required=True, help="checkpoint folder to write")
    m = p.add_argument_group("model")
    m.add_argument("--d-model", type=int, default=128)
    m.add_argument("--heads", type=int, default=4)
    m.add_argument("--head-dim", type=int, default=None, help="width of each head (default: d-model / heads)")
    m.add_argument("--layers", type=int, default=2, help="layers per stack")
    m.add_argument("--encoder-layers", type=int, default=None, help="overrides --layers for the encoder")
    m.add_argument("--decoder-layers", type=int, default=None, help="overrides --layers for the decoder")
    m.add_argument("--d-ff", type=int, default=512)
    m.add_argument("--dropout", type=float, default=0.1)
    norm = m.add_mutually_exclusive_group()
    norm.add_argument("--norm-first", dest="norm_first", action="store_true", default=True, help="pre-norm")
    norm.add_argument("--post-norm", dest="norm_first", action="store_false", help="post-norm")
    m.add_argument("--positional", choices=("sinusoidal", "learned", "rotary", "none"), default="sinusoidal")
    m.add_argument("--activation", choices=("relu", "gelu"), default="relu")
    m.add_argument("--max-len", type=int, default=64, help="longest sequence the model takes")
    t = p.add_argument_group("training")
    t.add_argument("--steps", type=int, default=3000)
    t.add_argument("--batch-size", type=int, default=128)
    t.add_argument("--lr", type=float, default=2e-3, help="peak learning rate (AdamW)")
    t.add_argument("--warmup", type=int, default=200, help="linear warmup steps, then cosine decay")
    t.add_argument("--min-lr-ratio", type=float, default=0.02, help="final lr = lr x this")
    t.add_argument("--weight-decay", type=float, default=0.01)
    t.add_argument("--head-l1", type=float, default=0.0,
                   help="weight of a group-lasso penalty on each head's OV weights (0 = off): few heads per role")
    t.add_argument("--head-l1-start", type=int, default=0,
                   help="first step with the --head-l1 penalty (after the circuit has formed: before it, it stops it)")
    t.add_argument("--head-l1-shape", choices=("lasso", "log"), default="lasso",
                   help="--head-l1 per head: its norm n (lasso), or tau log(1 + n / tau) (log: concave, one large "
                        "head preferred to several)")
    t.add_argument("--head-l1-tau", type=float, default=1.0, help="tau of --head-l1-shape log (norm where the pull halves)")
    t.add_argument("--label-smoothing", type=float, default=0.0)
    t.add_argument("--clip", type=float, default=1.0, help="gradient-norm clipping (0 = off)")
    t.add_argument("--length-pool", type=int, default=32,
                   help="batches drawn from pools of this many batches sorted by length (1 = no sorting)")
    t.add_argument("--seed", type=int, default=0, help="model init, data order, dropout")
    t.add_argument("--data-seed", type=int, default=0, help="seed of the train/val/test splits")
    t.add_argument("--n-train", type=int, default=50_000)
    t.add_argument("--n-val", type=int, default=500, help="validation dates for periodic exact match")
    t.add_argument("--n-test", type=int, default=2000, help="held-out test dates measured at the end")
    t.add_argument("--eval-every", type=int, default=500)
    t.add_argument("--save-every", type=int, default=None, help="training-state interval (default: eval-every)")
    t.add_argument("--eval-batch-size", type=int, default=500)
    t.add_argument("--device", default="auto", help="auto, cpu, cuda or mps")
    t.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    t.add_argument("--resume", action="store_true", help=f"continue from {STATE_FILE} in --out")
    t.add_argument("--keep-state", action="store_true", help=f"keep {STATE_FILE} after the run finishes")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    for name in ("steps", "batch_size", "eval_every", "n_train", "n_val", "n_test"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.head_l1_tau <= 0:
        p.error("--head-l1-tau must be positive")
    if args.save_every is None:
        args.save_every = args.eval_every
    return args


def build_config(args: argparse.Namespace, task: DateTask | induction.InductionTask) -> TransformerConfig:
    return TransformerConfig(
        arch=task.arch, vocab_size=task.tokenizer.vocab_size, d_model=args.d_model, n_heads=args.heads,
        head_dim=args.head_dim,
        n_layers=args.layers, n_encoder_layers=args.encoder_layers, n_decoder_layers=args.decoder_layers,
        d_ff=args.d_ff, dropout=args.dropout, max_len=args.max_len, norm_first=args.norm_first,
        positional=args.positional, activation=args.activation, pad_id=task.pad_id)


def compute_loss(model: Transformer, batch: Batch, label_smoothing: float = 0.0) -> Tensor:
    """Mean cross-entropy over the labelled positions (labels == IGNORE_INDEX take no part)."""
    if batch.tgt is None:
        logits = model(batch.src, need_weights=False).logits  # (B, S, V)
    else:
        logits = model(batch.src, batch.tgt, need_weights=False).logits  # (B, T, V)
    return F.cross_entropy(logits.flatten(0, 1), batch.labels.flatten(), ignore_index=IGNORE_INDEX,
                           label_smoothing=label_smoothing)


def lr_factor(step: int, steps: int, warmup: int, min_ratio: float) -> float:
    """Linear warmup to 1, then cosine decay to ``min_ratio`` at ``steps``."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, steps - warmup))
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


class BatchOrder:
    """Which examples each step trains on: recomputable for any step (so a resumed run sees the same data).

    Every epoch is a fresh seeded permutation, cut into pools of ``pool`` batches; inside a pool
    examples are sorted by length before being cut into batches (little padding), and the batches
    of the epoch are then shuffled. ``pool=1`` gives plain random batches.
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, seed: int, pool: int = 32):
        if len(lengths) < batch_size:
            raise ValueError(f"{len(lengths)} training examples cannot fill a batch of {batch_size}")
        self.lengths = torch.tensor(list(lengths))
        self.batch_size, self.seed, self.pool = batch_size, seed, max(1, pool)
        self._epoch, self._batches = -1, []
        self.per_epoch = len(self.epoch(0))

    def epoch(self, epoch: int) -> list[Tensor]:
        if epoch != self._epoch:
            gen = torch.Generator().manual_seed(self.seed * 100_003 + epoch)
            n, bs = len(self.lengths), self.batch_size
            perm = torch.randperm(n, generator=gen)
            batches = []
            for start in range(0, n, bs * self.pool):
                chunk = perm[start : start + bs * self.pool]
                if self.pool > 1:
                    chunk = chunk[torch.argsort(self.lengths[chunk], stable=True)]
                batches += [chunk[i : i + bs] for i in range(0, len(chunk) - bs + 1, bs)]  # full batches only
            order = torch.randperm(len(batches), generator=gen).tolist()
            self._epoch, self._batches = epoch, [batches[i] for i in order]
        return self._batches

    def indices(self, step: int) -> Tensor:
        epoch, k = divmod(step, self.per_epoch)
        return self.epoch(epoch)[k]


def command_line(argv: Sequence[str] | None) -> str:
    args = list(sys.argv[1:] if argv is None else argv)
    return "python -m explorer.training.train " + shlex.join(args)


def per_locale_accuracy(predictions: Sequence[str], examples: Sequence[dates.DateExample]) -> dict[str, float]:
    """Exact match per locale (the card shows where the errors are)."""
    totals: dict[str, list[int]] = {}
    for p, e in zip(predictions, examples):
        hit = totals.setdefault(e.locale, [0, 0])
        hit[0] += p == e.target
        hit[1] += 1
    return {k: v[0] / v[1] for k, v in sorted(totals.items())}


def make_card(*, task: DateTask, model: Transformer, args: argparse.Namespace, command: str, test_em: float,
              val_em: float | None, per_locale: dict[str, float], errors: list[tuple[str, str, str]],
              seconds: float, steps_done: int, device: torch.device, final_loss: float) -> str:
    c = model.config
    layers = (f"{c.encoder_layers} encoder + {c.decoder_layers} decoder" if c.arch == "encoder-decoder"
              else f"{c.decoder_layers} decoder")
    name = Path(args.out).name
    lines = [
        f"# {name}", "",
        f"Task `{task.name}`: {task.description}", "",
        "## Use", "", "```python",
        "from explorer.checkpoints import load_checkpoint",
        "from explorer.training.tasks import task_from_dict", "",
        f'loaded = load_checkpoint("{args.out}")',
        "task = task_from_dict(loaded.task, loaded.tokenizer)",
        f'task.predict(loaded.model, ["{task.examples[0]}"])  # -> ["{dates.examples_for_ui(1)[0].target}"]',
        "```", "",
        "## Training command", "", "```", command, "```", "",
        "## Results", "",
        (f"- **Exact match on {args.n_test:,} held-out test dates: {test_em:.2%}** "
         f"(greedy decoding; test texts never seen in training, data seed {args.data_seed})"),
    ]
    if val_em is not None:
        lines.append(f"- Validation exact match ({args.n_val} dates) at the end: {val_em:.2%}")
    lines += [
        "- Per locale (test): " + ", ".join(f"{k} {v:.1%}" for k, v in per_locale.items()),
        f"- Final training loss: {final_loss:.4f}",
    ]
    if errors:
        lines += ["", "Some test errors (source -> predicted, expected):", ""]
        lines += [f"- `{src}` -> `{pred}` (expected `{want}`)" for src, pred, want in errors]
    lines += [
        "", "## Model", "",
        "| field | value |", "| --- | --- |",
        f"| architecture | {c.arch} ({layers} layers) |",
        f"| parameters | {model.num_parameters():,} |",
        f"| d_model / heads / d_ff | {c.d_model} / {c.n_heads} / {c.d_ff} |",
        f"| norm | {'pre' if c.norm_first else 'post'}-norm |",
        f"| positions | {c.positional} |",
        f"| dropout | {c.dropout} |",
        f"| vocabulary | {c.vocab_size} characters and specials, shared by source and target |",
        "", "## Training", "",
        f"- Data: {dates.describe()}",
        f"- {args.n_train:,} training dates, {args.n_val} validation, {args.n_test:,} test (disjoint texts).",
        (f"- {steps_done:,} steps of batch {args.batch_size}, AdamW lr {args.lr:g} (warmup {args.warmup}, "
         f"cosine to {args.lr * args.min_lr_ratio:g}), weight decay {args.weight_decay}, seed {args.seed}."),
        (f"- Training time: {seconds / 60:.1f} min on {device.type} ({_device_name(device)}, "
         f"{torch.get_num_threads()} thread{'s' if torch.get_num_threads() > 1 else ''}), "
         f"{steps_done / max(seconds, 1e-9):.2f} steps/s including the periodic validation; "
         f"torch {torch.__version__}."),
        "", ("Files: config.json (model configuration and task metadata), model.safetensors (float32 weights), "
             "tokenizer.json (character tokenizer), README.md (this card)."), "",
    ]
    return "\n".join(lines)


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return platform.processor() or platform.machine()


def _rng_state() -> dict[str, Any]:
    state: dict[str, Any] = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_state(path: Path, *, model: Transformer, optimizer: torch.optim.Optimizer,
               scheduler: torch.optim.lr_scheduler.LRScheduler, step: int, elapsed: float, loss: float,
               args: argparse.Namespace, cpu: float = 0.0) -> None:
    """Everything a resumed run needs, as plain tensors/dicts (loadable with weights_only=True)."""
    state = {"step": step, "elapsed": elapsed, "cpu": cpu, "loss": loss, "model": model.state_dict(),
             "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "rng": _rng_state(),
             "args": {k: getattr(args, k) for k in _RUN_DEFINING}}
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)  # a run killed mid-write leaves the previous state intact


def load_state(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    if not path.is_file():
        raise SystemExit(f"--resume: no {STATE_FILE} in {path.parent}")
    state = torch.load(path, map_location="cpu", weights_only=True)
    before = {"head_l1": 0.0, "head_l1_start": 0, "head_l1_shape": "lasso", "head_l1_tau": 1.0, **state["args"]}  # states written before --head-l1 existed ran without it
    changed = [k for k in _RUN_DEFINING if before.get(k) != getattr(args, k)]
    if changed:
        raise SystemExit(f"--resume: {path} was written by a run with different "
                         + ", ".join(f"--{k.replace('_', '-')} ({before.get(k)!r} != {getattr(args, k)!r})"
                                     for k in changed))
    return state


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """torch's CPU threads set to n for the block (0: left as they are), then back as they were (a main() called
    in-process, as the tests do, leaves the setting as it found it)."""
    before = torch.get_num_threads()
    if n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def main(argv: Sequence[str] | None = None) -> Path:
    """Run the training described by ``argv`` (default sys.argv); returns the checkpoint folder."""
    args = parse_args(argv)
    with torch_threads(args.threads):
        return RUNS[args.task](args, command_line(argv))


@dataclass
class Fitted:
    """What the training loop leaves: optimiser state (for --keep-state) and measurements."""

    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    seconds: float  # wall time of the training steps and periodic evaluations (all runs of a resumed one)
    cpu_seconds: float  # CPU time of this process over the same span (all threads)
    loss: float  # the last training loss
    history: list[dict[str, float]]  # {"step", "loss", metric: value, ...} at each periodic evaluation


def fit(model: Transformer, args: argparse.Namespace, desc: str, batch_for: Callable[[int], Batch],
        evaluate: Callable[[], dict[str, float]], device: torch.device) -> Fitted:
    """AdamW with warmup + cosine decay for ``args.steps`` steps of ``batch_for(step)``; resumable.

    ``evaluate()`` runs every ``--eval-every`` steps and at the end (the model is put back in train
    mode after it); the training state is saved every ``--save-every`` steps into ``--out``.
    """
    state_path = Path(args.out) / STATE_FILE
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=args.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_factor(s, args.steps, args.warmup, args.min_lr_ratio))
    start, elapsed, cpu, loss_value, history = 0, 0.0, 0.0, float("nan"), []
    if args.resume:
        state = load_state(state_path, args)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        _set_rng_state(state["rng"])
        start, elapsed, loss_value = state["step"], state["elapsed"], state["loss"]
        cpu = state.get("cpu", 0.0)
    model.train()
    bar = tqdm(range(start, args.steps), initial=start, total=args.steps, disable=args.quiet, dynamic_ncols=True,
               desc=desc)
    t0, c0, window_t, window_n, shown = time.perf_counter(), time.process_time(), time.perf_counter(), 0, "-"
    for step in bar:
        batch = batch_for(step).to(device)
        loss = compute_loss(model, batch, args.label_smoothing)
        optimizer.zero_grad(set_to_none=True)
        # the penalty trains but is not the task's loss: loss_value (history, card) stays the cross-entropy
        penalised = args.head_l1 and step >= args.head_l1_start
        penalty = head_group_lasso(model, args.head_l1_shape, args.head_l1_tau) if penalised else 0.0
        (loss + args.head_l1 * penalty).backward()
        if args.clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        optimizer.step()
        scheduler.step()
        loss_value = loss.item()
        window_n += len(batch)
        done = step + 1
        if done % 20 == 0 or done == args.steps:
            now = time.perf_counter()
            bar.set_postfix(loss=f"{loss_value:.4f}", ex_s=f"{window_n / (now - window_t):.0f}",
                            lr=f"{scheduler.get_last_lr()[0]:.2e}", eval=shown)
            window_t, window_n = now, 0
        if done % args.eval_every == 0 or done == args.steps:
            metrics = evaluate()
            model.train()
            history.append({"step": done, "loss": round(loss_value, 5), **metrics})
            shown = ", ".join(f"{k} {v:.4g}" for k, v in metrics.items())
            bar.write(f"step {done}: loss {loss_value:.4f}, {shown}")
        if done % args.save_every == 0 and done < args.steps:
            save_state(state_path, model=model, optimizer=optimizer, scheduler=scheduler, step=done,
                       elapsed=elapsed + time.perf_counter() - t0, loss=loss_value, args=args,
                       cpu=cpu + time.process_time() - c0)
    bar.close()
    return Fitted(optimizer, scheduler, elapsed + time.perf_counter() - t0, cpu + time.process_time() - c0,
                  loss_value, history)


def finish_state(model: Transformer, fitted: Fitted, args: argparse.Namespace) -> None:
    """After a complete run: keep the final training state (--keep-state) or delete the periodic one."""
    state_path = Path(args.out) / STATE_FILE
    if args.keep_state:
        save_state(state_path, model=model, optimizer=fitted.optimizer, scheduler=fitted.scheduler, step=args.steps,
                   elapsed=fitted.seconds, loss=fitted.loss, args=args, cpu=fitted.cpu_seconds)
    elif state_path.exists():
        state_path.unlink()


def _run_dates(args: argparse.Namespace, command: str) -> Path:
    device = pick_device(args.device)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    random.seed(args.seed)
    torch.manual_seed(args.seed)
    task = make_task(args.task)
    data = dates.splits(args.data_seed, args.n_train, args.n_val, args.n_test)
    train = data["train"]
    model = Transformer(build_config(args, task)).to(device)
    order = BatchOrder([len(e.text) for e in train], args.batch_size, args.seed, args.length_pool)
    print(f"{task.name}: {model.num_parameters():,} parameters on {device}, {len(train):,} training dates, "
          f"{args.steps} steps", file=sys.stderr)
    fitted = fit(model, args, task.name, lambda step: task.training_batch([train[i] for i in order.indices(step).tolist()]),
                 lambda: {"validation exact match": task.exact_match(model, data["val"], args.eval_batch_size)},
                 device)
    val_em = fitted.history[-1]["validation exact match"] if fitted.history else None
    seconds, steps_done, loss_value = fitted.seconds, args.steps, fitted.loss

    model.eval()
    test = data["test"]
    predictions = task.predict(model, [e.text for e in test], args.eval_batch_size)
    test_em = sum(p == e.target for p, e in zip(predictions, test)) / len(test)
    errors = [(e.text, p, e.target) for p, e in zip(predictions, test) if p != e.target][:10]
    per_locale = per_locale_accuracy(predictions, test)
    card = make_card(task=task, model=model, args=args, command=command, test_em=test_em, val_em=val_em,
                     per_locale=per_locale, errors=errors, seconds=seconds, steps_done=steps_done, device=device,
                     final_loss=loss_value)
    meta = task.to_dict()
    meta["training"] = {"command": command, "test_exact_match": test_em, "n_test": len(test),
                        "validation_exact_match": val_em, "steps": steps_done, "batch_size": args.batch_size,
                        "seconds": round(seconds, 1), "steps_per_second": round(steps_done / max(seconds, 1e-9), 3),
                        "final_loss": round(loss_value, 5), "device": device.type, "threads": torch.get_num_threads(), "data_seed": args.data_seed,
                        "seed": args.seed}
    finish_state(model, fitted, args)
    save_checkpoint(out, model.cpu(), task.tokenizer, task=meta, card=card)
    print(f"test exact match {test_em:.2%} on {len(test)} dates; {seconds / 60:.1f} min, "
          f"{steps_done / max(seconds, 1e-9):.2f} steps/s; wrote {out}", file=sys.stderr)
    return out


def _run_induction(args: argparse.Namespace, command: str) -> Path:
    device = pick_device(args.device)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(args.seed)
    task = induction.InductionTask(induction.build_tokenizer(), seq_len=args.max_len)
    model = Transformer(build_config(args, task)).to(device)
    print(f"{task.name}: {model.num_parameters():,} parameters on {device}, {args.steps} steps of fresh rows",
          file=sys.stderr)
    fitted = fit(model, args, task.name,
                 lambda step: task.training_batch(args.batch_size, induction.step_generator(args.seed, step)),
                 lambda: induction.progress(model.eval(), task), device)
    model.eval()
    report = induction.evaluate(model, task)
    meta = task.to_dict()
    meta["training"] = {"command": command, "steps": args.steps, "batch_size": args.batch_size,
                        "seconds": round(fitted.seconds, 1), "cpu_seconds": round(fitted.cpu_seconds, 1),
                        "final_loss": round(fitted.loss, 5), "device": device.type,
                        "threads": torch.get_num_threads(), "seed": args.seed, "history": fitted.history,
                        "evaluation": induction.report_dict(report)}
    card = induction.make_card(model=model, task=task, report=report, training=meta["training"], name=out.name,
                               device=_device_name(device))
    finish_state(model, fitted, args)
    save_checkpoint(out, model.cpu(), task.tokenizer, task=meta, card=card)
    best = report.scores["induction"].max().item(), report.scores["previous"].max().item()
    print(f"best induction score {best[0]:.3f}, previous-token {best[1]:.3f}; copy loss first {report.losses.first:.3f}"
          f" vs repeated {report.losses.repeated:.3f}; {fitted.seconds / 60:.1f} min; wrote {out}", file=sys.stderr)
    return out


RUNS: dict[str, Callable[[argparse.Namespace, str], Path]] = {**{name: _run_dates for name in TASKS},
                                                               induction.NAME: _run_induction}


if __name__ == "__main__":
    main()

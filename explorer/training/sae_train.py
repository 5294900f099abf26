"""Train a sparse autoencoder on a shipped model's residual stream and write it in SAELens's format:
``python -m explorer.training.sae_train --model induction-gpt --hook blocks.1.hook_resid_post --out checkpoints/saes/...``

The run: load the model (a shipped name or a checkpoint folder of one of the shipped tasks), draw disjoint training
and held-out sequences of its own task (explorer.training.sae_data), read the residual stream at the hook on every
training token but the special ones (explorer.training.sae_eval), fit a TopK SAE to it with a tqdm bar
(explorer.training.sae_fit), then on the held-out sequences measure SAELens's metrics, the task's loss with the
reconstruction spliced in, the dead latents, and which latents are plainly one thing (their firing against named
properties of the tokens: explorer.interpret.sae.latent_match). Everything goes into the folder: cfg.json (with the
measurements under metadata), sae_weights.safetensors, sparsity.safetensors (log10 firing density on the held-out
tokens) and a README.md card.

Deterministic for a seed (--seed: initialisation and batch order; --data-seed: the sequences).
"""

from __future__ import annotations

import argparse
import platform
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from ..checkpoints import LoadedModel
from ..interpret.sae import SAE, hook_site, log_density, save_sae
from ..interpret.sae.latent_match import LatentMatch, match_latents
from ..loading import load
from .sae_data import TaskRows, sae_splits
from .sae_eval import THRESHOLDS, HeldOutMetrics, check_site, collect_activations, held_out_metrics
from .sae_fit import FitResult, TopKSettings, fit_topk
from .train import torch_threads

PROG = "python -m explorer.training.sae_train"
NAMED_MIN_PRECISION = 0.85  # a latent is named on the card when its best property reaches these on held-out tokens
NAMED_MIN_RECALL = 0.5
ACTIVE_SHARE = 0.25  # a latent is active on a token above this share of its largest held-out activation


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", required=True, help="a shipped model (induction-gpt, date-gpt, date-translator) or a "
                                                  "checkpoint folder of one of their tasks")
    p.add_argument("--hook", required=True, help="TransformerLens hook name: blocks.L.hook_resid_pre / _mid / _post; "
                                                 "encoder.L.hook_resid_* for date-translator")
    p.add_argument("--out", required=True, help="SAE folder to write (shipped ones: checkpoints/saes/<name>)")
    a = p.add_argument_group("SAE (TopK)")
    a.add_argument("--d-sae", type=int, default=256, help="latents")
    a.add_argument("--k", type=int, default=16, help="latents kept per token (L0 <= k)")
    a.add_argument("--aux-k", type=int, default=32, help="dead latents in the auxiliary (AuxK) loss")
    a.add_argument("--aux-coeff", type=float, default=1 / 32, help="weight of the AuxK loss")
    a.add_argument("--dead-tokens", type=int, default=50_000, help="a latent idle for this many vectors is dead")
    t = p.add_argument_group("training")
    t.add_argument("--steps", type=int, default=3000)
    t.add_argument("--batch-size", type=int, default=4096, help="residual vectors per step")
    t.add_argument("--lr", type=float, default=2e-3, help="Adam's rate (constant, then linear decay)")
    t.add_argument("--decay", type=float, default=0.2, help="share of the steps over which the rate falls to 0")
    t.add_argument("--n-train", type=int, default=4000, help="training sequences of the model's task")
    t.add_argument("--n-test", type=int, default=500, help="held-out sequences (metrics, latent names, sparsity)")
    t.add_argument("--seed", type=int, default=0, help="SAE initialisation and batch order")
    t.add_argument("--data-seed", type=int, default=0, help="the sequences drawn")
    t.add_argument("--named", type=int, default=8, help="latents named on the card (at most)")
    t.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    args = p.parse_args(argv)
    for name in ("d_sae", "k", "steps", "batch_size", "n_train", "n_test", "aux_k", "dead_tokens"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.k > args.d_sae:
        p.error(f"--k {args.k} cannot exceed --d-sae {args.d_sae}")
    return args


def command_line(argv: Sequence[str] | None) -> str:
    return f"{PROG} " + shlex.join(list(sys.argv[1:] if argv is None else argv))


def settings_of(args: argparse.Namespace) -> TopKSettings:
    return TopKSettings(d_sae=args.d_sae, k=args.k, steps=args.steps, batch=args.batch_size, lr=args.lr,
                        decay=args.decay, aux_k=args.aux_k, aux_coeff=args.aux_coeff, dead_tokens=args.dead_tokens,
                        seed=args.seed)


def model_name_of(source: str) -> str:
    """metadata.model_name: the shipped name, or a folder's last part."""
    return Path(source).name or source


def property_family(name: str) -> str:
    """What a property is about, without its value: "char 9" -> "char", "ISO year digit 1" -> "ISO year digit",
    "date month: November" -> "date month", "after t17" -> "after", "repeated token" -> itself."""
    if ":" in name:
        return name.split(":")[0]
    head, _, last = name.rpartition(" ")
    valued = last.isdigit() or len(last) == 1 or last.startswith("[") or (last[:1] == "t" and last[1:].isdigit())
    return head if head and valued else name


def named_latents(matches: Sequence[LatentMatch], n: int) -> list[LatentMatch]:
    """Up to n latents that are plainly one thing (precision >= NAMED_MIN_PRECISION, recall >= NAMED_MIN_RECALL):
    the best (F1) of each family of properties first (a character, a digit position of the year, ...), then the next
    best of any property not named yet; best F1 first in each pass."""
    plain = [m for m in matches if m.precision >= NAMED_MIN_PRECISION and m.recall >= NAMED_MIN_RECALL]
    out: list[LatentMatch] = []
    families: set[str] = set()
    for m in plain:
        if len(out) < n and property_family(m.property) not in families:
            out.append(m)
            families.add(property_family(m.property))
    named = {m.property for m in out}
    for m in plain:
        if len(out) < n and m.property not in named:
            out.append(m)
            named.add(m.property)
    return out


@torch.no_grad()
def analyse(loaded: LoadedModel, sae: SAE, test: TaskRows) -> tuple[HeldOutMetrics, list[LatentMatch], torch.Tensor]:
    """Held-out metrics, every latent's best property, and the log10 firing density (sparsity.safetensors)."""
    site = hook_site(loaded.config, sae.hook_name)
    metrics = held_out_metrics(loaded.model, test, sae)
    acts = collect_activations(loaded.model, test, site)
    f = sae.encode(acts.x)  # (N, F): a few thousand tokens of a few hundred latents
    props = [test.properties[int(r)][int(p)] for r, p in zip(acts.row, acts.position)]
    return metrics, match_latents(f, props, threshold=ACTIVE_SHARE), log_density((f > 0).sum(0), f.shape[0])


def main(argv: Sequence[str] | None = None) -> Path:
    """Run the training described by `argv` (default sys.argv); returns the SAE folder."""
    args = parse_args(argv)
    with torch_threads(args.threads):
        return run(args, command_line(argv))


def run(args: argparse.Namespace, command: str) -> Path:
    loaded = load(Path(args.model) if Path(args.model).is_dir() else args.model, "cpu")
    site = check_site(loaded.model, hook_site(loaded.config, args.hook))
    model_name = model_name_of(args.model)
    t0 = time.perf_counter()
    train, test = sae_splits(loaded, args.n_train, args.n_test, args.data_seed)
    x = collect_activations(loaded.model, train, site).x  # (N, D)
    print(f"{model_name} {args.hook}: {x.shape[0]:,} training vectors of width {x.shape[1]} from {len(train):,} "
          f"sequences; {args.d_sae} latents, k={args.k}, {args.steps} steps", file=sys.stderr)
    bar = tqdm(total=args.steps, disable=args.quiet, dynamic_ncols=True, desc=f"SAE {args.hook}")

    def progress(step: int, numbers: dict[str, float]) -> None:
        bar.update(step - bar.n)
        bar.set_postfix(fvu=f"{numbers['fvu']:.4f}", dead=numbers["dead"], aux=f"{numbers['aux']:.3f}")

    t1 = time.perf_counter()
    fitted = fit_topk(x, settings_of(args), args.hook, model_name=model_name, progress=progress)
    bar.close()
    seconds = time.perf_counter() - t1
    metrics, matches, sparsity = analyse(loaded, fitted.sae, test)
    named = named_latents(matches, args.named)
    sae = SAE(**{k: getattr(fitted.sae, k) for k in ("W_enc", "b_enc", "W_dec", "b_dec", "architecture",
                                                      "hook_name", "k", "model_name")}, sparsity=sparsity)
    training = {"command": command, "sequences": len(train), "vectors": x.shape[0], "held_out_sequences": len(test),
                "held_out_tokens": metrics.saelens.tokens, "data_seed": args.data_seed,
                "settings": asdict(settings_of(args)), "seconds": round(seconds, 1),
                "total_seconds": round(time.perf_counter() - t0, 1), "threads": torch.get_num_threads(),
                "final_fvu": fitted.history[-1]["fvu"], "scale": round(fitted.scale, 6)}
    evaluation = evaluation_dict(metrics)
    metadata = {"context_size": loaded.config.max_len, "prepend_bos": int(train.ids[0][0]) == train.ignore_ids[0],
                "dataset_path": f"the {loaded.task['name']} task's own data (explorer.training.sae_data)",
                "training": training, "evaluation": evaluation,
                "named_latents": [{**asdict(m), "f1": round(m.f1, 4)} for m in named]}
    card = make_card(name=Path(args.out).name, model_name=model_name, sae=sae, site=site, metrics=metrics,
                     named=named, matches=matches, fitted=fitted, training=training, train=train)
    out = save_sae(sae, args.out, model_name=model_name, card=card, metadata=metadata)
    checks = metrics.checks()
    print("held out: " + ", ".join(f"{k} {v:.4g} ({'ok' if ok else 'MISSED'})" for k, (v, ok) in checks.items())
          + f"; {len(named)} latents named; {seconds / 60:.1f} min; wrote {out}", file=sys.stderr)
    return out


def evaluation_dict(m: HeldOutMetrics) -> dict[str, Any]:
    s, t = m.saelens, m.task
    return {"tokens": s.tokens, "sequences": m.sequences, "l0": round(s.l0, 4),
            "explained_variance": round(s.explained_variance, 4), "mse": round(s.mse, 6),
            "ce_loss_recovered": round(m.ce_loss_recovered, 4), "dead_fraction": round(m.dead_fraction, 4),
            "saelens_ce": None if s.ce_loss_recovered is None else
            {"clean": round(s.ce_clean, 4), "sae": round(s.ce_sae, 4), "zero_ablation": round(s.ce_zero_ablation, 4),
             "recovered": round(s.ce_loss_recovered, 4)},
            "task_ce": {"predictions": t.tokens, "clean": round(t.clean, 8), "sae": round(t.sae, 8),
                        "zero_ablation": round(t.zero, 4), "recovered": round(t.recovered, 4)},
            "thresholds": THRESHOLDS, "met": {k: ok for k, (_, ok) in m.checks().items()}}


def make_card(*, name: str, model_name: str, sae: SAE, site: str, metrics: HeldOutMetrics,
              named: list[LatentMatch], matches: list[LatentMatch], fitted: FitResult, training: dict[str, Any],
              train: TaskRows) -> str:
    s, t = metrics.saelens, metrics.task
    st = training["settings"]
    checks = metrics.checks()
    ok = {k: "yes" if met else "**no**" for k, (_, met) in checks.items()}
    where = site_words(sae.hook_name)
    lines = [
        f"# {name}", "",
        f"A TopK sparse autoencoder on the residual stream of the shipped `{model_name}` at `{sae.hook_name}` "
        f"({where}): {sae.d_sae} latents of width {sae.d_in}, at most k = {sae.k} active per token. SAELens's format "
        "(cfg.json, sae_weights.safetensors, sparsity.safetensors); trained on the model's own task data.", "",
        "## Use", "", "```python",
        "import explorer",
        "from explorer.interpret.sae import load_sae", "",
        f'bundle = explorer.load("{model_name}", "cpu")',
        f'sae = load_sae("{name}", model=bundle.model, model_name="{model_name}")',
        "```", "",
        "## Training command", "", "```", training["command"], "```", "",
        f"## Held-out metrics ({metrics.sequences:,} sequences, {s.tokens:,} tokens never seen in training)", "",
        "SAELens's definitions (explorer.interpret.sae.sae_metrics); the special tokens [BOS], [EOS] and [PAD] left "
        "out, as SAELens leaves them out.", "",
        "| metric | value | issue 36 asks | met |", "| --- | --- | --- | --- |",
        f"| L0 (latents active per token) | {s.l0:.2f} | <= {THRESHOLDS['l0']} | {ok['l0']} |",
        f"| explained variance | {s.explained_variance:.4f} | >= {THRESHOLDS['explained_variance']} | "
        f"{ok['explained_variance']} |",
        f"| CE loss recovered | {metrics.ce_loss_recovered:.4f} | >= {THRESHOLDS['ce_loss_recovered']} | "
        f"{ok['ce_loss_recovered']} |",
        f"| dead latents (fire on no held-out token) | {metrics.dead_fraction:.2%} | <= "
        f"{THRESHOLDS['dead_fraction']:.0%} | {ok['dead_fraction']} |",
        f"| MSE (squared error summed over the width, per token) | {s.mse:.4g} | | |", "",
    ]
    if s.ce_loss_recovered is not None:
        lines += [
            f"CE loss recovered as SAELens computes it: next-token cross-entropy over every token (predictions made at "
            f"an ignored token left out), {s.ce_clean:.4f} nats clean, {s.ce_sae:.4f} with the reconstruction "
            f"spliced in at `{sae.hook_name}` (no error term), {s.ce_zero_ablation:.4f} with the site zeroed: "
            f"({s.ce_zero_ablation:.4f} - {s.ce_sae:.4f}) / ({s.ce_zero_ablation:.4f} - {s.ce_clean:.4f}) = "
            f"{s.ce_loss_recovered:.4f}."]
        if t.tokens < s.tokens:
            lines[-1] += (" Most of these predictions are of the date's own characters, which the model was never "
                          "trained to predict (its loss covers the answer only): the task's loss below is the measure "
                          "of what the model does.")
        lines.append("")
    else:
        lines += ["SAELens measures CE loss recovered on decoder-only language models only; for this encoder-decoder's "
                  "encoder the row above is the task's own loss (next line).", ""]
    lines += [
        f"On the task's own loss ({t.tokens:,} predictions the model was trained to make, {task_words(train)}): "
        f"{nats(t.clean)} nats clean, {nats(t.sae)} with the reconstruction spliced in at the tokens counted, "
        f"{nats(t.zero)} with the site zeroed: **{t.recovered:.4f} recovered**.", "",
        "## Latents that are plainly one thing", "",
        "Each latent's activations on the held-out tokens against properties of those tokens computed from the data's "
        "structure (explorer.training.sae_data: the characters, the date's fields and the month it names, the ISO "
        "answer's digits and what the model writes next; for induction rows the token, the tokens before and after it, "
        "whether it occurred earlier in the row and the token after that earlier occurrence). A latent counts as "
        f"active on a token when its activation is above {ACTIVE_SHARE:g} of its largest on the held-out tokens: "
        "TopK fills k latents at every token, so a latent also has weak activations on tokens it is not about (the "
        "last column counts them too). Precision: of the tokens it is active on, the share with the property; recall: "
        "of the tokens with the property, the share it is active on; top 20: the share of its 20 strongest "
        f"activations on tokens with the property. Named: precision >= {NAMED_MIN_PRECISION} and recall >= "
        f"{NAMED_MIN_RECALL}; the best latent (F1) of each kind of property first (a character, a digit position, "
        "...), then others, one latent per property.", "",
        f"The properties: {train.glossary}", "",
    ]
    if named:
        lines += ["| latent | active on | precision | recall | top 20 | tokens it is active on | tokens with it | "
                  "precision, any activation > 0 |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        lines += [f"| {m.latent} | {m.property} | {m.precision:.3f} | {m.recall:.3f} | {m.top_share:.2f} | "
                  f"{m.fires:,} | {m.holds:,} | {m.precision_any:.3f} |" for m in named]
    else:
        lines.append("No latent reaches those numbers.")
    plain = sum(m.precision >= NAMED_MIN_PRECISION and m.recall >= NAMED_MIN_RECALL for m in matches)
    lines += ["", f"{plain} of the {len(matches)} latents active on held-out tokens reach both numbers for some "
                  "property (several may share one).", ""]
    lines += [
        "## Training", "",
        f"- Data: {train.description}",
        f"- {training['sequences']:,} training sequences ({training['vectors']:,} residual vectors, special tokens left "
        f"out), data seed {training['data_seed']}; the {metrics.sequences:,} held-out sequences are disjoint from them.",
        f"- Architecture: TopK (Gao et al. 2024, \"Scaling and evaluating sparse autoencoders\"; SAELens's `topk`). "
        "The k largest pre-activations are kept, so L0 <= k holds by construction and there is no L1 coefficient to "
        "tune against it; an L1 penalty also shrinks the activations it keeps. Dead latents get a gradient from the "
        f"auxiliary AuxK loss: the {st['aux_k']} strongest latents idle for {st['dead_tokens']:,} vectors reconstruct "
        f"the error, weighted {st['aux_coeff']:.4g}.",
        f"- Decoder rows at unit norm (gradient projected off the rows, renormalised each step); b_dec starts at the "
        "mean; W_enc = W_dec^T at the start. The vectors were scaled to E||x|| = sqrt(d_in) for training "
        f"(factor {fitted.scale:.4g}) and the factor folded back: this SAE reads the raw residual stream "
        "(normalize_activations none).",
        f"- {st['steps']:,} Adam steps of {st['batch']:,} vectors, lr {st['lr']:g} constant then linear decay to 0 "
        f"over the last {st['decay']:.0%}, seed {st['seed']}; final training fraction of variance unexplained "
        f"{training['final_fvu']:.4f}.",
        f"- {training['seconds'] / 60:.1f} min of training on {platform.machine()} ({training['threads']} thread"
        f"{'s' if training['threads'] != 1 else ''}, a machine shared with other jobs), torch {torch.__version__}.",
        "", "Progress (fraction of variance unexplained on the training batch, latents dead for the AuxK loss):", "",
        "| step | FVU | dead |", "| --- | --- | --- |",
    ]
    every = max(1, len(fitted.history) // 10)
    shown = fitted.history[every - 1::every]
    if shown[-1] is not fitted.history[-1]:
        shown.append(fitted.history[-1])
    lines += [f"| {h['step']} | {h['fvu']:.4f} | {h['dead']} |" for h in shown]
    lines += ["", "Files: cfg.json (SAELens config; metadata holds the measurements above), sae_weights.safetensors "
                  "(float32), sparsity.safetensors (log10 firing density on the held-out tokens), README.md (this "
                  "card).", ""]
    return "\n".join(lines)


def nats(value: float) -> str:
    return f"{value:.4f}" if value >= 1e-3 else f"{value:.2e}"


def site_words(hook_name: str) -> str:
    stack, layer, point = hook_name.split(".")
    block = f"{'encoder ' if stack == 'encoder' else ''}block {layer}"
    return {"hook_resid_pre": f"the input of {block}", "hook_resid_post": f"the output of {block}",
            "hook_resid_mid": f"{block} after its attention"}.get(point, hook_name)


def task_words(rows: TaskRows) -> str:
    if rows.tgt[0] is not None:
        return "the decoder's ISO characters and [EOS], the SAE spliced into the encoder"
    counted = sum(int((lab != -100).sum()) for lab in rows.labels[:1])
    return "the ISO answer and [EOS]" if counted < len(rows.labels[0]) else "every next token"


if __name__ == "__main__":
    main()

"""An SAE on a shipped model's own task data: the residual-stream vectors it is trained on, and its held-out numbers.

    SAELens's metrics   explorer.interpret.sae.sae_metrics on the held-out sequences (L0, explained variance, MSE and,
                        for the decoder-only models, CE loss recovered over every next token but those predicted at an
                        ignored token), the special tokens [BOS] [EOS] [PAD] ignored as SAELens ignores them
    the task's loss     the same splice measured on the positions the model was trained to predict (date-gpt: the ISO
                        answer; date-translator: the decoder's tokens, the SAE in the encoder; induction-gpt: every next
                        token): CE clean, with x replaced by decode(encode(x)) at the counted tokens, with x zeroed at
                        every position, and the share recovered (CE_zero - CE_sae) / (CE_zero - CE_clean). For an
                        encoder-decoder this is the only CE loss recovered (SAELens has none for an encoder).
    dead latents        the share of latents that fire on none of the held-out tokens

Sequences run in groups of one length (no padding), `batch` at a time.

Shapes: N tokens kept (ignored specials left out), D = d_in, F = d_sae, B batch, S/T lengths.
    collect_activations(model, rows, site) -> Activations(x (N, D), row (N,), position (N,))
    spliced_losses(model, rows, sae) -> SplicedLosses;  held_out_metrics(model, rows, sae) -> HeldOutMetrics
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from ..interpret.sae import SAE, SAEMetrics, capture_site, hook_site, sae_metrics
from ..interpret.sae.splice import run_hooked
from ..model import Transformer
from .sae_data import TaskRows
from .tasks import IGNORE_INDEX

THRESHOLDS = {"explained_variance": 0.8, "ce_loss_recovered": 0.9, "l0": 32, "dead_fraction": 0.1}  # issue 36


def length_groups(rows: TaskRows, batch: int = 256) -> Iterator[list[int]]:
    """Indices of rows of one (source, target) length, `batch` at a time, in order of first appearance."""
    groups: dict[tuple[int, int], list[int]] = {}
    for i, (ids, tgt) in enumerate(zip(rows.ids, rows.tgt)):
        groups.setdefault((len(ids), 0 if tgt is None else len(tgt)), []).append(i)
    for members in groups.values():
        for start in range(0, len(members), batch):
            yield members[start:start + batch]


def _stack(rows: TaskRows, group: list[int]) -> tuple[Tensor, Tensor | None, Tensor]:
    ids = torch.stack([rows.ids[i] for i in group])  # (B, S)
    tgt = None if rows.tgt[group[0]] is None else torch.stack([rows.tgt[i] for i in group])  # (B, T)
    return ids, tgt, torch.stack([rows.labels[i] for i in group])


def _kept(rows: TaskRows, ids: Tensor) -> Tensor:
    """(B, S) True at the tokens counted (not an ignored special token)."""
    return ~torch.isin(ids, torch.tensor(rows.ignore_ids, dtype=ids.dtype))


@dataclass
class Activations:
    x: Tensor  # (N, D) the residual stream at the site, ignored tokens left out
    row: Tensor  # (N,) long: which sequence
    position: Tensor  # (N,) long: position in it


def check_site(model: Transformer, site: str) -> str:
    """The site, if it reads the sequence `TaskRows.ids` holds (a decoder-only model's stack, an encoder-decoder's
    encoder); ValueError for an encoder-decoder's decoder (its vectors would need the decoder's own data)."""
    if model.config.arch == "encoder-decoder" and site.startswith("decoder."):
        raise ValueError(f"site {site!r}: SAEs on an encoder-decoder's decoder are not trained here; use an encoder "
                         "hook (encoder.L.hook_resid_pre / hook_resid_post)")
    return site


@torch.no_grad()
def collect_activations(model: Transformer, rows: TaskRows, site: str, *, batch: int = 256) -> Activations:
    """The residual stream at `site` on every counted token of `rows`, in row order (the run stops at the site)."""
    check_site(model, site)
    xs: dict[int, Tensor] = {}
    for group in length_groups(rows, batch):
        ids = _stack(rows, group)[0]
        x = capture_site(model, ids, site).float().cpu()  # (B, S, D); an encoder site needs no decoder input
        for i, row_x, row_keep in zip(group, x, _kept(rows, ids)):
            xs[i] = row_x[row_keep]
    positions = [_kept(rows, ids).nonzero()[:, 0] for ids in rows.ids]
    return Activations(torch.cat([xs[i] for i in range(len(rows))]),
                       torch.cat([torch.full((len(p),), i) for i, p in enumerate(positions)]), torch.cat(positions))


@dataclass
class SplicedLosses:
    """Next-token cross-entropy (nats, mean over the task's counted predictions) with the SAE's site as is, with the
    reconstruction spliced in, and zeroed."""

    tokens: int  # predictions counted
    clean: float
    sae: float
    zero: float

    @property
    def recovered(self) -> float:
        return (self.zero - self.sae) / (self.zero - self.clean) if self.zero != self.clean else float("nan")


@torch.no_grad()
def spliced_losses(model: Transformer, rows: TaskRows, sae: SAE, *, batch: int = 256) -> SplicedLosses:
    """The task's loss clean, with decode(encode(x)) at the counted tokens of the SAE's site (x kept at ignored
    tokens, as sae_metrics does) and with x zeroed at every position of the site."""
    site = check_site(model, hook_site(model.config, sae.hook_name))
    sums = {"clean": 0.0, "sae": 0.0, "zero": 0.0}
    count = 0
    for group in length_groups(rows, batch):
        ids, tgt, labels = _stack(rows, group)
        ids, labels = ids.to(model.device), labels.to(model.device)
        tgt = None if tgt is None else tgt.to(model.device)
        keep = _kept(rows, ids.cpu()).to(model.device)[..., None]  # (B, S, 1)

        def splice(name: str, x: Tensor, keep: Tensor = keep) -> Tensor:
            return torch.where(keep, sae.decode(sae.encode(x), x).to(x.dtype), x) if name == site else x

        def zero(name: str, x: Tensor) -> Tensor:
            return torch.zeros_like(x) if name == site else x

        counted = labels != IGNORE_INDEX
        count += int(counted.sum())
        for name, hook in (("clean", None), ("sae", splice), ("zero", zero)):
            logits = run_hooked(model, ids, tgt, hook).logits  # (B, L, V)
            ce = F.cross_entropy(logits.float().transpose(1, 2), labels, ignore_index=IGNORE_INDEX, reduction="none")
            sums[name] += float(ce[counted].double().sum())
    if not count:
        raise ValueError("no predictions to measure")
    return SplicedLosses(count, *(sums[k] / count for k in ("clean", "sae", "zero")))


@dataclass
class HeldOutMetrics:
    saelens: SAEMetrics  # sae_metrics on the held-out sequences
    task: SplicedLosses  # the splice on the task's own loss
    dead_fraction: float  # latents that fire on none of the held-out tokens, as a share of d_sae
    sequences: int

    @property
    def ce_loss_recovered(self) -> float:
        """SAELens's CE loss recovered for a decoder-only model; the task's for an encoder-decoder's encoder."""
        if self.saelens.ce_loss_recovered is not None:
            return self.saelens.ce_loss_recovered
        return self.task.recovered

    def checks(self) -> dict[str, tuple[float, bool]]:
        """Each of issue 36's thresholds -> (value, met)."""
        values = {"explained_variance": self.saelens.explained_variance, "ce_loss_recovered": self.ce_loss_recovered,
                  "l0": self.saelens.l0, "dead_fraction": self.dead_fraction}
        return {k: (v, v <= THRESHOLDS[k] if k in ("l0", "dead_fraction") else v >= THRESHOLDS[k])
                for k, v in values.items()}


@torch.no_grad()
def held_out_metrics(model: Transformer, rows: TaskRows, sae: SAE, *, batch: int = 256) -> HeldOutMetrics:
    """SAELens's metrics, the task's spliced losses and the dead latents of `sae` on `rows`."""
    site = check_site(model, hook_site(model.config, sae.hook_name))
    saelens = sae_metrics(model, (_stack(rows, g)[0] for g in length_groups(rows, batch)), sae,
                          ignore_ids=rows.ignore_ids)
    fired = torch.zeros(sae.d_sae, dtype=torch.bool)
    x = collect_activations(model, rows, site, batch=batch).x
    for start in range(0, x.shape[0], 4096):
        fired |= (sae.encode(x[start:start + 4096]) > 0).any(0).cpu()
    return HeldOutMetrics(saelens, spliced_losses(model, rows, sae, batch=batch), 1 - float(fired.float().mean()),
                          len(rows))

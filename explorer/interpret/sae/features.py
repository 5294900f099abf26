"""What the Features tab computes, as pure functions of a model, ids and an SAE returning small results: the strongest
latents at every token, how well the SAE reconstructs this sentence, one latent's activation along it, the tokens a
latent promotes and suppresses, and SAELens's metrics on given data (the model cards' numbers).

Metrics as SAELens 6.54.12 computes them (sae_lens/evals.py, get_sparsity_and_variance_metrics, get_recons_loss,
ExplainedVarianceCalculator):
  L0                  latents != 0 per token, averaged over tokens
  explained variance  1 - E||x - x_hat||^2 / (E||x||^2 - ||E x||^2): the variance from the mean over all tokens (the
                      sums in float64)
  MSE                 ||x - x_hat||^2 (summed over D) averaged over tokens
  CE loss recovered   (CE_zero_ablation - CE_sae) / (CE_zero_ablation - CE_clean): next-token cross-entropy of the
                      model as it is, with x replaced by decode(encode(x)) at the SAE's hook (no error term; ignored
                      tokens keep x), and with x replaced by zeros at every position
Tokens in `ignore_ids` (SAELens's ignore_tokens: usually BOS / EOS / padding) are left out of every average; a
prediction is left out when the token it is made at is ignored (SAELens's mask[:, :-1]).

Shapes: T tokens, D = d_in, F = d_sae, k latents kept per token, V vocabulary.
    features_view(model, ids, sae, latent, k) -> FeaturesView: the tab's whole computation in one pass
    read_latents(model, ids, sae, k) -> LatentReading: top (T, k) latents and values, per-token L0 and error norms
    latent_activations(model, ids, sae, latent) -> (T,)
    latent_tokens(model, ids, sae, latent, k) -> HeadTokens of (k,)
    sae_metrics(model, batches, sae, ignore_ids) -> SAEMetrics
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from ...outputs.causal_lm import resolve_position
from ...model import Record, Transformer
from ..dla import HeadTokens, direction_tokens, recorded_run, tokens_of_directions
from ..sequence import as_row
from .core import SAE
from .hooks import hook_site
from .splice import capture_site, run_hooked

CHUNK_TOKENS = 256  # tokens encoded at a time: (256, F) float32 latents, 25 MB for a GPT-2-small residual SAE


@dataclass
class LatentReading:
    """The SAE on one sentence: the strongest latents at each token and how well it reconstructs the sentence."""

    site: str  # the model site the SAE read, e.g. "decoder.6.resid_pre"
    top_latents: Tensor  # (T, k) long, strongest first
    top_values: Tensor  # (T, k) their activations (0 where fewer than k latents fire)
    l0: Tensor  # (T,) long: latents != 0 at each token
    input_norm: Tensor  # (T,) ||x||
    error_norm: Tensor  # (T,) ||x - decode(encode(x))||
    explained_variance: float  # over this sentence's tokens, from their mean (as SAELens computes it)
    mse: float  # ||x - x_hat||^2 averaged over the tokens

    @property
    def mean_l0(self) -> float:
        return float(self.l0.float().mean())


def _check_k(k: int, limit: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive number of latents, got {k!r}")
    return min(k, limit)


def explained_variance(x: Tensor, x_hat: Tensor) -> float:
    """1 - mean ||x - x_hat||^2 / (mean ||x||^2 - ||mean x||^2) over the rows of (N, D), in float64 (SAELens's
    ExplainedVarianceCalculator on one batch; 1.0 or 0.0 when the rows do not vary, as it returns)."""
    x, x_hat = x.double(), x_hat.double()
    variance = float(x.pow(2).sum(-1).mean() - x.mean(0).pow(2).sum())
    mse = float((x - x_hat).pow(2).sum(-1).mean())
    if variance < 1e-10:
        return 1.0 if mse < 1e-10 else 0.0
    return 1.0 - mse / variance


def reading_of(sae: SAE, x: Tensor, site: str, *, k: int = 8, chunk: int = CHUNK_TOKENS) -> LatentReading:
    """The LatentReading of the residual stream x (T, D) at `site`: the SAE encoded `chunk` tokens at a time (no
    (T, F) tensor is held): the k strongest latents at each token, L0, the reconstruction's errors."""
    k = _check_k(k, sae.d_sae)
    tops, values, l0, errors, x_hats = [], [], [], [], []
    for start in range(0, x.shape[0], chunk):
        xs = x[start:start + chunk].to(device=sae.device, dtype=sae.dtype)  # (c, D)
        f = sae.encode(xs)  # (c, F)
        top = f.topk(k, dim=-1)
        tops.append(top.indices.cpu())
        values.append(top.values.cpu())
        l0.append(f.sign().sum(-1).long().cpu())  # latents >= 0 (ReLU in every architecture): sign counts them
        x_hat = sae.decode(f, xs)  # (c, D)
        errors.append((xs - x_hat).norm(dim=-1).cpu())
        x_hats.append(x_hat.cpu())
    x_hat = torch.cat(x_hats)
    x = x.to(sae.dtype).cpu()
    error = torch.cat(errors)
    return LatentReading(site, torch.cat(tops), torch.cat(values), torch.cat(l0), x.norm(dim=-1), error,
                         explained_variance(x, x_hat), float(error.double().pow(2).mean()))


@torch.no_grad()
def read_latents(model: Transformer, ids: Tensor, sae: SAE, *, k: int = 8, tgt: Tensor | None = None,
                 chunk: int = CHUNK_TOKENS) -> LatentReading:
    """The model run up to the SAE's site on ids (T,) | (1, T) (tgt: an encoder-decoder's decoder input; the run stops
    there), then reading_of: the k strongest latents at each token, L0, the reconstruction's errors."""
    site = hook_site(model.config, sae.hook_name)
    x = capture_site(model, as_row(ids, "ids"), site, tgt=tgt)[0]  # (T, D)
    return reading_of(sae, x, site, k=k, chunk=chunk)


def _check_latent(sae: SAE, latent: int) -> int:
    if isinstance(latent, bool) or not isinstance(latent, int) or not 0 <= latent < sae.d_sae:
        raise ValueError(f"latent {latent!r} is not a latent of this SAE: its latents are 0..{sae.d_sae - 1}")
    return latent


@torch.no_grad()
def latent_activations(model: Transformer, ids: Tensor, sae: SAE, latent: int, *,
                       tgt: Tensor | None = None) -> Tensor:
    """(T,) latent `latent`'s activation at every token of ids (T,) | (1, T)."""
    latent = _check_latent(sae, latent)
    x = capture_site(model, as_row(ids, "ids"), hook_site(model.config, sae.hook_name), tgt=tgt)[0]  # (T, D)
    return sae.encode_latents(x, torch.tensor([latent]))[:, 0].cpu()


def latent_tokens(model: Transformer, ids: Tensor, sae: SAE, latent: int, *, position: int = -1,
                  tgt: Tensor | None = None, k: int = 10) -> HeadTokens:
    """The k tokens latent `latent`'s decoder row W_dec[latent] promotes and suppresses most, carried through the norms
    after the SAE's site frozen at `position` of this run and the unembedding (explorer.interpret.dla.direction_tokens,
    as a head's tokens): the values are the logit change that `add=1` makes there through the direct path."""
    latent = _check_latent(sae, latent)
    return direction_tokens(model, ids, hook_site(model.config, sae.hook_name), sae.W_dec[latent], position=position,
                            tgt=tgt, k=k)


# ------------------------------------------------------------------------------------------ SAELens's metrics
@dataclass
class SAEMetrics:
    """SAELens's evaluation numbers on the given data (see the module docstring)."""

    tokens: int  # tokens counted (ignored ones left out)
    l0: float
    explained_variance: float
    mse: float
    ce_clean: float | None  # mean next-token cross-entropy (nats); None without a language-model head
    ce_sae: float | None
    ce_zero_ablation: float | None
    ce_loss_recovered: float | None  # (ce_zero_ablation - ce_sae) / (ce_zero_ablation - ce_clean)


def _next_token_ce(logits: Tensor, ids: Tensor) -> Tensor:
    """(B, T, V), (B, T) -> (B, T-1): -log p(token t+1) at each position t (TransformerLens's loss_per_token)."""
    return F.cross_entropy(logits[:, :-1].float().transpose(1, 2), ids[:, 1:], reduction="none")


@torch.no_grad()
def sae_metrics(model: Transformer, batches: Iterable[Tensor], sae: SAE, *, ignore_ids: Sequence[int] = (),
                ce: bool = True) -> SAEMetrics:
    """L0, explained variance, MSE and (decoder-only language models, `ce`) CE loss recovered of `sae` on `batches`:
    each (T,) or (B, T) ids of equal length without padding (SAELens's fixed-context batches)."""
    site = hook_site(model.config, sae.hook_name)
    with_ce = ce and model.config.arch == "decoder" and model.generator is not None
    x_sum, squares, residuals, l0_sum, n = None, 0.0, 0.0, 0.0, 0
    ce_sums = {"clean": 0.0, "sae": 0.0, "zero": 0.0}
    ce_count = 0
    for ids in batches:
        ids = torch.as_tensor(ids)
        ids = (ids[None] if ids.dim() == 1 else ids).to(model.device)  # (B, T)
        keep = ~torch.isin(ids, torch.tensor(list(ignore_ids), dtype=ids.dtype, device=ids.device))  # (B, T)
        captured = {}

        def read(name: str, x: Tensor) -> Tensor:
            if name == site:
                captured["x"] = x
            return x

        if with_ce:
            clean = run_hooked(model, ids, None, read).logits
        else:
            captured["x"] = capture_site(model, ids, site)
        x = captured["x"].to(sae.dtype)  # (B, T, D)
        f = sae.encode(x)
        x_hat = sae.decode(f, x)
        xs, x_hats = x[keep].double(), x_hat[keep].double()  # (N, D) the tokens counted
        batch_sum = xs.sum(0).cpu()
        x_sum = batch_sum if x_sum is None else x_sum + batch_sum
        squares += float(xs.pow(2).sum())
        residuals += float((xs - x_hats).pow(2).sum())
        l0_sum += float((f[keep] != 0).sum())
        n += xs.shape[0]
        if with_ce:
            def replace(name: str, x: Tensor, x_hat=x_hat, keep=keep) -> Tensor:
                return torch.where(keep[..., None], x_hat.to(x.dtype), x) if name == site else x

            def zero(name: str, x: Tensor) -> Tensor:
                return torch.zeros_like(x) if name == site else x

            counted = keep[:, :-1]  # a prediction is left out when the token it is made at is ignored
            for name, logits in (("clean", clean), ("sae", run_hooked(model, ids, None, replace).logits),
                                 ("zero", run_hooked(model, ids, None, zero).logits)):
                ce_sums[name] += float(_next_token_ce(logits, ids)[counted].double().sum())
            ce_count += int(counted.sum())
    if n == 0:
        raise ValueError("no tokens to measure (every batch empty or ignored)")
    variance = squares / n - float(x_sum.div(n).pow(2).sum())
    mse = residuals / n
    ev = (1.0 if mse < 1e-10 else 0.0) if variance < 1e-10 else 1.0 - mse / variance
    if with_ce and ce_count:
        clean_ce, sae_ce, zero_ce = (ce_sums[k] / ce_count for k in ("clean", "sae", "zero"))
        recovered = (zero_ce - sae_ce) / (zero_ce - clean_ce) if zero_ce != clean_ce else float("nan")
    else:
        clean_ce = sae_ce = zero_ce = recovered = None
    return SAEMetrics(n, l0_sum / n, ev, mse, clean_ce, sae_ce, zero_ce, recovered)


# ------------------------------------------------------------------------------------------ the tab in one pass
@dataclass
class FeaturesView:
    """What the Features tab shows for one sentence, from one forward pass (without the LM head)."""

    reading: LatentReading
    latent: int  # the latent shown in detail: the one asked for, else the strongest at `position`
    activations: Tensor  # (T,) its activation at every token
    tokens: HeadTokens | None  # the tokens its decoder row promotes / suppresses at `position` (None: no direct path
    #                            from the site to an output head: an encoder-decoder's encoder, a bare encoder)
    position: int  # where the latent was chosen and its tokens read (resolved, counted from 0)
    columns: Tensor | None = None  # (n,) long: the strongest latents (the chosen one always among them), if asked
    column_values: Tensor | None = None  # (T, n) their activation at every token


def strongest_latents(reading: LatentReading, n: int) -> Tensor:
    """(m,) long, m <= n: the latents that are among some token's k strongest, ranked by their largest activation
    on the sentence (latents that never fire left out)."""
    flat, values = reading.top_latents.reshape(-1), reading.top_values.reshape(-1).float()
    fired = values > 0
    if not fired.any():
        return torch.zeros(0, dtype=torch.long)
    latents, inverse = torch.unique(flat[fired], return_inverse=True)  # (u,) each fired latent once
    best = torch.zeros(len(latents)).scatter_reduce(0, inverse, values[fired], "amax")  # (u,) its largest activation
    order = best.argsort(descending=True, stable=True)[:n]
    return latents[order]


@torch.no_grad()
def features_view(model: Transformer, ids: Tensor, sae: SAE, *, latent: int | None = None, position: int = -1,
                  k: int = 8, tokens_k: int = 10, tgt: Tensor | None = None,
                  head_mask: Mapping[str, Any] | None = None, chunk: int = CHUNK_TOKENS,
                  columns: int = 0) -> FeaturesView:
    """The Features tab's computation: one run of the stacks (no LM head, no attention weights) reading the residual
    stream at the SAE's site and the norms' divisors, then reading_of, one latent's activations along the sentence
    and its promoted / suppressed tokens (latent_tokens) at `position`. ids (T,) | (1, T); tgt: an encoder-decoder's
    decoder input. `position` counts in the sequence the SAE reads (an encoder-decoder's source for an encoder site,
    where there are no tokens to show). `columns` > 0: also the sentence's `columns` strongest latents
    (strongest_latents) and their activation at every token, exact (not only where they are among a token's top k):
    the tab's tokens x latents heatmap."""
    site = hook_site(model.config, sae.hook_name)
    if latent is not None:
        _check_latent(sae, latent)
    captured: dict[str, Tensor] = {}

    def read(name: str, x: Tensor) -> Tensor:
        if name == site:
            captured["x"] = x
        return x

    has_head = model.generator is not None or model.mlm is not None or model.classifier is not None
    direct = has_head and site.split(".")[0] == ("encoder" if model.config.arch == "encoder" else "decoder")
    record = Record(only={"scale", "mlp.scale"} if direct else ())
    seq, out = recorded_run(model, ids, tgt, head_mask, record, "the Features tab", resid_hook=read)
    x = captured["x"][0]  # (T, D) of the stack the SAE reads
    reading = reading_of(sae, x, site, k=k, chunk=chunk)
    t = resolve_position(position, x.shape[0])
    if latent is None:
        latent = int(reading.top_latents[t, 0])
    shown = strongest_latents(reading, columns) if columns else torch.zeros(0, dtype=torch.long)
    if columns and not bool((shown == latent).any()):  # the chosen latent is always a column: the last one
        shown = torch.cat([shown[:columns - 1], torch.tensor([latent])])
    values = sae.encode_latents(x, torch.cat([torch.tensor([latent]), shown])).cpu()  # (T, 1 + n) in one encode
    tokens = tokens_of_directions(model, record, out, seq.shape[1], site, sae.W_dec[latent], t, tokens_k) \
        if direct else None
    return FeaturesView(reading, latent, values[:, 0], tokens, t, shown if columns else None,
                        values[:, 1:] if columns else None)


def features_view_bytes(config, sae: SAE, tokens: int, chunk: int = CHUNK_TOKENS) -> int:
    """An estimate of what features_view holds at once above the model and the SAE, in bytes (the app's memory gate):
    the stacks' run without attention weights (every layer's hidden state, a few (T, D) and (T, d_ff) tensors of
    the layer running, an (H, T, T) score block on SDPA's math path), then a chunk's latents (chunk, F) five times over
    (the pre-activations, the latents, their sign for L0, the top-k's and decode's working copies). GPT-2 small with a
    24,576-latent SAE at 1,024 tokens: 267 MiB estimated, 251 MiB measured (benchmarks/sae.py, a loaded machine)."""
    T, D = tokens, config.d_model
    layers = max(config.encoder_layers or 0, config.decoder_layers or 0)
    run = 4 * T * D * (layers + 1) + 4 * T * (8 * D + 2 * config.d_ff) + 4 * config.n_heads * T * T
    latents = 5 * 4 * min(chunk, T) * sae.d_sae
    return run + latents + 4 * T * D * 4

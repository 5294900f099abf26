"""Latent dashboards over a set of texts (Neuronpedia's feature page, SAELens's feature density): for every latent,
its top activating examples, the fraction of tokens it fires on, and a histogram of its non-zero activations.

The model runs once per batch of texts of one length, only up to the SAE's site (capture_site); the residual stream of
all the texts is kept (N tokens x D floats, within `max_bytes`) and encoded twice, `chunk` tokens at a time: the first
pass keeps a running top-k over tokens for every latent, each latent's firing count and maximum; the second counts the
non-zero activations into `bins` equal bins of [0, max] per latent. Nothing of size (N, F) is ever held. An
encoder-decoder's decoder site needs each text's decoder input (`tgts`); its tokens are then the decoder's.

Shapes: N tokens over all texts, D = d_in, F = d_sae, n latents covered, k examples, B bins, W window.
    latent_dashboards(model, texts, sae, k, bins) -> LatentDashboards of (n, k) / (n, B) tensors
      = dashboards_of(*site_streams(model, texts, sae), sae, k, bins): the streams X (N, D) and where (N, 2) (text,
        position) first, then the dashboards from them (a caller may keep X to read examples without the model)
    LatentDashboards.histogram(latent) -> (edges (B + 1,), counts (B,));  .examples(latent) -> [(text, pos, value)]
    latent_examples(model, texts, sae, dashboards, latent, window) -> [LatentExample]: tokens and activations around
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from ...model import Transformer
from ..sequence import as_row
from .core import SAE
from .hooks import hook_site
from .splice import capture_site

DEFAULT_DASHBOARD_BYTES = 256_000_000  # residual streams kept plus the result
CHUNK = 1024  # tokens encoded at a time


@dataclass
class LatentDashboards:
    latents: Tensor  # (n,) long: the latents covered, in order
    tokens: int  # N: tokens read over all the texts
    density: Tensor  # (n,) fraction of the N tokens where the latent is != 0
    max_activation: Tensor  # (n,)
    top_values: Tensor  # (n, k) strongest activations, largest first (0 where the latent fired fewer than k times)
    top_text: Tensor  # (n, k) long: which text (-1 where there is no example)
    top_position: Tensor  # (n, k) long: token position in that text (-1 where there is no example)
    hist_counts: Tensor  # (n, B) long: non-zero activations in B equal bins of [0, max_activation]

    def row(self, latent: int) -> int:
        where = (self.latents == latent).nonzero()
        if not len(where):
            raise ValueError(f"latent {latent!r} has no dashboard here (covered: {len(self.latents)} latents)")
        return int(where[0, 0])

    def histogram(self, latent: int) -> tuple[Tensor, Tensor]:
        """(edges (B + 1,), counts (B,)) of latent `latent`'s non-zero activations."""
        i = self.row(latent)
        bins = self.hist_counts.shape[1]
        return torch.linspace(0.0, float(self.max_activation[i]), bins + 1), self.hist_counts[i]

    def examples(self, latent: int) -> list[tuple[int, int, float]]:
        """[(text index, position, activation)] of latent `latent`'s top examples, strongest first."""
        i = self.row(latent)
        return [(int(t), int(p), float(v)) for t, p, v in zip(self.top_text[i], self.top_position[i],
                                                                self.top_values[i]) if t >= 0]

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.latents, self.density, self.max_activation,
                                                              self.top_values, self.top_text, self.top_position,
                                                              self.hist_counts))


def _check_count(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def _read_rows(model: Transformer, texts: Sequence[Tensor], tgts: Sequence[Tensor] | None, site: str
               ) -> tuple[list[Tensor], list[Tensor] | None, list[Tensor]]:
    """(the texts as rows, the decoder inputs as rows or None, the rows the site reads: an encoder-decoder's decoder
    input for a decoder site, else the texts)."""
    rows = [as_row(ids, f"text {index}")[0] for index, ids in enumerate(texts)]
    if tgts is None:
        return rows, None, rows
    if model.config.arch != "encoder-decoder":
        raise ValueError("only an encoder-decoder takes tgts (its decoder inputs); pass one sequence per text")
    if len(tgts) != len(rows):
        raise ValueError(f"tgts must hold one decoder input per text: {len(rows)} texts, {len(tgts)} tgts")
    tgt_rows = [as_row(ids, f"tgt {index}")[0] for index, ids in enumerate(tgts)]
    return rows, tgt_rows, rows if site.startswith("encoder.") else tgt_rows


@torch.no_grad()
def site_streams(model: Transformer, texts: Sequence[Tensor], sae: SAE, *, tgts: Sequence[Tensor] | None = None,
                 batch: int = 64) -> tuple[Tensor, Tensor]:
    """The residual stream at the SAE's site of every token of `texts` (each (T,) | (1, T), no padding; `tgts`: an
    encoder-decoder's decoder input per text, needed for a decoder site), the model run up to the site only, texts of
    one length `batch` at a time -> (X (N, D) in text order, where (N, 2) long: each row's text and position in the
    sequence the site reads)."""
    batch = _check_count(batch, "batch")
    site = hook_site(model.config, sae.hook_name)
    rows, tgt_rows, read = _read_rows(model, texts, tgts, site)
    if not rows or not sum(len(r) for r in read):
        raise ValueError("no texts to read")
    streams: dict[int, Tensor] = {}
    by_length: dict[tuple[int, int], list[int]] = {}
    for index, ids in enumerate(rows):
        by_length.setdefault((len(ids), 0 if tgt_rows is None else len(tgt_rows[index])), []).append(index)
    for indices in by_length.values():  # texts of one length run together: no padding, one forward each
        for start in range(0, len(indices), batch):
            group = indices[start:start + batch]
            tgt = None if tgt_rows is None else torch.stack([tgt_rows[i] for i in group])
            x = capture_site(model, torch.stack([rows[i] for i in group]), site, tgt=tgt)  # (b, T, D)
            streams.update(zip(group, x.to(sae.device, sae.dtype)))
    X = torch.cat([streams[i] for i in range(len(rows))])  # (N, D) in text order
    where = torch.cat([torch.stack([torch.full((len(r),), i), torch.arange(len(r))], 1)
                       for i, r in enumerate(read)])  # (N, 2) text and position of each token
    return X, where


@torch.no_grad()
def latent_dashboards(model: Transformer, texts: Sequence[Tensor], sae: SAE, *, latents: Sequence[int] | None = None,
                      k: int = 10, bins: int = 32, max_bytes: float = DEFAULT_DASHBOARD_BYTES,
                      chunk: int = CHUNK, batch: int = 64, tgts: Sequence[Tensor] | None = None) -> LatentDashboards:
    """Dashboards of `latents` (None: all) over `texts` (token ids, each (T,) | (1, T), no padding; texts of one length
    run `batch` at a time; `tgts`: an encoder-decoder's decoder input per text); see the module docstring."""
    k, bins, chunk = _check_count(k, "k"), _check_count(bins, "bins"), _check_count(chunk, "chunk")
    chosen = _chosen(sae, latents)
    site = hook_site(model.config, sae.hook_name)
    read = _read_rows(model, texts, tgts, site)[2]
    held = len(chosen) * (k * 20 + bins * 8 + 16) + sum(len(r) for r in read) * sae.d_in * 4
    if held > max_bytes:
        raise ValueError(f"the texts' residual streams and the dashboards need {held / 1e6:,.1f} MB, more than "
                         f"{max_bytes / 1e6:,.1f} MB: pass fewer texts or latents")
    X, where = site_streams(model, texts, sae, tgts=tgts, batch=batch)
    return dashboards_of(X, where, sae, latents=chosen, k=k, bins=bins, chunk=chunk)


def _chosen(sae: SAE, latents: Sequence[int] | Tensor | None) -> Tensor:
    chosen = torch.arange(sae.d_sae) if latents is None else torch.as_tensor(list(latents), dtype=torch.long)
    if chosen.dim() != 1 or not len(chosen) or int(chosen.min()) < 0 or int(chosen.max()) >= sae.d_sae:
        raise ValueError(f"latents must be a non-empty list of latents 0..{sae.d_sae - 1}")
    return chosen


@torch.no_grad()
def dashboards_of(X: Tensor, where: Tensor, sae: SAE, *, latents: Sequence[int] | Tensor | None = None, k: int = 10,
                  bins: int = 32, chunk: int = CHUNK) -> LatentDashboards:
    """The dashboards from residual streams already read (site_streams: X (N, D), where (N, 2))."""
    k, bins, chunk = _check_count(k, "k"), _check_count(bins, "bins"), _check_count(chunk, "chunk")
    chosen = _chosen(sae, latents)
    n = len(chosen)
    N = X.shape[0]
    if N == 0 or where.shape != (N, 2):
        raise ValueError(f"X (N, D) and where (N, 2) must describe the same tokens, got {tuple(X.shape)} and "
                         f"{tuple(where.shape)}")
    X = X.to(sae.device, sae.dtype)
    device = sae.device
    picked = chosen.to(device)
    kk = min(k, N)
    best_values = torch.zeros(0, n, device=device)
    best_tokens = torch.zeros(0, n, dtype=torch.long, device=device)
    fired = torch.zeros(n, dtype=torch.long, device=device)
    for start in range(0, N, chunk):  # pass 1: running top-k over tokens, firing counts
        f = _encode(sae, X[start:start + chunk], picked)  # (c, n)
        fired += (f != 0).sum(0)
        values = torch.cat([best_values, f])  # (k + c, n)
        tokens = torch.cat([best_tokens, torch.arange(start, start + f.shape[0], device=device)[:, None].expand_as(f)])
        top = values.topk(min(kk, values.shape[0]), dim=0)
        best_values, best_tokens = top.values, tokens.gather(0, top.indices)
    top_max = best_values[0].clamp(min=0)  # (n,) the largest activation of each latent
    counts = torch.zeros(n * bins, dtype=torch.long, device=device)
    scale = torch.where(top_max > 0, bins / top_max, torch.zeros_like(top_max))  # (n,)
    for start in range(0, N, chunk):  # pass 2: histograms of the non-zero activations over [0, max]
        f = _encode(sae, X[start:start + chunk], picked)  # (c, n)
        token, latent = (f != 0).nonzero(as_tuple=True)
        b = (f[token, latent] * scale[latent]).long().clamp(0, bins - 1)
        counts.scatter_add_(0, latent * bins + b, torch.ones_like(b))
    values, tokens = best_values.T.cpu(), best_tokens.T.cpu()  # (n, k)
    none = values <= 0  # a latent that fired on fewer than k tokens: no example in those slots
    where = where.cpu()
    text = torch.where(none, -1, where[tokens.clamp(max=N - 1), 0])
    position = torch.where(none, -1, where[tokens.clamp(max=N - 1), 1])
    if kk < k:  # fewer tokens than k: pad the examples
        pad = (0, k - kk)
        values = torch.nn.functional.pad(values, pad)
        text, position = (torch.nn.functional.pad(t, pad, value=-1) for t in (text, position))
    return LatentDashboards(chosen, N, (fired.double() / N).float().cpu(), top_max.cpu(), values.clamp(min=0),
                            text, position, counts.view(n, bins).cpu())


def _encode(sae: SAE, x: Tensor, latents: Tensor) -> Tensor:
    """(c, D) -> (c, n) activations of the chosen latents (all of them: a plain encode)."""
    if len(latents) == sae.d_sae:
        return sae.encode(x)
    return sae.encode_latents(x, latents)


@dataclass
class LatentExample:
    text: int  # which text
    position: int  # the token the example is about
    value: float  # the latent's activation there
    start: int  # first position of the window
    token_ids: list[int]  # the window's tokens
    activations: list[float]  # the latent's activation at each of them


@torch.no_grad()
def latent_examples(model: Transformer, texts: Sequence[Tensor], sae: SAE, dashboards: LatentDashboards,
                    latent: int, *, window: int = 8, tgts: Sequence[Tensor] | None = None) -> list[LatentExample]:
    """Latent `latent`'s top examples with the `window` tokens before each (and up to window // 2 after) and the
    latent's activation on each of them: the model is run again on those texts only (`tgts`: as latent_dashboards'; an
    example's tokens are then those of the sequence the site reads)."""
    window = _check_count(window, "window")
    site = hook_site(model.config, sae.hook_name)
    rows, tgt_rows, read = _read_rows(model, texts, tgts, site)
    out = []
    for text, position, value in dashboards.examples(latent):
        ids = read[text][None]  # (1, T) the sequence the site reads
        tgt = None if tgt_rows is None else tgt_rows[text][None]
        x = capture_site(model, rows[text][None], site, tgt=tgt)[0]  # (T, D)
        start, end = max(0, position - window), min(ids.shape[1], position + window // 2 + 1)
        acts = sae.encode_latents(x[start:end], torch.tensor([latent]))[:, 0]  # (W,)
        out.append(LatentExample(text, position, value, start, ids[0, start:end].tolist(), acts.tolist()))
    return out

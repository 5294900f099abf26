"""Fitting a TopK sparse autoencoder to residual-stream vectors, as OpenAI's "Scaling and evaluating sparse
autoencoders" (Gao et al. 2024) trains one and SAELens's TopKTrainingSAE follows:

    encode   f = ReLU(TopK((x - b_dec) W_enc + b_enc))        k latents at most per token: L0 <= k by construction
    decode   x_hat = f W_dec + b_dec                           W_dec's rows kept at unit norm
    loss     ||x - x_hat||^2 + aux_coeff * ||e - e_hat||^2     e = x - x_hat (detached); e_hat = the top aux_k
                                                               pre-activations of the dead latents decoded (no b_dec)

The auxiliary loss (AuxK) gives latents that have not fired for `dead_tokens` training tokens a gradient towards the
part of x the live latents miss, so they come back instead of staying dead. Initialisation: W_dec rows random unit
vectors, W_enc = W_dec^T, b_enc = 0, b_dec = the mean of x. The decoder's gradient is projected off its rows before
each Adam step and the rows renormalised after it (OpenAI's unit-norm constraint). Adam at a constant rate, decayed
linearly to 0 over the last `decay` share of the steps (SAELens's lr_decay_steps). The vectors are scaled by one
factor so that E||x|| = sqrt(D) during training (SAELens's expected_average_only_in) and the factor is folded back at
the end: the SAE returned reads the raw residual stream, with unit-norm decoder rows and normalize_activations "none".

Deterministic for a seed: every random draw (initialisation, batch order) comes from one torch.Generator.

Shapes: N training vectors, D = d_in, F = d_sae, B batch of vectors, k latents kept.
    fit_topk(x (N, D), TopKSettings, hook_name) -> FitResult(sae, history)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from ..interpret.sae import SAE

SEED_SALT = 7_919  # the SAE's generator seed is seed * 1_000_003 + salt: never torch.manual_seed(seed)'s stream, which
#                    drew the model's own initial embeddings (a decoder drawn from it starts on the token embeddings)


@dataclass(frozen=True)
class TopKSettings:
    """What a TopK SAE fit uses (the CLI's options)."""

    d_sae: int  # latents
    k: int  # latents kept per token (L0 <= k)
    steps: int = 3000
    batch: int = 4096  # vectors per step
    lr: float = 2e-3  # Adam's rate before the decay
    decay: float = 0.2  # share of the steps over which the rate falls linearly to 0
    aux_k: int = 32  # dead latents that reconstruct the error in the auxiliary loss
    aux_coeff: float = 1 / 32  # OpenAI's alpha
    dead_tokens: int = 50_000  # a latent not fired for this many training vectors is dead (for the AuxK loss)
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("d_sae", "k", "steps", "batch", "aux_k", "dead_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.k > self.d_sae:
            raise ValueError(f"k={self.k} latents kept per token cannot exceed d_sae={self.d_sae}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"lr must be a positive number, got {self.lr!r}")
        if not 0 <= self.decay <= 1:
            raise ValueError(f"decay must be a share of the steps in [0, 1], got {self.decay!r}")
        if not (self.aux_coeff >= 0 and math.isfinite(self.aux_coeff)):
            raise ValueError(f"aux_coeff must be >= 0, got {self.aux_coeff!r}")


@dataclass
class FitResult:
    sae: SAE
    history: list[dict[str, float]]  # {"step", "fvu", "dead", "aux"} every `report_every` steps and at the end
    scale: float  # the training factor: E||x * scale|| = sqrt(D) (folded into the SAE returned)


def lr_at(step: int, settings: TopKSettings) -> float:
    """Constant, then linear decay to 0 over the last `decay` share of the steps."""
    decay_steps = int(settings.steps * settings.decay)
    left = settings.steps - step
    return settings.lr * (min(1.0, left / decay_steps) if decay_steps else 1.0)


def _topk(hidden: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """(B, F) -> the k largest pre-activations' latents (B, k) and their values after ReLU (B, k): SAELens's TopK
    activation, kept sparse (the decoder reads k rows per vector, not all F)."""
    top = hidden.topk(k, dim=-1, sorted=False)
    return top.indices, top.values.relu()


def _decode(latents: Tensor, values: Tensor, W_dec: Tensor) -> Tensor:
    """(B, k) latents and values -> (B, D) = sum of values x their decoder rows (f W_dec for a k-sparse f)."""
    return (values[..., None] * W_dec[latents]).sum(1)  # (B, k, D) summed over k


def batch_losses(batch: Tensor, W_enc: Tensor, b_enc: Tensor, W_dec: Tensor, b_dec: Tensor, k: int,
                 dead: Tensor | None, aux_k: int) -> tuple[Tensor, Tensor, Tensor]:
    """One batch (B, D) -> (the squared error summed over D and averaged over the batch, the AuxK loss (0 without dead
    latents), which latents fired (F,) bool). The AuxK loss: the top aux_k pre-activations among the `dead` latents
    (F,) decode (without b_dec) the error of the live reconstruction, detached, as OpenAI's auxiliary loss does."""
    hidden = (batch - b_dec) @ W_enc + b_enc  # (B, F)
    latents, values = _topk(hidden, k)  # (B, k) each
    error = batch - (_decode(latents, values, W_dec) + b_dec)  # (B, D)
    fired = torch.bincount(latents[values > 0], minlength=W_enc.shape[1]) > 0  # (F,)
    aux = torch.zeros(())
    if dead is not None and bool(dead.any()):
        dead_latents, dead_values = _topk(hidden.masked_fill(~dead, -torch.inf), min(aux_k, int(dead.sum())))
        aux = (error.detach() - _decode(dead_latents, dead_values, W_dec)).pow(2).sum(-1).mean()
    return error.pow(2).sum(-1).mean(), aux, fired


def fit_topk(x: Tensor, settings: TopKSettings, hook_name: str, *, model_name: str | None = None,
             progress: Callable[[int, dict[str, float]], None] | None = None, report_every: int = 100) -> FitResult:
    """Fit a TopK SAE to the rows of x (N, D) (see the module docstring). `progress(step, numbers)` is called every
    `report_every` steps (the CLI's progress bar)."""
    if x.dim() != 2 or x.shape[0] < 2:
        raise ValueError(f"x must be (N, D) training vectors with N >= 2, got shape {tuple(x.shape)}")
    s = settings
    gen = torch.Generator().manual_seed(s.seed * 1_000_003 + SEED_SALT)
    x = x.detach().float().cpu()
    N, D = x.shape
    scale = math.sqrt(D) / float(x.norm(dim=-1).mean())
    xs = x * scale  # (N, D)
    variance = float((xs - xs.mean(0)).pow(2).sum(-1).mean())

    W_dec = torch.randn(s.d_sae, D, generator=gen)
    W_dec = torch.nn.Parameter(W_dec / W_dec.norm(dim=-1, keepdim=True))  # (F, D) unit rows
    W_enc = torch.nn.Parameter(W_dec.detach().T.clone())  # (D, F)
    b_enc = torch.nn.Parameter(torch.zeros(s.d_sae))
    b_dec = torch.nn.Parameter(xs.mean(0).clone())
    optimizer = torch.optim.Adam([W_enc, b_enc, W_dec, b_dec], lr=s.lr)
    idle = torch.zeros(s.d_sae, dtype=torch.long)  # training vectors since each latent last fired
    order, cursor = torch.randperm(N, generator=gen), 0
    history: list[dict[str, float]] = []
    for step in range(s.steps):
        if cursor + s.batch > N:  # a fresh permutation each epoch
            order, cursor = torch.randperm(N, generator=gen), 0
        batch = xs[order[cursor:cursor + s.batch]]  # (B, D)
        cursor += s.batch
        dead = idle >= s.dead_tokens  # (F,)
        mse, aux, fired = batch_losses(batch, W_enc, b_enc, W_dec, b_dec, s.k, dead if s.aux_coeff else None,
                                       s.aux_k)
        idle = torch.where(fired, 0, idle + batch.shape[0])
        loss = mse + s.aux_coeff * aux
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        with torch.no_grad():  # keep the rows on the unit sphere: no gradient along them, renormalised after
            W_dec.grad -= (W_dec.grad * W_dec).sum(-1, keepdim=True) * W_dec
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step, s)
        optimizer.step()
        with torch.no_grad():
            W_dec /= W_dec.norm(dim=-1, keepdim=True)
        done = step + 1
        if done % report_every == 0 or done == s.steps:
            numbers = {"step": done, "fvu": round(float(mse.detach()) / variance, 6), "dead": int(dead.sum()),
                       "aux": round(float(aux.detach()), 6)}
            history.append(numbers)
            if progress is not None:
                progress(done, numbers)
    # fold the training scale back: f' = f / scale is the same top-k of (x - b_dec / scale) W_enc + b_enc / scale,
    # and f' W_dec + b_dec / scale = (f W_dec + b_dec) / scale
    sae = SAE(W_enc.detach().clone(), (b_enc / scale).detach().clone(), W_dec.detach().clone(),
              (b_dec / scale).detach().clone(), "topk", hook_name, k=s.k, model_name=model_name)
    return FitResult(sae, history, scale)

"""A sparse autoencoder (SAE) in SAELens's format, as a frozen object holding its tensors, with SAELens's encode and
decode as pure functions of it.

The code followed, line by line, is sae-lens 6.54.12 (checked against it in tests/interpret/test_sae_reference.py):
  sae_lens/saes/sae.py           SAE.process_sae_in (cast, run-time normalisation, x - b_dec * apply_b_dec_to_input)
                                 and SAE._setup_activation_normalization (the run-time normalisations)
  sae_lens/saes/standard_sae.py  StandardSAE.encode: relu(sae_in @ W_enc + b_enc); decode: f @ W_dec + b_dec, then the
                                 run-time normalisation undone
  sae_lens/saes/jumprelu_sae.py  JumpReLUSAE.encode: relu(h) * (h > threshold), a strict compare; decode as standard
  sae_lens/saes/topk_sae.py      TopKSAE.encode: h (times each decoder row's norm if rescale_acts_by_decoder_norm),
                                 torch.topk(h, k, sorted=False), ReLU on the k kept values (after the top-k: a kept
                                 negative value becomes 0), zeros elsewhere; decode: f (divided by each decoder row's
                                 norm if rescale_acts_by_decoder_norm) @ W_dec + b_dec

normalize_activations, as SAELens applies it when it runs an SAE loaded from a folder:
  "none", "expected_average_only_in", "covariance_whitening"  nothing at run time (SAELens folds the dataset-wide
                                 factor or the whitening into the weights when training ends, so a saved inference SAE
                                 has it in W_enc / W_dec already)
  "constant_norm_rescale"        in: x * sqrt(d_in) / ||x||; out: divided by the same factor
  "layer_norm"                   in: (x - mean) / (std + 1e-5), std with Bessel's correction (torch's default);
                                 out: y * std + mean (SAELens undoes it without the eps)
SAELens keeps the run-time factor on the module between encode and decode; here decode(f, x) takes it from the input x
the latents came from, so nothing is stored between calls (one SAE serves many users).

Shapes: D = d_in (the residual stream width), F = d_sae (latents), ... any leading dimensions.
    SAE.encode(x (..., D)) -> f (..., F)            SAE.decode(f (..., F), x (..., D) | None) -> (..., D)
    SAE.pre_activations(x) -> h (..., F)            SAE.decode_change(delta (..., n), latents (n,), x) -> (..., D)
    SAE.encode_latents(x, latents (n,)) -> (..., n)  random_sae(d_in, d_sae, hook_name, ...) -> SAE
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import torch
from torch import Tensor

ARCHITECTURES = ("standard", "topk", "jumprelu")
IDENTITY_NORMALIZATIONS = ("none", "expected_average_only_in", "covariance_whitening")
RUN_TIME_NORMALIZATIONS = ("constant_norm_rescale", "layer_norm")
NORMALIZATIONS = IDENTITY_NORMALIZATIONS + RUN_TIME_NORMALIZATIONS
LAYER_NORM_EPS = 1e-5  # SAELens's run_time_activation_ln_in default


@dataclass(frozen=True, eq=False)
class SAE:
    """The tensors and settings of one SAE (float32, on one device); see the module docstring for its maths."""

    W_enc: Tensor  # (D, F)
    b_enc: Tensor  # (F,)
    W_dec: Tensor  # (F, D)
    b_dec: Tensor  # (D,)
    architecture: str  # "standard" | "topk" | "jumprelu"
    hook_name: str  # TransformerLens hook name, e.g. "blocks.3.hook_resid_pre" (explorer.interpret.sae.hooks)
    threshold: Tensor | None = None  # (F,) JumpReLU only
    k: int | None = None  # TopK only: latents kept per token
    apply_b_dec_to_input: bool = True
    normalize_activations: str = "none"
    rescale_acts_by_decoder_norm: bool = False  # TopK only
    model_name: str | None = None  # metadata.model_name: the model it was trained on
    sparsity: Tensor | None = None  # (F,) log10 feature density from sparsity.safetensors, if the folder has one
    metadata: Mapping[str, Any] = field(default_factory=dict)  # cfg.json's metadata, as read (saved back by save_sae)
    source: str = ""  # where it was loaded from, for messages
    notes: tuple[str, ...] = ()  # warnings from loading (a model-name mismatch, a normalisation applied as nothing)

    def __post_init__(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"SAE architecture {self.architecture!r} is not supported; supported: "
                             f"{', '.join(ARCHITECTURES)}")
        if self.normalize_activations not in NORMALIZATIONS:
            raise ValueError(f"normalize_activations {self.normalize_activations!r} is not supported; supported: "
                             f"{', '.join(NORMALIZATIONS)}")
        D, F = self.W_enc.shape
        shapes = {"b_enc": (self.b_enc, (F,)), "W_dec": (self.W_dec, (F, D)), "b_dec": (self.b_dec, (D,))}
        if self.architecture == "jumprelu":
            if self.threshold is None:
                raise ValueError("a jumprelu SAE needs its threshold (F,)")
            shapes["threshold"] = (self.threshold, (F,))
        for name, (tensor, shape) in shapes.items():
            if tuple(tensor.shape) != shape:
                raise ValueError(f"{name} must be {shape} for W_enc {(D, F)}, got {tuple(tensor.shape)}")
        if self.architecture == "topk" and (self.k is None or not 1 <= self.k <= F):
            raise ValueError(f"a topk SAE needs k between 1 and d_sae={F}, got {self.k!r}")

    # ------------------------------------------------------------------ sizes
    @property
    def d_in(self) -> int:
        return self.W_enc.shape[0]

    @property
    def d_sae(self) -> int:
        return self.W_enc.shape[1]

    @property
    def device(self) -> torch.device:
        return self.W_enc.device

    @property
    def dtype(self) -> torch.dtype:
        return self.W_enc.dtype

    def nbytes(self) -> int:
        tensors = (self.W_enc, self.b_enc, self.W_dec, self.b_dec, self.threshold, self.sparsity)
        return sum(t.numel() * t.element_size() for t in tensors if t is not None)

    def to(self, device: str | torch.device) -> "SAE":
        """A copy on `device` (the same object if it is there already)."""
        device = torch.device(device)
        if self.device == device:
            return self
        move = {name: getattr(self, name).to(device) for name in ("W_enc", "b_enc", "W_dec", "b_dec")}
        for name in ("threshold", "sparsity"):
            value = getattr(self, name)
            move[name] = None if value is None else value.to(device)
        return replace(self, **move)

    # ------------------------------------------------------------------ encode / decode
    def _check_input(self, x: Tensor, name: str = "x") -> Tensor:
        if x.shape[-1] != self.d_in:
            raise ValueError(f"{name} must end with the SAE's width d_in={self.d_in}, got shape {tuple(x.shape)}")
        return x.to(device=self.device, dtype=self.dtype)

    def _norm_in(self, x: Tensor) -> tuple[Tensor, Callable[[Tensor, bool], Tensor]]:
        """x -> (normalised x, undo): undo(y, shift) is SAELens's run_time_activation_norm_fn_out for this x (without
        the mean when `shift` is False: the linear part, for differences of reconstructions)."""
        if self.normalize_activations == "constant_norm_rescale":
            coeff = (self.d_in ** 0.5) / x.norm(dim=-1, keepdim=True)  # (..., 1)
            return x * coeff, lambda y, shift: y / coeff
        if self.normalize_activations == "layer_norm":
            mu = x.mean(dim=-1, keepdim=True)  # (..., 1)
            centred = x - mu
            std = centred.std(dim=-1, keepdim=True)  # Bessel-corrected, as torch.Tensor.std and SAELens
            return centred / (std + LAYER_NORM_EPS), lambda y, shift: y * std + mu if shift else y * std
        return x, lambda y, shift: y

    def pre_activations(self, x: Tensor) -> Tensor:
        """(..., D) -> (..., F): sae_in @ W_enc + b_enc (for TopK with rescale_acts_by_decoder_norm, times each decoder
        row's norm: what the top-k compares)."""
        x, _ = self._norm_in(self._check_input(x))
        sae_in = x - self.b_dec if self.apply_b_dec_to_input else x
        hidden = sae_in @ self.W_enc + self.b_enc  # (..., F)
        if self.architecture == "topk" and self.rescale_acts_by_decoder_norm:
            hidden = hidden * self.W_dec.norm(dim=-1)
        return hidden

    def activate(self, hidden: Tensor) -> Tensor:
        """Pre-activations (..., F) -> latents (..., F), by the architecture's activation."""
        if self.architecture == "standard":
            return hidden.relu()
        if self.architecture == "jumprelu":
            return hidden.relu() * (hidden > self.threshold).to(hidden.dtype)
        top = torch.topk(hidden, k=self.k, dim=-1, sorted=False)
        return torch.zeros_like(hidden).scatter_(-1, top.indices, top.values.relu())

    def encode(self, x: Tensor) -> Tensor:
        """(..., D) residual stream -> (..., F) latent activations, as SAELens's encode."""
        return self.activate(self.pre_activations(x))

    def encode_latents(self, x: Tensor, latents: Tensor) -> Tensor:
        """(..., D) -> (..., n): encode(x)[..., latents], computing only those columns when a latent depends on its
        own column alone (standard, jumprelu; TopK compares all latents, so it encodes them all)."""
        latents = torch.as_tensor(latents, dtype=torch.long, device=self.device)
        if self.architecture == "topk":
            return self.encode(x)[..., latents]
        x, _ = self._norm_in(self._check_input(x))
        sae_in = x - self.b_dec if self.apply_b_dec_to_input else x
        hidden = sae_in @ self.W_enc[:, latents] + self.b_enc[latents]  # (..., n)
        if self.architecture == "standard":
            return hidden.relu()
        return hidden.relu() * (hidden > self.threshold[latents]).to(hidden.dtype)

    def _decoder_input(self, f: Tensor) -> Tensor:
        if self.architecture == "topk" and self.rescale_acts_by_decoder_norm:
            return f * (1 / self.W_dec.norm(dim=-1))
        return f

    def _norm_out(self, y: Tensor, x: Tensor | None, shift: bool) -> Tensor:
        if self.normalize_activations not in RUN_TIME_NORMALIZATIONS:
            return y
        if x is None:
            raise ValueError(f"this SAE normalises each input ({self.normalize_activations}): decode needs the input x "
                             "the latents came from, to undo its scaling")
        _, undo = self._norm_in(self._check_input(x))
        return undo(y, shift)

    def decode(self, f: Tensor, x: Tensor | None = None) -> Tensor:
        """(..., F) latents -> (..., D) reconstruction, as SAELens's decode. `x`: the input the latents were encoded
        from, needed only by the run-time normalisations (constant_norm_rescale, layer_norm) to undo its scaling."""
        if f.shape[-1] != self.d_sae:
            raise ValueError(f"latents must end with d_sae={self.d_sae}, got shape {tuple(f.shape)}")
        f = f.to(device=self.device, dtype=self.dtype)
        return self._norm_out(self._decoder_input(f) @ self.W_dec + self.b_dec, x, shift=True)

    def decode_change(self, delta: Tensor, latents: Tensor, x: Tensor | None = None) -> Tensor:
        """decode(f + delta on `latents`) - decode(f), computed as the linear map it is: delta (..., n) of the n latents
        (n,) -> (..., D), without b_dec (it cancels) and without the other latents (exactly 0 when delta is 0)."""
        latents = torch.as_tensor(latents, dtype=torch.long, device=self.device)
        delta = delta.to(device=self.device, dtype=self.dtype)
        if self.architecture == "topk" and self.rescale_acts_by_decoder_norm:
            delta = delta / self.W_dec[latents].norm(dim=-1)
        return self._norm_out(delta @ self.W_dec[latents], x, shift=False)  # (..., n) @ (n, D)



def random_sae(d_in: int, d_sae: int, hook_name: str, *, architecture: str = "standard", k: int | None = None,
               seed: int = 0, model_name: str | None = None, device: str | torch.device = "cpu") -> SAE:
    """An SAE with seeded random weights, shaped as SAELens initialises one (decoder rows of norm 1 in random
    directions, W_enc = W_dec.T, b_dec = 0) with a small negative encoder bias so that some latents are off: for
    tests, benchmarks and examples, not for reading a model."""
    gen = torch.Generator().manual_seed(seed)
    W_dec = torch.randn(d_sae, d_in, generator=gen)
    W_dec /= W_dec.norm(dim=-1, keepdim=True)
    b_enc = -0.1 * torch.rand(d_sae, generator=gen)
    threshold = 0.05 * torch.rand(d_sae, generator=gen) if architecture == "jumprelu" else None
    if architecture == "topk" and k is None:
        k = min(32, d_sae)
    sae = SAE(W_dec.T.contiguous(), b_enc, W_dec, torch.zeros(d_in), architecture, hook_name, threshold=threshold,
              k=k, model_name=model_name, source=f"random (seed {seed})")
    return sae.to(device)

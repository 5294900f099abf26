"""SAEs with random weights off any initialisation, one per architecture and run-time normalisation, shared by
tests/interpret/test_sae.py (hand reference) and tests/interpret/test_sae_reference.py (SAELens itself)."""

from __future__ import annotations

import torch

from explorer.interpret.sae import SAE

D, F = 24, 96
CASES = {  # architecture, normalize_activations, apply_b_dec_to_input, rescale_acts_by_decoder_norm
    "standard": ("standard", "none", True, False),
    "standard-no-b-dec-in": ("standard", "none", False, False),
    "standard-constant-norm": ("standard", "constant_norm_rescale", True, False),
    "standard-layer-norm": ("standard", "layer_norm", True, False),
    "standard-expected-average": ("standard", "expected_average_only_in", True, False),
    "jumprelu": ("jumprelu", "none", True, False),
    "jumprelu-layer-norm": ("jumprelu", "layer_norm", False, False),
    "topk": ("topk", "none", True, False),
    "topk-rescaled": ("topk", "none", True, True),
    "topk-rescaled-constant-norm": ("topk", "constant_norm_rescale", False, True),
}


def random_weights(architecture: str, seed: int, d: int = D, f: int = F) -> dict[str, torch.Tensor]:
    """Decoder rows of different norms, biases and thresholds that matter."""
    gen = torch.Generator().manual_seed(seed)
    weights = {"W_enc": torch.randn(d, f, generator=gen) * 0.4, "b_enc": torch.randn(f, generator=gen) * 0.3,
               "W_dec": torch.randn(f, d, generator=gen) * torch.rand(f, 1, generator=gen) * 0.5,
               "b_dec": torch.randn(d, generator=gen) * 0.5}
    if architecture == "jumprelu":
        weights["threshold"] = torch.rand(f, generator=gen) * 0.6
    return weights


def make_sae(case: str, seed: int = 0, *, d: int = D, f: int = F, hook_name: str = "blocks.1.hook_resid_pre",
             model_name: str | None = "tiny") -> SAE:
    architecture, norm, b_dec_in, rescale = CASES[case]
    return SAE(**random_weights(architecture, seed, d, f), architecture=architecture, hook_name=hook_name,
               k=12 if architecture == "topk" else None, apply_b_dec_to_input=b_dec_in, normalize_activations=norm,
               rescale_acts_by_decoder_norm=rescale, model_name=model_name)


def inputs(seed: int = 1, d: int = D) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(3, 7, d, generator=gen) * 2 + torch.randn(d, generator=gen)  # (B, T, D), off centre

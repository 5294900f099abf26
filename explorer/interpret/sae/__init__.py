"""Sparse autoencoders (SAEs) in SAELens's format: load and save them, read a sentence through one, switch its latents
off / clamp / add them like heads, and steer from a contrast (ActAdd) without one.

    core        the SAE object (tensors + settings), SAELens's encode / decode
    files       load_sae / save_sae (cfg.json + sae_weights.safetensors [+ sparsity.safetensors])
    sources     shipped SAEs, allowed folders, Hub repos' folders: the allow-list for typed names
    hooks       TransformerLens hook names (metadata.hook_name) -> the model's residual-stream sites
    switches    LatentSwitches: "12:off,40:clamp=3.5,7:add=-2", parsed, validated, formatted for links
    splice      the SAE spliced into a run (error term kept), baseline vs switched outputs
    steer       contrast steering (ActAdd)
    features    the Features tab's computations and SAELens's metrics (L0, explained variance, CE loss recovered)
    dashboards  per-latent top examples, density and activation histograms over a set of texts
    latent_match  which latents are plainly one thing: precision / recall of their firing against named token properties
"""

from .core import ARCHITECTURES, NORMALIZATIONS, SAE, random_sae
from .dashboards import (LatentDashboards, LatentExample, dashboards_of, latent_dashboards, latent_examples,
                         site_streams)
from .features import (FeaturesView, LatentReading, SAEMetrics, explained_variance, features_view,
                       features_view_bytes, latent_activations, latent_tokens, read_latents, reading_of, sae_metrics,
                       strongest_latents)
from .latent_match import LatentMatch, match_latents
from .saelens_files import DEFAULT_MAX_SAE_BYTES, SAEWarning, load_sae, log_density, save_sae
from .sources import SAEFileError, resolve_sae_source, shipped_saes
from .hooks import hook_site, parse_hook_name, site_hook_name
from .splice import (ContinuedText, SteeredOutputs, capture_site, sae_hook, splice_sae, steered_outputs,
                     switch_outputs)
from .steer import ContrastSteering, add_hook, contrast_steering, contrast_vector, layer_site
from .switches import LatentSwitch, LatentSwitches

__all__ = [
    "ARCHITECTURES", "ContinuedText", "ContrastSteering", "DEFAULT_MAX_SAE_BYTES", "FeaturesView", "LatentDashboards",
    "LatentExample", "LatentMatch", "LatentReading", "LatentSwitch", "LatentSwitches", "NORMALIZATIONS", "SAE",
    "SAEFileError", "SAEMetrics", "SAEWarning", "SteeredOutputs", "add_hook", "capture_site", "contrast_steering",
    "contrast_vector", "dashboards_of", "explained_variance", "features_view", "features_view_bytes", "hook_site",
    "latent_activations", "latent_dashboards", "latent_examples", "latent_tokens", "layer_site", "load_sae",
    "log_density", "match_latents", "parse_hook_name", "random_sae", "read_latents", "reading_of",
    "resolve_sae_source", "sae_hook", "sae_metrics", "save_sae", "shipped_saes", "site_hook_name", "site_streams",
    "splice_sae", "steered_outputs", "strongest_latents", "switch_outputs",
]

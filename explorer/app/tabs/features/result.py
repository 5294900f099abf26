"""What the Features tab computes, each a module-level function `fn(loaded, request, max_tokens)` that
explorer.app.serving.compute runs (on ZeroGPU in a worker: plain requests in, small picklable results out):

  features(...)       sentence 1 read through an SAE (explorer.interpret.sae.features_view, one pass): the strongest
                      latents at every token (the heatmap's columns, exact at every token), the reconstruction on this
                      sentence (explained variance, L0, error norms), and one latent's dashboard: its activation along
                      the sentence, the tokens its decoder row promotes and suppresses (through the frozen final norm
                      and the unembedding, as a head's), and its density, histogram and top examples over the model's
                      own example set (explorer.app.tabs.features.dashboards)
  switch_latents(...) baseline vs latents switched (off / clamp / add), the SAE's error term kept
  steer(...)          baseline vs a contrast's steering vector added (ActAdd), no SAE needed

The sentence is read as the other tabs read it (explorer.app.run.readings): a sequence model's with its own greedy
answer, so a decoder SAE sees the answer's tokens too. Shapes: T tokens the SAE reads, n latents shown, k per token.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ....checkpoints import LoadedModel
from ....interpret.sae import (SAE, LatentSwitches, add_hook, contrast_vector, features_view, features_view_bytes,
                               hook_site, sae_hook)
from ....interpret.sae.dashboards import CHUNK as DASHBOARD_CHUNK
from ...run.inputs import codec_for, encode_inputs
from ...run.readings import read_texts
from ...run.request_memory import request_bytes
from ...serving.errors import AppError
from ...serving.limits import MAX_NEW_TOKENS
from .changed_output import OutputComparison, compare_outputs
from .dashboards import STREAM_BYTES, LatentCard, card_of
from .sae_store import SAESource, fitted, shared_sae
from .why_same import silent_latents, zero_vector

TOP_K = 8  # latents kept per token
COLUMNS = 24  # the heatmap's latents: the sentence's strongest
TOKENS_K = 10  # promoted / suppressed tokens listed
MAX_COEFFICIENT = 1e4  # |steering coefficient| at most


@dataclass(frozen=True)
class FeatureRequest:
    model_key: str  # the session's registry key (the dashboards are kept per model and SAE)
    model_name: str  # the page's name for the model ("" for a built one): an SAE trained on another is noted
    text: str
    sae: SAESource
    latent: int | None = None  # None: the strongest at the last token


@dataclass(frozen=True)
class FeatureReading:
    """The tab's reading of one sentence through one SAE, small and plain."""

    sae_name: str
    hook_name: str
    site: str  # the model's site, e.g. "decoder.2.resid_pre"
    d_sae: int
    architecture: str
    labels: list[str]  # (T,) the tokens the SAE reads
    columns: np.ndarray  # (n,) the strongest latents of the sentence
    column_values: np.ndarray  # (T, n) their activation at every token
    l0: np.ndarray  # (T,) latents that fire at each token
    input_norm: np.ndarray  # (T,) ||x||
    error_norm: np.ndarray  # (T,) ||x - decode(encode(x))||
    explained_variance: float
    mse: float
    latent: int
    activations: np.ndarray  # (T,) the latent along the sentence
    position: int  # where the latent's tokens are read (the last token)
    promoted: list[tuple[str, float]] | None  # (label, logit change of add=1) strongest first; None: no direct path
    suppressed: list[tuple[str, float]] | None
    card: LatentCard | None  # None when the dashboards could not be built (a note says why)
    notes: list[str] = field(default_factory=list)


def check_latent(latent: int | None, d_sae: int) -> None:
    if latent is not None and not 0 <= latent < d_sae:
        raise AppError(f"Latent {latent} is not a latent of this SAE: its latents are 0..{d_sae - 1}.")


def features(loaded: LoadedModel, request: FeatureRequest, max_tokens: int) -> FeatureReading:
    model = loaded.model
    sae = shared_sae(request.sae, model.device)
    notes = fitted(sae, loaded, request.model_name)
    check_latent(request.latent, sae.d_sae)
    site = hook_site(loaded.config, sae.hook_name)
    reading = read_texts(loaded, request.text, None, max_tokens)[0]
    src, tgt = reading.tensors(model.device)
    encoder_site = loaded.arch == "encoder-decoder" and site.startswith("encoder.")
    labels = reading.src_labels if encoder_site else reading.decoder_labels
    try:
        view = features_view(model, src, sae, latent=request.latent, k=TOP_K, tokens_k=TOKENS_K, tgt=tgt,
                             columns=COLUMNS)
    except ValueError as err:
        raise AppError(f"The SAE cannot read this model here: {err}") from None
    codec = codec_for(loaded)
    promoted = suppressed = None
    if view.tokens is not None:
        t = view.tokens
        promoted = list(zip(codec.labels(t.promoted_ids.tolist()), t.promoted_logits.float().tolist()))
        suppressed = list(zip(codec.labels(t.suppressed_ids.tolist()), t.suppressed_logits.float().tolist()))
    else:
        notes.append("An encoder site of an encoder-decoder reaches the logits only through cross-attention: no "
                     "promoted or suppressed tokens.")
    try:
        card = card_of(loaded, request.model_key, sae, request.sae.key, view.latent, codec, max_tokens)
    except (ValueError, AppError) as err:
        card = None
        notes.append(f"No dashboard: {err}")
    r = view.reading
    return FeatureReading(request.sae.text, sae.hook_name, site, sae.d_sae, sae.architecture, list(labels),
                          view.columns.numpy(), view.column_values.float().numpy(), r.l0.numpy(),
                          r.input_norm.float().numpy(), r.error_norm.float().numpy(), float(r.explained_variance),
                          float(r.mse), view.latent, view.activations.float().numpy(), view.position, promoted,
                          suppressed, card, notes)


def feature_bytes(loaded: LoadedModel, sae: SAE, tokens: int, built: bool) -> int:
    """What `features` may hold at once above the model and the SAE (the memory gate): features_view's estimate on
    `tokens` tokens and, unless the dashboards are `built` already for this model and SAE, their build (the example
    set's streams and a chunk of its latents five times over, as features_view counts them)."""
    total = features_view_bytes(loaded.config, sae, tokens)
    return total if built else total + STREAM_BYTES + 5 * 4 * DASHBOARD_CHUNK * sae.d_sae


# ----------------------------------------------------------------------------------------------- outputs
@dataclass(frozen=True)
class SwitchRequest:
    model_name: str
    text: str
    sae: SAESource
    switches: str  # LatentSwitches' link form, checked: "12:off,40:clamp=3.5"
    new_tokens: int | None = None  # a language model's continuation (the page's "Continue")


@dataclass(frozen=True)
class SteerRequest:
    text: str  # the run steered: sentence 1
    toward: str  # the text whose residual the vector points to ("" : sentence 1)
    contrast: str  # the text it points away from
    layer: int
    coefficient: float
    new_tokens: int | None = None


def _sentence(loaded: LoadedModel, text: str, max_tokens: int) -> tuple[list[int], list[str], list[str]]:
    inputs = encode_inputs(loaded, codec_for(loaded), text, None, max_tokens)
    return inputs.rows[0], inputs.labels[0], inputs.notices


def switch_latents(loaded: LoadedModel, request: SwitchRequest, max_tokens: int) -> OutputComparison:
    sae = shared_sae(request.sae, loaded.model.device)
    notes = fitted(sae, loaded, request.model_name)
    try:
        switches = LatentSwitches.parse(request.switches).check(sae.d_sae)
    except ValueError as err:
        raise AppError(f"Latent switches: {err}") from None
    ids, labels, cut = _sentence(loaded, request.text, max_tokens)
    what = (f"latents {switches.format()} of the SAE at {sae.hook_name}" if switches else
            "nothing switched: the SAE is spliced in with its error term, so the run is the model's own")
    out = compare_outputs(loaded, codec_for(loaded), ids, labels, sae_hook(loaded.model, sae, switches),
                          change="switched", what=what, new_tokens=request.new_tokens, nothing_changed=not switches)
    out.notes.extend(notes + cut)
    out.why.extend(silent_latents(loaded, sae, switches, request.text, max_tokens) if not out.differs else [])
    return out


def quoted(text: str, limit: int = 40) -> str:
    text = text.strip()
    return f"“{text if len(text) <= limit else text[:limit - 1] + '…'}”"


def steer_site(loaded: LoadedModel, layer: int) -> str:
    """The input of block `layer` of the stack steered: the decoder of a decoder-only model, else the encoder (an
    encoder-decoder's source side: the texts are sources)."""
    stack = "decoder" if loaded.arch == "decoder" else "encoder"
    n = loaded.config.decoder_layers if stack == "decoder" else loaded.config.encoder_layers
    if not 0 <= layer < n:
        raise AppError(f"Layer {layer} is not a layer of this model's {stack}: choose 0..{n - 1}.")
    return f"{stack}.{layer}.resid_pre"


def steer(loaded: LoadedModel, request: SteerRequest, max_tokens: int) -> OutputComparison:
    if not request.contrast.strip():
        raise AppError("Type a contrast text: the steering vector is the residual of sentence 1 (or the text to steer "
                       "toward) minus that of the contrast text.")
    if not abs(request.coefficient) <= MAX_COEFFICIENT:
        raise AppError(f"The coefficient must be a number between −{MAX_COEFFICIENT:g} and {MAX_COEFFICIENT:g}, got "
                       f"{request.coefficient!r}.")
    site = steer_site(loaded, request.layer)
    codec = codec_for(loaded)
    pair = encode_inputs(loaded, codec, request.toward.strip() or request.text, request.contrast, max_tokens)
    vector = contrast_vector(loaded.model, torch.tensor(pair.rows[0]), torch.tensor(pair.rows[1]), site)
    ids, labels, cut = _sentence(loaded, request.text, max_tokens)
    toward = "sentence 1" if not request.toward.strip() else quoted(request.toward)
    what = (f"{request.coefficient:g} × (residual of {toward} − residual of {quoted(request.contrast)}, last "
            f"tokens, norm {float(vector.norm()):.3g}) added at {site}, every position")
    out = compare_outputs(loaded, codec, ids, labels, add_hook(site, vector, float(request.coefficient)),
                          change="steered", what=what, new_tokens=request.new_tokens,
                          nothing_changed=request.coefficient == 0)
    out.notes.extend(cut + pair.notices)
    out.why.extend(zero_vector(vector, request.layer, pair.labels[0], pair.labels[1]))
    return out


def outputs_bytes(loaded: LoadedModel, tokens: int) -> int:
    """What a baseline-vs-changed comparison may hold (the memory gate): two runs and their generation, bounded by
    the page's estimate of a toggled Run (with every attention weight, which these runs do not even keep)."""
    return request_bytes(loaded.config, 1, tokens, toggled=True)


def most_tokens(loaded: LoadedModel, text: str, max_tokens: int) -> int:
    """Tokens of sentence 1 as the model reads it, at most (a sequence model adds its answer)."""
    return len(encode_inputs(loaded, codec_for(loaded), text, None, max_tokens).rows[0]) + MAX_NEW_TOKENS

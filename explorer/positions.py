"""The positional scheme of a model, as data and figures: which scheme it uses, and the numbers that
show it, computed from the model's own config and weights (nothing is run but the model's own
position code; `explorer.viz` draws them).

Shapes: T positions, D model width, R rotary width, H heads, K distances.

    scheme_of(config)                        -> "learned" | "sinusoidal" | "rotary" | "relative" | "none"
    position_tables(model, length)           -> {"encoder"|"decoder": (T, D)} tables added to the embeddings,
                                                from position 0 (BART's / RoBERTa's offset rows skipped)
    rotary_frequencies(config)               -> (R/2,) angle per position of each rotating pair, after scaling
    rotary_scores(config, max_distance)      -> distances (K,), q.k of a fixed query and key (all ones) over
                                                their distance, relative to distance 0, via the model's rotation
    relative_bias(model, stack, max_distance) -> distances (K,), (H, K) the bias each head adds (T5)
    positional_figures(loaded, length)       -> ModelPositions(scheme, explanation, figures by name)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go
import torch

from . import viz
from .model import Transformer, TransformerConfig
from .model.rotary import apply_rotary, inverse_frequencies, rotary_tables
from .viz.schemes import relative_bias_heatmap, rotary_distance_chart, rotary_frequency_chart

if TYPE_CHECKING:
    from .checkpoints import LoadedModel

EXPLANATIONS = {
    "learned": "Learned positions: a trained vector per position is added to each token's embedding. The heatmap "
               "compares every position's vector with every other's (cosine similarity): neighbours look alike.",
    "sinusoidal": "Sinusoidal positions: a fixed table of sines and cosines of geometrically spaced frequencies is "
                  "added to each token's embedding.",
    "rotary": "Rotary positions (RoPE): nothing is added to the embeddings; queries and keys are rotated pair by pair "
              "by an angle proportional to their position, so each score depends on how far apart the two tokens "
              "are. Fast pairs turn a lot per token, slow pairs a little.",
    "relative": "T5's relative position bias: nothing is added to the embeddings; each head adds a learned number to "
                "the score of every key, chosen by the (bucketed) distance between key and query, in every layer.",
    "none": "No positional information: the model sees its input as a bag of tokens.",
}


def scheme_of(config: TransformerConfig) -> str:
    return config.positional


@torch.no_grad()
def position_tables(model: Transformer, length: int) -> dict[str, np.ndarray]:
    """The (T, D) table each stack adds to its embeddings, from position 0 (learned or sinusoidal models)."""
    c = model.config
    if c.positional not in ("learned", "sinusoidal"):
        return {}
    embeds = {"encoder": model.src_embed, "decoder": model.tgt_embed}
    if c.positional == "sinusoidal" and c.arch == "encoder-decoder":
        embeds.pop("decoder")  # the same formula in both stacks
    return {stack: e.position_matrix()[: min(length, c.max_len)].float().cpu().numpy()
            for stack, e in embeds.items() if e is not None}


def rotary_frequencies(config: TransformerConfig) -> np.ndarray:
    return inverse_frequencies(config).double().numpy()


@torch.no_grad()
def rotary_scores(config: TransformerConfig, max_distance: int) -> tuple[np.ndarray, np.ndarray]:
    """q.k of a query and a key whose rotating dimensions are all 1, the query at position `max_distance` and
    the key at each position 0..max_distance (distance max..0), rotated by the model's own rotary code."""
    R = config.rotary_dim
    positions = torch.arange(max_distance + 1)[None]  # (1, K)
    tables = rotary_tables(positions, config)  # (1, 1, K, R)
    rotated = apply_rotary(torch.ones(1, 1, max_distance + 1, R), tables)[0, 0]  # (K, R) every position's vector
    scores = rotated @ rotated[-1]  # (K,) key at position k . query at the last position
    distances = max_distance - np.arange(max_distance + 1)
    return distances[::-1].copy(), (scores / R).numpy()[::-1].copy()


@torch.no_grad()
def relative_bias(model: Transformer, stack: str, max_distance: int) -> tuple[np.ndarray, np.ndarray]:
    """Signed distances (key - query) and the (H, K) bias each head of `stack` adds: -max..max in the
    encoder (bidirectional), -max..0 in the decoder (a query sees no later key)."""
    module = getattr(model, stack).relative_bias
    hi = max_distance if module.bidirectional else 0
    distances = torch.arange(-max_distance, hi + 1)
    return distances.numpy(), module.by_distance(distances).float().cpu().numpy()


@dataclass
class ModelPositions:
    scheme: str  # "learned", "sinusoidal", "rotary", "relative" or "none"
    explanation: str  # one paragraph for a person
    figures: dict[str, go.Figure] = field(default_factory=dict)  # in display order


def describe_rotary(config: TransformerConfig) -> str:
    scaling = config.rope_scaling["rope_type"] if config.rope_scaling else "no"
    return (f"{config.rotary_dim} of {config.resolved_head_dim} dimensions per head rotate, base (rope_theta) "
            f"{config.pos_base:g}, {scaling} scaling")


def positional_figures(loaded: LoadedModel, length: int = 64) -> ModelPositions:
    """The loaded model's own positional scheme, explained, with its figures."""
    model, c = loaded.model, loaded.config
    scheme = scheme_of(c)
    out = ModelPositions(scheme, EXPLANATIONS[scheme])
    if scheme in ("learned", "sinusoidal"):
        for stack, table in position_tables(model, length).items():
            what = "learned table" if scheme == "learned" else f"sinusoid, {c.sinusoid_layout} layout"
            name = f" ({stack})" if c.arch == "encoder-decoder" else ""
            out.figures[f"{stack} similarity"] = viz.position_similarity(
                table, title=f"Similarity of positions{name}: {what} (cosine)")
            out.figures[f"{stack} table"] = viz.positional_heatmap(table, title=f"Position table{name}: {what}")
    elif scheme == "rotary":
        out.explanation += f" This model: {describe_rotary(c)}."
        out.figures["frequencies"] = rotary_frequency_chart(rotary_frequencies(c),
                                                            title=f"Rotary frequencies ({describe_rotary(c)})")
        distances, scores = rotary_scores(c, min(max(length, 16), c.max_len) - 1)
        out.figures["distance"] = rotary_distance_chart(distances, scores,
                                                        title="Rotary: score of a fixed query and key by distance")
    elif scheme == "relative":
        reach = min(max(length, 16), c.relative_max_distance + 8)
        for stack in ("encoder", "decoder"):
            if getattr(model, stack, None) is not None:
                distances, bias = relative_bias(model, stack, reach)
                kind = "bidirectional" if stack == "encoder" else "causal"
                out.figures[f"{stack} bias"] = relative_bias_heatmap(
                    bias, distances, title=f"Relative position bias, {stack} ({kind}, {c.relative_buckets} buckets, "
                                           f"max distance {c.relative_max_distance})")
    return out

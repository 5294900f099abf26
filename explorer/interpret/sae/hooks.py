"""Where an SAE reads the model: TransformerLens hook names (SAELens's `metadata.hook_name`) mapped onto the
explorer's residual-stream sites (the model's per-call `resid_hook`, explorer.model.stacks).

    blocks.L.hook_resid_pre     input of block L: the explorer's hidden state L (L = 0: the embeddings)
    blocks.L.hook_resid_mid     after block L's self-attention, before its MLP: sequential-residual families only
                                (GPT-2, Llama, Mistral, Qwen2, BERT, ...); GPT-NeoX / Pythia's parallel residual adds
                                attention and MLP to the same input, so there is no such point (refused)
    blocks.L.hook_resid_post    output of block L (hidden state L + 1); in a post-norm block (BERT, RoBERTa,
                                DistilBERT) the sum before the block's last norm, as TransformerLens's BERT block
                                hooks it (hidden state L + 1 is that sum normed)

"blocks." names the one stack of a decoder-only model (the decoder) or of an encoder (BERT family). An encoder-decoder
(T5, BART, Marian) has two stacks, named as TransformerLens's HookedEncoderDecoder names them: "encoder.L.hook_resid_*"
and "decoder.L.hook_resid_*", plus "decoder.L.hook_resid_mid_cross" (after the cross-attention, before the MLP).
Heads' or MLPs' hooks (hook_z, hook_mlp_out, ...) are not residual-stream points: refused by name.

    hook_site(config, hook_name) -> site, e.g. "decoder.3.resid_pre" (what resid_hook receives)
    parse_hook_name(hook_name) -> HookName(prefix, layer, point)
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ...model import TransformerConfig

HOOK_NAME = re.compile(r"^(blocks|encoder|decoder)\.(\d{1,9})\.hook_(resid_pre|resid_mid|resid_mid_cross|resid_post)$")
SUPPORTED = ("blocks.L.hook_resid_pre / hook_resid_mid / hook_resid_post (decoder-only and encoder-only models), "
             "encoder.L.* / decoder.L.* for encoder-decoders (TransformerLens's HookedEncoderDecoder names, and "
             "decoder.L.hook_resid_mid_cross)")


class HookName(NamedTuple):
    prefix: str  # "blocks" | "encoder" | "decoder"
    layer: int
    point: str  # "resid_pre" | "resid_mid" | "resid_mid_cross" | "resid_post"


def parse_hook_name(hook_name: str) -> HookName:
    """A residual-stream hook name -> its parts; ValueError naming any other hook."""
    found = HOOK_NAME.match(hook_name) if isinstance(hook_name, str) else None
    if found is None:
        shown = repr(hook_name)  # a cfg.json may hold any value here: the message shows its start
        shown = shown if len(shown) <= 80 else shown[:80] + "…"
        raise ValueError(f"hook {shown} is not a residual-stream point the explorer can splice an SAE into; "
                         f"supported: {SUPPORTED}")
    return HookName(found.group(1), int(found.group(2)), found.group(3))


def hook_site(config: TransformerConfig, hook_name: str) -> str:
    """The model's resid_hook site "{stack}.{layer}.{point}" of a TransformerLens hook name; ValueError if this model
    has no such point (another architecture's naming, a layer past the end, resid_mid under a parallel residual)."""
    prefix, layer, point = parse_hook_name(hook_name)
    arch = config.arch
    if arch == "encoder-decoder":
        if prefix == "blocks":
            raise ValueError(f"hook {hook_name!r} names a single-stack model's block; this encoder-decoder names its "
                             f"stacks: encoder.{layer}.hook_{point} or decoder.{layer}.hook_{point}")
        stack = prefix
    else:
        stack = "decoder" if arch == "decoder" else "encoder"
        if prefix != "blocks":
            raise ValueError(f"hook {hook_name!r} names an encoder-decoder's stack; this {arch}-only model's blocks "
                             f"are blocks.L (blocks.{layer}.hook_{point})")
    layers = config.encoder_layers if stack == "encoder" else config.decoder_layers
    if not 0 <= layer < layers:
        raise ValueError(f"hook {hook_name!r}: the model's {stack} has blocks 0..{layers - 1}")
    if point == "resid_mid" and config.parallel_residual:
        raise ValueError(f"hook {hook_name!r}: this model has a parallel residual (GPT-NeoX / Pythia: attention and MLP "
                         "both read the block's input and add to it together), so there is no point between them; "
                         "use hook_resid_pre or hook_resid_post")
    if point == "resid_mid_cross" and not (arch == "encoder-decoder" and stack == "decoder"):
        raise ValueError(f"hook {hook_name!r}: only an encoder-decoder's decoder blocks have cross-attention")
    return f"{stack}.{layer}.{point}"


def site_hook_name(config: TransformerConfig, site: str) -> str:
    """The inverse of hook_site: "decoder.3.resid_pre" -> "blocks.3.hook_resid_pre" (or "decoder.3..." for an
    encoder-decoder). What save_sae writes for an SAE trained at a site."""
    stack, layer, point = site.split(".")
    prefix = stack if config.arch == "encoder-decoder" else "blocks"
    name = f"{prefix}.{layer}.hook_{point}"
    if hook_site(config, name) != site:
        raise ValueError(f"site {site!r} is not a residual-stream point of this model")
    return name

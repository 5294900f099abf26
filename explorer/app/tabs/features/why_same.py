"""Why a latent switch or a steering vector left the output as it was, in words with the numbers that show it: a latent
switched off that never fires where the SAE reads (its activation 0 at every token: the splice then returns the
residual stream unchanged), a steering vector of norm 0 (the two texts' residuals equal at the site: nothing is
added). Said under the Features tab's verdict (text.output_markdown); plain text, escaped there.

Shapes: T tokens the SAE reads (sentence 1 with a sequence model's own answer, as the tab's reading), D model width.
"""

from __future__ import annotations

import torch

from ....checkpoints import LoadedModel
from ....interpret.sae import SAE, LatentSwitches
from ....interpret.sae.features import latent_activations
from ...run.readings import read_texts


def silent_latents(loaded: LoadedModel, sae: SAE, switches: LatentSwitches, text: str, max_tokens: int) -> list[str]:
    """A sentence per latent switched off (or clamped to 0) whose activation is 0 at every token the SAE reads."""
    quiet = [s.latent for s in switches.items if s.mode == "off" or (s.mode == "clamp" and s.value == 0)]
    if not quiet:
        return []
    reading = read_texts(loaded, text, None, max_tokens)[0]  # what the hook reads: the answer as generated
    src, tgt = reading.tensors(loaded.model.device)
    lines = []
    for latent in quiet:
        acts = latent_activations(loaded.model, src[0], sae, latent, tgt=tgt)
        if float(acts.max()) <= 0:
            lines.append(f"Latent {latent} does not fire on this sentence: its activation is 0 at all {len(acts)} "
                         "tokens the SAE reads, so switching it off leaves the residual stream as it is and the output "
                         "cannot change. The heatmap's latents are the ones that fire here: switch one of them off.")
    return lines


def zero_vector(vector: torch.Tensor, layer: int, plus: list[str], minus: list[str]) -> list[str]:
    """A sentence when the steering vector (D,) is 0: the two texts' last-token residuals are the same at the site."""
    if float(vector.norm()) > 0:
        return []
    if plus == minus:
        why = "the two texts are the same"
    elif layer == 0:
        why = (f"at the input of the first block a token's residual holds only that token (its embedding, and its "
               f"position where the model adds one), and both texts end in “{plus[-1]}”")
    else:
        why = f"the model reads their last tokens alike up to layer {layer}"
    return [(f"The steering vector has norm 0: {why}. Adding it adds nothing, so the output is the model's own. "
             "Pick texts that differ at their last token, or a later layer.")]

"""The generation tab: how the answer was written, one token at a time (toggled run).

Shapes: N generated tokens, K tokens the decoder had read so far, S source tokens. Row t of each figure is
the attention of the step that produced token t: over the tokens so far (decoder self-attention) and over
the source (cross-attention). Keys a step had not produced yet are drawn as masked.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ... import viz
from ..compare import Comparison
from ..runs import GeneratedText, NextTokens, Output
from . import View


def generated(output: Output) -> GeneratedText:
    """What a run generated for one sentence: its answer, or a language model's continuation."""
    return output.continuation if isinstance(output, NextTokens) else output

NOT_GENERATING = "This model does not generate text (encoder only): see the attention tab."
NO_CROSS = "A decoder-only model has no cross-attention: its prompt is part of the self-attention on the left."


def generation_figures(cmp: Comparison, view: View) -> tuple[go.Figure, go.Figure]:
    """(decoder self-attention per generated token, cross-attention per generated token)."""
    run, b = cmp.toggled, view.row
    if not run.generations:
        return viz.message_figure(NOT_GENERATING), viz.message_figure(NOT_GENERATING)
    gen, gb = run.generations[b]
    if not gen.steps:
        return viz.message_figure("Nothing was generated."), viz.message_figure("Nothing was generated.")
    layer, head = view.layer, view.head
    out = generated(run.outputs[b])
    n = len(out.ids)
    queries = [f"→ {label}" for label in out.labels] or ["→"]
    self_rows = gen.attention_matrix("decoder", layer, gb)[head, :n].float().cpu()  # (N, K)
    start = gen.prefix.shape[1] - len(gen.steps)  # prefix length before the first step
    prefix = [int(i) for i in gen.prefix[gb, : self_rows.shape[1]].tolist()]
    # A decoder-only prompt keeps the labels it got from its text; the rest are labels of ids.
    prompt = cmp.inputs.labels[b] if "cross" not in run.attentions else []
    keys = list(prompt) + cmp.codec.labels(prefix[len(prompt):])
    reached = np.arange(self_rows.shape[1])[None, :] < start + np.arange(n)[:, None]  # (N, K) keys read so far
    self_fig = viz.head_heatmap(self_rows, queries, keys, mask=reached,
                                title=f"Decoder self-attention per generated token (layer {layer}, head {head})",
                                x_title="tokens so far (key)", y_title="generated token (query)")
    if "cross" not in run.attentions:
        return self_fig, viz.message_figure(NO_CROSS)
    cross = gen.attention_matrix("cross", layer, gb)[head, :n].float().cpu()  # (N, S)
    cross_fig = viz.cross_attention_heatmap(cross, queries, run.keys["cross"][b][: cross.shape[1]],
                                            title=f"Cross-attention per generated token (layer {layer}, head {head})")
    return self_fig, cross_fig

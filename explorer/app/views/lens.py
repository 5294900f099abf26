"""The logit-lens tab (language models: a decoder-only model, or the decoder of an encoder-decoder): what each
layer's residual stream would predict if the model stopped there (explorer.interpret.lens), on sentence 1 as
the model reads it (a sequence model: prompt or source and its own greedy answer; explorer.app.readings).

Shapes: L layers, T decoder positions. The lens has L + 1 rows (the embeddings, then each layer's output); its
last row is the model's own prediction.
"""

from __future__ import annotations

import plotly.graph_objects as go
import torch

from ... import viz
from ...checkpoints import LoadedModel
from ...interpret import LogitLens, logit_lens
from ..errors import AppError, escape_md
from ..inputs import codec_for
from ..readings import read_texts

NOT_A_LANGUAGE_MODEL = ("The logit lens reads a language model's residual stream through its unembedding; "
                        "this is an encoder without a next-token output. Load a decoder or an encoder-decoder.")


def first_layer_on_top(lens: LogitLens, position: int = -1) -> int:
    """The first lens row from which the model's final prediction at `position` stays the top token (0 = the
    embeddings; the last row, the output, always has it on top)."""
    ranks = lens.final_rank[:, 0, position].tolist()  # (L + 1,)
    first = len(ranks) - 1
    while first > 0 and ranks[first - 1] == 0:
        first -= 1
    return first


def lens_markdown(lens: LogitLens, labels: list[str], token_text: str) -> str:
    ranks = lens.final_rank[:, 0, -1].tolist()  # rank of the final prediction after the last token, per row
    first = first_layer_on_top(lens)
    where = "the embeddings" if first == 0 else f"the output of layer {first - 1}"
    return (f"After the last token ({escape_md(labels[-1])}) the model predicts **{escape_md(token_text)}** "
            f"(p = {float(lens.final_probs[-1, 0, -1]):.3f}); it is the top token from {where} on. Its rank per "
            f"row (embeddings, then layers 0..{len(ranks) - 2}): {', '.join(str(int(r)) for r in ranks)}.")


@torch.inference_mode()
def lens_view(loaded: LoadedModel, text: str | None, max_tokens: int) -> tuple[go.Figure, str]:
    """The lens figure on sentence 1 and a one-paragraph summary of the last position."""
    if loaded.arch == "encoder":
        raise AppError(NOT_A_LANGUAGE_MODEL)
    reading = read_texts(loaded, text, None, max_tokens)[0]
    src, tgt = reading.tensors(loaded.model.device)
    lens = logit_lens(loaded.model, src, tgt, padding=False)
    labels = reading.decoder_labels
    final = int(lens.final_ids[0, -1])
    codec = codec_for(loaded)
    fig = viz.lens_figure(lens, labels, title=f"Logit lens on sentence 1 ({len(labels)} positions)",
                          token_text=lambda i: codec.labels([i])[0])
    return fig, lens_markdown(lens, labels, codec.labels([final])[0])

"""The attention block the page's view names (its kind and layer, in its sentence), captured from the Run's own forward
passes, so that the Inside a head tab opens on it without running the model again (explorer.app.tabs.head.computation).

Each run's forward records the block's sites besides the values (`returned.values_record(view)`); here the chosen
sentence's row becomes an `explorer.interpret.BlockCapture` (`capture_from_record`, a few milliseconds: no model run)
and the record is let go. The capture is given what the run's forward was given (its batch, masks and head switches),
rebuilt from the run as `model_run` built it.

Shapes: B sentences, S / T the padded source / decoder length, D model width; a capture holds one row's x (T, D), q, k,
v and z (H, T, Dh) and its mask (T, S): about 5 x T x D floats (16 MB at 1,024 tokens on GPT-2 small).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...batching import pad_rows
from ...checkpoints import LoadedModel
from ...interpret import BlockCapture, capture_from_record
from ...interpret.head_computation import toggle_changes
from .inputs import Inputs, pad_id_of, row_mask
from .toggles import Toggles, custom_mask
from .view import View


@dataclass
class RunBlock:
    """The view's block of the view's sentence, as the Run computed it without and with the toggles."""

    kind: str
    layer: int
    sentence: int  # 1 or 2
    baseline: BlockCapture
    toggled: BlockCapture | None  # None when the toggles change nothing in it (head_computation.toggle_changes)
    changes: tuple[str, ...]  # what the toggles change, e.g. ("causal mask off", "decoder L0 H1 off")
    query_labels: list[str]  # (T,) the Run's labels of the row ([PAD] where padded)
    key_labels: list[str]  # (S,)
    real_queries: int  # the sentence's own query tokens
    notices: list[str]
    read: Any = field(default=None, repr=False)  # the Inside a head tab's view of it, once made (inside_head.from_run)


def forward_args(loaded: LoadedModel, run: Any, inputs: Inputs, toggles: Toggles, head_mask: dict | None
                 ) -> dict[str, Any]:
    """What `run` (model_run.Run) gave the model's forward, as `capture_from_record` takes it."""
    device = loaded.model.device
    pad = pad_id_of(loaded)
    args: dict[str, Any] = dict(padding=toggles.padding, causal=toggles.causal, head_mask=head_mask)
    if loaded.arch == "encoder-decoder":  # source, and the decoder's start token + answer
        dec_rows = run.ids["decoder"]
        args.update(ids=inputs.padded(pad, device), key_mask=inputs.key_mask(device),
                    tgt=pad_rows(dec_rows, pad, device), tgt_key_mask=row_mask(dec_rows, device))
    elif loaded.arch == "decoder" and run.decoder_rows:  # a decoder-only sequence model: prompt + answer
        seqs = run.ids["decoder"]
        args.update(ids=pad_rows(seqs, pad, device), key_mask=row_mask(seqs, device))
    else:  # an encoder, a language model: the sentences as typed
        args.update(ids=inputs.padded(pad, device), key_mask=inputs.key_mask(device))
    args["attn_mask"] = custom_mask(toggles, args["ids"].shape[1], device)[0]  # the first stack's self-attention
    return args


def capture(loaded: LoadedModel, run: Any, inputs: Inputs, toggles: Toggles, head_mask: dict | None,
            view: View | None) -> BlockCapture | None:
    """The view's block of the view's sentence from `run.record` (None without a view), which is then let go."""
    record, run.record = run.record, None
    if view is None or record is None:
        return None
    args = forward_args(loaded, run, inputs, toggles, head_mask)
    return capture_from_record(loaded.model, record, kind=view.kind, layer=view.layer, row=view.row, **args)


def run_block(loaded: LoadedModel, cmp: Any, view: View | None, baseline: BlockCapture | None,
              toggled: BlockCapture | None) -> RunBlock | None:
    """The fitted `view`'s block of a comparison (pair.Comparison) from its runs' captures (`capture`)."""
    if view is None or baseline is None:
        return None
    toggles, kind, b, run = cmp.toggles, view.kind, view.row, cmp.toggled
    attn_mask = forward_args(loaded, run, cmp.inputs, toggles, cmp.head_mask)["attn_mask"]
    changes = toggle_changes(loaded.model, toggles.padding, toggles.causal, attn_mask, cmp.head_mask)
    toggled = toggled if changes else None  # as the tab reads it (inside_head.read_block)
    notices = cmp.inputs.notices + (run.notices if toggled is not None else [])
    query_seq = "encoder" if kind == "encoder" else "decoder"
    return RunBlock(kind, view.layer, view.sentence, baseline, toggled, changes, run.queries[kind][b],
                    run.keys[kind][b], len(run.ids[query_seq][b]), list(notices))

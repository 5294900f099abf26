"""Baseline vs toggled: the two runs every view compares.

The baseline has every head on and the default masks (padding + causal, no custom mask); the toggled run
has what the person set. With nothing toggled the toggled run is the baseline (the model runs once).
`compare_in_steps` hands over a language model's comparison as soon as its attention is known, then again
once its outputs are (see `model_run.run_language_model`). The outputs (the predictions after the chosen position, the
continuation) are computed in a thread of their own from the moment the attention is known, so that drawing and
sending the attention (the caller's work between the two steps: Python, mostly holding the GIL, while torch releases
it) does not wait for them, nor they for it; the predictions at every position are made when asked for
(`Comparison.predict_every_position`: after the outputs are sent, `result.Reductions.complete`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch

from ...checkpoints import LoadedModel
from ...outputs.sampling import Sampling
from .captures import RunBlock, capture, run_block
from .greedy import greedy_answers
from .inputs import Inputs, TextCodec, codec_for, encode_inputs
from .model_run import Run, run_model
from .sentence_outputs import GeneratedText
from .toggles import Toggles, head_mask
from .view import View


@dataclass
class Comparison:
    inputs: Inputs
    toggles: Toggles
    head_mask: dict[str, torch.Tensor] | None  # kind -> (L, H), 1 = on; None = all on
    baseline: Run
    toggled: Run  # the same object as baseline when nothing is toggled
    codec: TextCodec
    outputs: "Outputs | None" = field(default=None, repr=False)  # the outputs being computed (start_outputs)
    sampling: Sampling | None = None  # how both runs drew their generated tokens (None: greedy)
    block: RunBlock | None = field(default=None, repr=False)  # the view's block as both runs computed it (captures)
    greedy: list[GeneratedText] | None = None  # a sampled Run: each sentence's greedy answer (run.greedy), else None

    def start_outputs(self) -> None:
        """Begin computing the runs' outputs in a thread (once; a complete comparison has none to compute):
        `compare_in_steps` waits for them when resumed."""
        if self.outputs is None and not self.complete:
            self.outputs = Outputs(self)

    @property
    def no_toggle(self) -> bool:
        return self.toggled is self.baseline

    @property
    def notices(self) -> list[str]:
        """Every notice once, in order (cuts of the input, adjusted masks)."""
        return list(dict.fromkeys(self.inputs.notices + self.baseline.notices + self.toggled.notices))

    @property
    def complete(self) -> bool:
        """Whether both runs have their outputs (else only their attention)."""
        return self.baseline.complete and self.toggled.complete

    def predict_every_position(self) -> None:
        """A language model's predictions at every position, for views that read more than the chosen position's
        (the surprisal of each token; `Run.every_position`): made once, here, after the outputs."""
        if not self.complete:
            raise RuntimeError("the predictions at every position come after the outputs")
        self.baseline.predict_every_position()
        self.toggled.predict_every_position(self.baseline)


def compare_in_steps(loaded: LoadedModel, text1: str | None, text2: str | None, toggles: Toggles, max_tokens: int,
                     new_tokens: int | None = None, *, sampling: Sampling | None = None,
                     view: View | None = None) -> Iterator[Comparison]:
    """Encode the sentences, run the baseline and (if anything is toggled) the toggled model. Yields the
    Comparison once its attention is known (`complete` False: a language model's outputs are still to come),
    then once more, complete; a model whose runs are complete at once yields it once. `new_tokens`: how many
    tokens a language model continues with (None: its task's default). `sampling`: how both runs draw what they
    generate (None: greedy); each generation seeds its own generator, so baseline and toggled read the same
    uniforms and differ only where their distributions do. `view`: the block both runs capture (`Comparison.block`,
    for the Inside a head tab) and the next-token position a language model predicts with its outputs (the others are
    made by `Comparison.predict_every_position`)."""
    codec = codec_for(loaded)
    sampling = drawn_with(loaded, sampling)
    inputs = encode_inputs(loaded, codec, text1, text2, max_tokens)
    hm = head_mask(loaded.config, toggles)
    fitted = None if view is None else view.fitted(loaded.config.attention_kinds(), len(inputs.rows))
    baseline = run_model(loaded, codec, inputs, Toggles(), None, new_tokens=new_tokens, later=True, sampling=sampling,
                         view=fitted)
    captured = [capture(loaded, baseline, inputs, Toggles(), None, fitted), None]
    if toggles.default_masks and hm is None:
        cmp = Comparison(inputs, toggles, None, baseline, baseline, codec, sampling=sampling)
    else:
        toggled = run_model(loaded, codec, inputs, toggles, hm, baseline=baseline, new_tokens=new_tokens, later=True,
                            sampling=sampling, view=fitted)
        captured[1] = capture(loaded, toggled, inputs, toggles, hm, fitted)
        cmp = Comparison(inputs, toggles, hm, baseline, toggled, codec, sampling=sampling)
    cmp.block = run_block(loaded, cmp, fitted, *captured)
    if not cmp.complete:
        try:
            yield cmp  # the caller may start_outputs() before it hands its first look over
        except GeneratorExit:  # the caller let go (a closed page): the thread ends before the memory is let go
            if cmp.outputs is not None:
                cmp.outputs.wait(quiet=True)
            raise
        cmp.start_outputs()
        cmp.outputs.wait()
        cmp.outputs = None
    if sampling is not None:  # shown beside the sampled answer; after a language model's first look
        cmp.greedy = greedy_answers(loaded, codec, inputs, new_tokens)
    yield cmp


def drawn_with(loaded: LoadedModel, sampling: Sampling | None) -> Sampling | None:
    """The sampling a Run of `loaded` uses: None for a model that generates nothing (an encoder)."""
    return None if loaded.arch == "encoder" else sampling


class Outputs:
    """Both runs' outputs (`Run.rest`) computed in a thread started at once, with half the caller's torch threads;
    `wait` joins it and re-raises its error. The runs stay incomplete (`rest` set) until `wait` returns, so the
    caller never sees a comparison half done."""

    def __init__(self, cmp: Comparison):
        baseline, toggled = cmp.baseline, cmp.toggled
        # The toggled run rates the baseline's favourites: after the baseline's outputs.
        pairs = [(baseline, None)] + ([(toggled, baseline)] if toggled is not baseline else [])
        rests: list[Callable[[], None]] = [functools.partial(run.rest, base) for run, base in pairs
                                           if run.rest is not None]
        self._runs, self._error = (baseline, toggled), None
        # Half the request's share of the cores (app.serving.cores): the continuation (each step reads every weight,
        # memory-bound) gains 8% from a second thread on idle cores, and takes 3-9x longer when the caller's drawing,
        # sending and the browser keep the other one busy (measured at 1,024 tokens on GPT-2 small, 2 cores).
        threads = max(1, torch.get_num_threads() // 2)

        def work() -> None:
            try:
                torch.set_num_threads(threads)
                for rest in rests:
                    rest()
            except BaseException as e:  # noqa: BLE001 - handed to the caller by wait()
                self._error = e

        self._thread = threading.Thread(target=work, name="run-outputs", daemon=True)
        self._thread.start()

    def wait(self, quiet: bool = False) -> None:
        self._thread.join()
        if self._error is not None and not quiet:
            raise self._error
        for run in self._runs:
            run.rest = None


def compare(loaded: LoadedModel, text1: str | None, text2: str | None, toggles: Toggles, max_tokens: int,
            new_tokens: int | None = None, *, sampling: Sampling | None = None) -> Comparison:
    """The complete comparison (`compare_in_steps` without the first look), predicted at every position."""
    *_, cmp = compare_in_steps(loaded, text1, text2, toggles, max_tokens, new_tokens, sampling=sampling)
    cmp.predict_every_position()
    return cmp

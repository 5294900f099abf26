"""Sampling in the page: the page's Sample settings as an `explorer.outputs.sampling.Sampling` (or None: greedy), the
words that say a Run was sampled, and the first generated step of a sampled Run for the Attention tab's sampling
view (Transformer Explainer's: the probabilities before and after the temperature, the top-k and top-p cut-offs).

Shapes: V vocabulary, N tokens the figure shows (the N most probable).

    sampling_of(sample, temperature, top_k, top_p, seed) -> Sampling | None      AppError naming a bad value
    sampling_words(sampling) -> "sampled: T=0.8, top-k=40, top-p=0.9, seed=0"
    first_step(log_probs (V,), sampling, suppress_ids, chosen, uniform) -> FirstStep   computed in the Run
    sampling_inputs(cmp, view) -> SamplingInputs; sampling_view(inputs) -> the figure  (drawing runs no model)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from torch import Tensor

from ... import viz
from ...outputs.sampling import NextTokenDistribution, Sampling, next_token_distribution
from ...viz.sampling import sampling_figure
from ..serving.errors import AppError

SHOWN = 12  # tokens the sampling view draws (the most probable): room for the usual cut-offs, readable labels
GREEDY = ("Greedy decoding: each generated token is the most probable one. Tick “Sample” among the controls to "
          "draw it instead, after a temperature, top-k and top-p: this view then shows the first draw.")
NOT_GENERATED = "The sampling view shows the first generated token: this model generates nothing."


def _page_number(value: Any, default: float) -> Any:
    """A page or API value as a number for Sampling: empty -> default; "0.8" -> 0.8; 3.0 -> 3 (Gradio's numbers and
    JSON send whole numbers as floats). Anything else is left for Sampling to refuse in words."""
    if value is None or value == "":
        return default
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return value
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return value


def sampling_of(sample: Any, temperature: Any = 1.0, top_k: Any = 0, top_p: Any = 1.0, seed: Any = 0
                ) -> Sampling | None:
    """The page's Sample settings: None (greedy) when `sample` is off, whatever the numbers; else the validated
    Sampling, or AppError with the reason (temperature 0, top-p 2, a seed out of range, a word)."""
    if not sample or (isinstance(sample, str) and sample.strip().lower() in ("0", "false", "off", "no")):
        return None
    try:
        return Sampling(_page_number(temperature, 1.0), _page_number(top_k, 0), _page_number(top_p, 1.0),
                        _page_number(seed, 0))
    except ValueError as err:  # the core's words, without its advice to Python callers (sampling=None)
        words = str(err).split(" (for greedy")[0]
        raise AppError(f"Sampling: {words}" + (" (untick Sample for greedy decoding)" if words != str(err) else "")
                       ) from None


def sampling_words(sampling: Sampling | None) -> str:
    """How a Run's tokens were chosen, for the state line and the output summary ("" for greedy)."""
    if sampling is None:
        return ""
    top_k = sampling.top_k or "off"
    top_p = f"{sampling.top_p:g}" if sampling.top_p < 1 else "off"
    return f"sampled: T={sampling.temperature:g}, top-k={top_k}, top-p={top_p}, seed={sampling.seed}"


@dataclass(frozen=True)
class FirstStep:
    """The first generated token of one sentence in a sampled run: what it was drawn from, and the draw."""

    dist: NextTokenDistribution  # (V,) each stage of the distribution
    chosen: int  # the token drawn
    uniform: float  # the seeded uniform number that drew it


def first_step(log_probs: Tensor, sampling: Sampling, suppress_ids: Sequence[int], chosen: int,
               uniform: float) -> FirstStep:
    """`log_probs` (V,): the model's scores for the first generated token (after the prompt, or the decoder's start
    token), as the run computed them."""
    return FirstStep(next_token_distribution(log_probs.float().cpu(), sampling, suppress_ids), int(chosen),
                     float(uniform))


def first_steps(scores: Callable[[int], Tensor], gens: Sequence[tuple[Any, int]], sampling: Sampling | None,
                suppress_ids: Sequence[int] = ()) -> list[FirstStep]:
    """Per sentence b, its first generated token's distribution (`scores(b)`: (V,) the run's logits for it) and draw
    (`gens`: per sentence, its outputs.generate.Generation and row); [] when greedy or nothing was generated."""
    if sampling is None or any(g.tokens.shape[1] == 0 for g, _ in gens):
        return []
    return [first_step(scores(b), sampling, suppress_ids, int(g.tokens[gb, 0]), float(g.uniforms[gb, 0]))
            for b, (g, gb) in enumerate(gens)]


@dataclass(frozen=True)
class SamplingInputs:
    """What the sampling view draws: the view's sentence's first step in the baseline run (None: greedy, or no
    generation), the labels of its SHOWN most probable tokens, and the message otherwise."""

    step: FirstStep | None
    labels: list[str]
    sentence: int
    message: str


def sampling_inputs(cmp: Any, view: Any) -> SamplingInputs:
    """From a Run (`pair.Comparison`) and its view (`view.View`)."""
    steps = cmp.baseline.first_steps
    if cmp.sampling is None or not steps:
        return SamplingInputs(None, [], view.sentence, GREEDY if cmp.baseline.generations else NOT_GENERATED)
    step = steps[min(view.row, len(steps) - 1)]  # a model's first step is its answer's first token
    ids = step.dist.top(SHOWN).tolist()
    return SamplingInputs(step, cmp.codec.labels(ids), view.sentence, "")


def sampling_view(inp: SamplingInputs) -> Any:
    """The sampling figure of the first generated token, or the message in words (never an empty plot)."""
    if inp.step is None:
        return viz.message_figure(inp.message, height=120)
    return sampling_figure(inp.step.dist, inp.labels, chosen=inp.step.chosen, uniform=inp.step.uniform,
                           title=f"First generated token of sentence {inp.sentence}: "
                                 f"{sampling_words(inp.step.dist.sampling)}")

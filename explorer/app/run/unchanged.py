"""Why a toggle left the output as it was: what the Run measured, in words with its numbers, and the next step.

When the page's toggles (head switches, masks) leave sentence 1's output unchanged, a class sees nothing happen. This
module reads the two runs of the Run (`pair.Comparison`) and says what did move: the probability of the output
token that fell most ("p(“3”), token 6 of the answer, fell from 1.00 to 0.98"), why the toggle could not
matter where that is so (the causal mask in greedy decoding, a padding mask with nothing padded), and offers a next
step: switching off the two heads that matter most for that token (a click, `NextStep`: explorer.app.page.next_step).
A sampled Run whose draws could not differ from greedy decoding (the top token above 0.5 at every step) is said
too. Plain data: computed while the runs are held (run.result.Analysis), kept with the result.

Shapes: N generated tokens of sentence 1's answer; Tq x Tk one layer's decoder self-attention (H heads).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...outputs.sampling import Sampling
from .output_chips import ClickTarget
from .pair import Comparison
from .sampled import sampling_words
from .sentence_outputs import ClassProbabilities, GeneratedText, MaskFillers, NextTokens
from .view import View

SURE = 0.5  # a drawn token above this probability is the distribution's top one: the draw equals greedy decoding


@dataclass(frozen=True)
class NextStep:
    """A click the page offers: switch off the pair of heads that moves `target` most (page.next_step)."""

    label: str  # the button's words
    target: ClickTarget  # the token (and where the model predicts it) whose pair is searched
    text: str = ""  # sentence 1 as the Run read it (the box may have changed since)


@dataclass(frozen=True)
class WhySame:
    """What the page says under the results bar when nothing visible changed."""

    lines: tuple[str, ...]  # plain text, one paragraph each (the page escapes them)
    step: NextStep | None = None

    @property
    def text(self) -> str:
        return "\n\n".join(self.lines)


def two_numbers(before: float, after: float) -> tuple[str, str]:
    """Both probabilities with the fewest decimals (2 to 6) that tell them apart: 1.00 and 0.98, 1.0000 and 0.9999."""
    for digits in range(2, 7):
        a, b = f"{before:.{digits}f}", f"{after:.{digits}f}"
        if a != b:
            return a, b
    return f"{before:.2f}", f"{after:.2f}"


def sure(p: float) -> str:
    """A probability near 1 with the decimals that show it is not 1: 0.97, 0.9996."""
    for digits in range(2, 7):
        if f"{p:.{digits}f}" != f"{1:.{digits}f}":
            return f"{p:.{digits}f}"
    return "1.00"  # 1 to six decimals


def plain(x: float) -> str:
    """A small number as a class reads it, two significant digits, no exponent: 0.000013, 0.07."""
    return f"{float(f'{x:.2g}'):.10f}".rstrip("0").rstrip(".") if x else "0"


def moved(name: str, before: float, after: float) -> str:
    """“p(“3”) fell from 1.00 to 0.98” (or rose, or stayed)."""
    a, b = two_numbers(before, after)
    if a == b:
        return f"p({name}) stayed at {a}"
    return f"p({name}) {'fell' if after < before else 'rose'} from {a} to {b}"


@dataclass(frozen=True)
class Measured:
    words: str  # what moved most, in words with the numbers
    target: ClickTarget | None  # the token it is about (None: no token to search heads for)
    change: float  # the largest change of a probability of the output, for the reasons' words


def answer_measured(base: GeneratedText, tog: GeneratedText, start: int) -> Measured:
    """The answer's token whose probability changed most (the toggled run made the same tokens, so its probabilities
    are of the same tokens after the same prefix)."""
    drops = [b - t for b, t in zip(base.probs, tog.probs)]
    k = max(range(len(drops)), key=lambda i: abs(drops[i]))
    name = f"“{base.labels[k]}”"
    what = f"token {k} of the answer"  # counted from 0, as everywhere on the page
    words = (f"{moved(name, base.probs[k], tog.probs[k])}, {what} (the largest change of the {len(drops)} tokens)"
             if drops[k] else f"every token of the answer has the same probability as before (p({name}): "
                              f"{base.probs[k]:.2f})")
    return Measured(words, ClickTarget(start + k, base.ids[k], base.labels[k], what), abs(drops[k]))


def next_measured(base: NextTokens, tog: NextTokens, labels: list[str], codec: object, view: View) -> Measured:
    p = view.position_in(len(labels))
    favourite = int(base.top_ids[p, 0])
    name = codec.labels([favourite])[0]  # type: ignore[attr-defined]
    before = float(base.top_probs[p, 0])
    after = before if tog.favourite_probs is None else float(tog.favourite_probs[p])
    what = f"the next token after “{labels[p]}”"
    words = f"{moved(f'“{name}”', before, after)}, {what} (position {p}), and it is still the most probable"
    return Measured(words, ClickTarget(p, favourite, name, f"a next-token candidate after “{labels[p]}”"),
                    abs(before - after))


def filler_measured(base: MaskFillers, tog: MaskFillers) -> Measured | None:
    if not base.fillers or tog.favourite_probs is None:
        return None
    first = base.fillers[0]
    before, after = first.probs[0], tog.favourite_probs[0]
    words = f"{moved(f'“{first.labels[0]}”', before, after)} at {base.mask_token} (position {first.position})"
    return Measured(words, ClickTarget(first.position, int(first.ids[0]), first.labels[0],
                                       f"a filler of {base.mask_token}"), abs(before - after))


def class_measured(base: ClassProbabilities, tog: ClassProbabilities) -> Measured:
    top = max(base.probs, key=base.probs.get)
    return Measured(f"{moved(f'class “{top}”', base.probs[top], tog.probs[top])}, still the top class", None,
                    abs(base.probs[top] - tog.probs[top]))


def measured(cmp: Comparison, view: View, decoder_only: bool) -> Measured | None:
    base, tog = cmp.baseline.outputs[0], cmp.toggled.outputs[0]
    if isinstance(base, GeneratedText) and isinstance(tog, GeneratedText) and base.ids:
        return answer_measured(base, tog, len(cmp.inputs.rows[0]) - 1 if decoder_only else 0)
    if isinstance(base, NextTokens) and isinstance(tog, NextTokens):
        return next_measured(base, tog, cmp.inputs.labels[0], cmp.codec, View(position=view.position))
    if isinstance(base, MaskFillers) and isinstance(tog, MaskFillers):
        return filler_measured(base, tog)
    if isinstance(base, ClassProbabilities) and isinstance(tog, ClassProbabilities):
        return class_measured(base, tog)
    return None


def later_weight(cmp: Comparison) -> tuple[float, int, int]:
    """The largest attention weight sentence 1's queries put on later positions in the toggled run's decoder
    self-attention (what its heatmaps show), and the layer and head."""
    best = (0.0, 0, 0)
    for layer, weights in enumerate(cmp.toggled.attentions["decoder"]):
        a = weights[0].float()  # (H, Tq, Tk)
        later = torch.ones(a.shape[-2:], dtype=torch.bool).triu(1)
        per_head = (a * later).sum(-1).amax(-1)  # (H,) the most any query puts on keys after it
        head = int(per_head.argmax())
        if float(per_head[head]) > best[0]:
            best = (float(per_head[head]), layer, head)
    return best


def causal_reason(cmp: Comparison, change: float) -> str:
    """Causal mask off: greedy decoding reads each new token from the ones before it, so the mask hides nothing
    from it; the earlier tokens, run again at each step, do see later ones (what `change` measured)."""
    base = cmp.baseline.outputs[0]
    weight, layer, head = later_weight(cmp)
    if isinstance(base, GeneratedText):
        first = ("Why the causal mask changes no token: the answer is generated one token at a time, each from the "
                 "tokens before it. When a token is made there is no later token yet, so the mask has nothing to "
                 "hide from it. Without the mask only the earlier tokens, run again at each step, see the ones after "
                 f"them: that moved each token's probability by at most {plain(change)}.")
    else:
        first = ("Causal mask off: every token now also sees the tokens after it, and the prediction measured above "
                 f"moved by {plain(change)}.")
    return first + (f" The heatmaps do change: they are one pass over the whole sequence, where decoder L{layer} "
                    f"H{head} puts up to {weight:.2f} of a query's weight on later tokens." if weight > 0.005 else "")


def padding_reason(cmp: Comparison) -> str | None:
    if len({len(r) for r in cmp.inputs.rows}) > 1:
        return None  # padded: the measured change is the padding's effect
    return ("Padding mask off: nothing here is padded (one sentence, or two of the same length), so there is no [PAD] "
            "for the mask to hide. Type a second sentence of another length to see it work.")


def heads_reason(cmp: Comparison, step: bool) -> str:
    """Heads off that changed nothing: the others carry it; the next steps (`step`: there is a token to search for)."""
    off = sum(int((m == 0).sum()) for m in (cmp.head_mask or {}).values())
    if not off:
        return ""
    nexts = ("switch off the two heads that matter most for this token (the button), or click the token in the output "
             "and tick “search pairs too” on the Contributions tab, or try another sentence" if step else
             "switch off more heads, or try another sentence")
    return (f"With {off} head{'' if off == 1 else 's'} off, the other heads carry the same information: the model "
            f"still makes the same choice. Next: {nexts}.")


def sampling_line(cmp: Comparison) -> str | None:
    """A sampled Run whose every draw of sentence 1 was sure (its token above SURE after the temperature, top-k and
    top-p: the top token, so the same as greedy decoding), in words with the lowest probability."""
    sampling: Sampling | None = cmp.sampling
    if sampling is None or not cmp.baseline.generations:
        return None
    gen, row = cmp.baseline.generations[0]
    base = cmp.baseline.outputs[0]
    n = len(base.ids) if isinstance(base, GeneratedText) else len(base.continuation.ids)  # type: ignore[union-attr]
    if gen.sampled_probs is None or n == 0:
        return None
    probs = gen.sampled_probs[row, :n].tolist()
    k = min(range(n), key=probs.__getitem__)
    if probs[k] <= SURE:
        return None
    labels = base.labels if isinstance(base, GeneratedText) else base.continuation.labels  # type: ignore[union-attr]
    return (f"Sampling ({sampling_words(sampling).removeprefix('sampled: ')}) gave the greedy answer: the most "
            f"probable token kept p ≥ {sure(probs[k])} at every step (the lowest: token {k}, "
            f"“{labels[k]}”), so each draw picks it almost always. A higher temperature or a smaller top-p spreads the "
            "choice; another seed draws again.")


def why_unchanged(cmp: Comparison, view: View, changed: bool, decoder_only: bool) -> WhySame | None:
    """The words for a Run whose toggles changed nothing in the output (`changed`: the output table's verdict), or
    whose sampling could not; None when there is nothing to explain."""
    lines: list[str] = []
    step = None
    if not cmp.no_toggle and not changed:
        m = measured(cmp, view, decoder_only)
        if m is not None:
            lines.append(f"The toggles changed no output, but the run measured it: {m.words}.")
        t = cmp.toggles
        if not t.causal and "decoder" in cmp.toggled.attentions:
            lines.append(causal_reason(cmp, m.change if m else 0.0))
        if not t.padding and (reason := padding_reason(cmp)):
            lines.append(reason)
        if cmp.head_mask is not None:
            if m is not None and m.target is not None:
                step = NextStep(f"Switch off the 2 heads that matter most for “{m.target.label}”", m.target,
                                cmp.inputs.texts[0])
            lines.append(heads_reason(cmp, step is not None))
    if (line := sampling_line(cmp)) is not None:
        lines.append(line)
    lines = [line for line in lines if line]
    return WhySame(tuple(lines), step) if lines else None

"""Why a toggle left the output as it was: what the Run measured, in words with its numbers, and the next step.

When the page's toggles (head switches, masks) leave sentence 1's output unchanged, a class sees nothing happen. This
module reads the two runs of the Run (`pair.Comparison`) and says what did move: the probability of the output
token that fell most ("p(“3”), token 6 of the answer, fell from 1.00 to 0.98"), why the toggle could not
matter where that is so (the causal mask in greedy decoding, a padding mask with nothing padded), and offers a next
step: switching off the two heads that matter most for that token (a click, `NextStep`: explorer.app.page.next_step).
A sampled Run whose draws could not differ from greedy decoding (the top token above 0.5 at every step) is said
too. Plain data: computed while the runs are held (run.result.Analysis), kept with the result; its words are kept as
catalogue keys and values (i18n.said.Said: `[why]` of explorer/app/i18n/<lang>.notices.toml), said in the language
of the request that shows them.

Shapes: N generated tokens of sentence 1's answer; Tq x Tk one layer's decoder self-attention (H heads).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...outputs.sampling import Sampling
from ..i18n.said import Num, Said, said
from .output_chips import ClickTarget
from .pair import Comparison
from .sentence_outputs import ClassProbabilities, GeneratedText, MaskFillers, NextTokens
from .view import View

SURE = 0.5  # a drawn token above this probability is the distribution's top one: the draw equals greedy decoding


@dataclass(frozen=True)
class NextStep:
    """A click the page offers: switch off the pair of heads that moves `target` most (page.next_step)."""

    target: ClickTarget  # the token (and where the model predicts it) whose pair is searched
    text: str = ""  # sentence 1 as the Run read it (the box may have changed since)

    def label_in(self, lang: str) -> str:
        """The button's words in `lang`."""
        return said("why.step", token=self.target.label).in_language(lang)

    @property
    def label(self) -> str:
        return self.label_in("en")


@dataclass(frozen=True)
class WhySame:
    """What the page says under the results bar when nothing visible changed."""

    lines: tuple[Said, ...]  # one paragraph each, plain text in any language (the page escapes them)
    step: NextStep | None = None

    def in_language(self, lang: str) -> list[str]:
        return [line.in_language(lang) for line in self.lines]

    @property
    def text(self) -> str:
        return "\n\n".join(self.in_language("en"))


def two_numbers(before: float, after: float) -> tuple[Num, Num]:
    """Both probabilities with the fewest decimals (2 to 6) that tell them apart: 1.00 and 0.98, 1.0000 and 0.9999."""
    for digits in range(2, 7):
        a, b = f"{before:.{digits}f}", f"{after:.{digits}f}"
        if a != b:
            return Num(a), Num(b)
    return Num(f"{before:.2f}"), Num(f"{after:.2f}")


def sure(p: float) -> Num:
    """A probability near 1 with the decimals that show it is not 1: 0.97, 0.9996."""
    for digits in range(2, 7):
        if f"{p:.{digits}f}" != f"{1:.{digits}f}":
            return Num(f"{p:.{digits}f}")
    return Num("1.00")  # 1 to six decimals


def plain(x: float) -> Num:
    """A small number as a class reads it, two significant digits, no exponent: 0.000013, 0.07."""
    return Num(f"{float(f'{x:.2g}'):.10f}".rstrip("0").rstrip(".") if x else "0")


def moved(name: Said, before: float, after: float) -> Said:
    """“p(“3”) fell from 1.00 to 0.98” (or rose, or stayed); `name`: the token's or the class's words."""
    a, b = two_numbers(before, after)
    if a == b:
        return said("why.stayed", name=name, p=a)
    return said("why.fell" if after < before else "why.rose", name=name, before=a, after=b)


def token_name(label: str) -> Said:
    return said("why.token", token=label)


@dataclass(frozen=True)
class Measured:
    words: Said  # what moved most, in words with the numbers
    target: ClickTarget | None  # the token it is about (None: no token to search heads for)
    change: float  # the largest change of a probability of the output, for the reasons' words


def answer_measured(base: GeneratedText, tog: GeneratedText, start: int) -> Measured:
    """The answer's token whose probability changed most (the toggled run made the same tokens, so its probabilities
    are of the same tokens after the same prefix)."""
    drops = [b - t for b, t in zip(base.probs, tog.probs)]
    k = max(range(len(drops)), key=lambda i: abs(drops[i]))
    name = token_name(base.labels[k])
    what = f"token {k} of the answer"  # counted from 0, as everywhere on the page
    words = (said("why.answer_token", moved=moved(name, base.probs[k], tog.probs[k]), k=k, n=len(drops))
             if drops[k] else said("why.answer_same", name=name, p=Num(f"{base.probs[k]:.2f}")))
    return Measured(words, ClickTarget(start + k, base.ids[k], base.labels[k], what), abs(drops[k]))


def next_measured(base: NextTokens, tog: NextTokens, labels: list[str], codec: object, view: View) -> Measured:
    p = view.position_in(len(labels))
    favourite = int(base.top_ids[p, 0])
    name = codec.labels([favourite])[0]  # type: ignore[attr-defined]
    before = float(base.top_probs[p, 0])
    after = before if tog.favourite_probs is None else float(tog.favourite_probs[p])
    words = said("why.next_token", moved=moved(token_name(name), before, after), after=labels[p], p=p)
    return Measured(words, ClickTarget(p, favourite, name, f"a next-token candidate after “{labels[p]}”"),
                    abs(before - after))


def filler_measured(base: MaskFillers, tog: MaskFillers) -> Measured | None:
    if not base.fillers or tog.favourite_probs is None:
        return None
    first = base.fillers[0]
    before, after = first.probs[0], tog.favourite_probs[0]
    words = said("why.filler", moved=moved(token_name(first.labels[0]), before, after), mask=base.mask_token,
                 p=first.position)
    return Measured(words, ClickTarget(first.position, int(first.ids[0]), first.labels[0],
                                       f"a filler of {base.mask_token}"), abs(before - after))


def class_measured(base: ClassProbabilities, tog: ClassProbabilities) -> Measured:
    top = max(base.probs, key=base.probs.get)
    return Measured(said("why.top_class", moved=moved(said("why.class", top=top), base.probs[top], tog.probs[top])),
                    None, abs(base.probs[top] - tog.probs[top]))


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


def causal_reason(cmp: Comparison, change: float) -> Said:
    """Causal mask off: greedy decoding reads each new token from the ones before it, so the mask hides nothing
    from it; the earlier tokens, run again at each step, do see later ones (what `change` measured)."""
    base = cmp.baseline.outputs[0]
    weight, layer, head = later_weight(cmp)
    first = "why.causal_generated" if isinstance(base, GeneratedText) else "why.causal_off"
    heatmaps = (said("why.causal_heatmaps", layer=layer, head=head, weight=Num(f"{weight:.2f}")) if weight > 0.005
                else said("why.empty"))
    return said("why.causal", first=said(first, change=plain(change)), heatmaps=heatmaps)


def padding_reason(cmp: Comparison) -> Said | None:
    if len({len(r) for r in cmp.inputs.rows}) > 1:
        return None  # padded: the measured change is the padding's effect
    return said("why.padding")


def heads_reason(cmp: Comparison, step: bool) -> Said | None:
    """Heads off that changed nothing: the others carry it; the next steps (`step`: there is a token to search for)."""
    off = sum(int((m == 0).sum()) for m in (cmp.head_mask or {}).values())
    if not off:
        return None
    nexts = said("why.next_pair" if step else "why.next_more")
    return said("why.one_head" if off == 1 else "why.heads", n=off, nexts=nexts)


def sampled_said(sampling: Sampling) -> Said:
    """How the Run's tokens were drawn (run.state_line.sampled_words' words), kept for any language."""
    return said("why.how", temperature=Num(f"{sampling.temperature:g}"),
                top_k=sampling.top_k or said("state.off_value"),
                top_p=Num(f"{sampling.top_p:g}") if sampling.top_p < 1 else said("state.off_value"),
                seed=sampling.seed)


def sampling_line(cmp: Comparison) -> Said | None:
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
    return said("why.sampling", how=sampled_said(sampling), p=sure(probs[k]), k=k, token=labels[k])


def why_unchanged(cmp: Comparison, view: View, changed: bool, decoder_only: bool) -> WhySame | None:
    """The words for a Run whose toggles changed nothing in the output (`changed`: the output table's verdict), or
    whose sampling could not; None when there is nothing to explain."""
    lines: list[Said | None] = []
    step = None
    if not cmp.no_toggle and not changed:
        m = measured(cmp, view, decoder_only)
        if m is not None:
            lines.append(said("why.measured", words=m.words))
        t = cmp.toggles
        if not t.causal and "decoder" in cmp.toggled.attentions:
            lines.append(causal_reason(cmp, m.change if m else 0.0))
        if not t.padding and (reason := padding_reason(cmp)):
            lines.append(reason)
        if cmp.head_mask is not None:
            if m is not None and m.target is not None:
                step = NextStep(m.target, cmp.inputs.texts[0])
            lines.append(heads_reason(cmp, step is not None))
    if (line := sampling_line(cmp)) is not None:
        lines.append(line)
    kept = tuple(line for line in lines if line is not None)
    return WhySame(kept, step) if kept else None

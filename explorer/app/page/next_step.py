"""The results bar's "why nothing happened" line and its next step (run.unchanged): after each Run the words of its
result (`Analysis.why`) under the output, and the button that switches off the two heads that matter most for the
token whose probability moved most, then runs the page again.

Which two: every head is switched off alone on top of the page's switches and the model run again
(explorer.interpret.head_effects.why_token, on sentence 1 as the Contributions tab reads it); when no head alone moves
the token, the best pair of the strongest is searched (28 runs); when one does, the two strongest alone are taken.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import torch

from ...checkpoints import LoadedModel
from ...interpret.head_effects import Head, heads_name, why_token
from ..i18n.said import Num, Said, said
from ..i18n.words import language
from ..run.inputs import codec_for
from ..run.readings import Reading, read_texts
from ..run.request import page_heads
from ..run.toggles import Toggles, head_mask
from ..run.unchanged import NextStep, token_name
from ..serving.errors import AppError, escape_md
from ..serving.handlers import PRIVATE, reporting
from ..serving.kept import Shown
from ..serving.session import get_model
from .head_labels import parse_heads
from .head_switches import switch_updates


@dataclass(frozen=True)
class PairRequest:
    text: str  # sentence 1
    step: NextStep
    heads_on: dict[str, frozenset[tuple[int, int]]]  # the page's switches: kind -> heads on
    lang: str = "en"  # the page's language: its refusal's words


@dataclass(frozen=True)
class PairFound:
    heads: tuple[Head, ...]  # to switch off
    words: Said  # what the search measured, for the page ("… together bring p(“3”) from 0.93 to 0.01")


@torch.inference_mode()
def pair_to_switch(loaded: LoadedModel, request: PairRequest, max_tokens: int) -> PairFound:
    """The two heads that matter most for the step's token (the module docstring); AppError when none is left."""
    target = request.step.target
    reading = read_texts(loaded, request.text, None, max_tokens)[0]
    if target.extend:  # a language model's continuation before the token
        reading = Reading([*reading.src, *target.extend],
                          [*reading.src_labels, *codec_for(loaded).labels(list(target.extend))])
    src, tgt = reading.tensors(loaded.model.device)
    kinds = loaded.config.attention_kinds()
    mask = head_mask(loaded.config, Toggles(heads_on={k: v for k, v in request.heads_on.items() if k in kinds}))
    try:
        found = why_token(loaded.model, src[0], position=target.position, token=target.token,
                          tgt=None if tgt is None else tgt[0], head_mask=mask)
    except ValueError as err:
        raise AppError(str(err)) from err
    singles, name = found.singles, token_name(target.label)
    before = Num(f"{singles.baseline_prob:.3f}")
    if found.pairs is not None and not found.moved_by_one:
        v = int(found.pairs.order()[0])
        heads = found.pairs.sets[v]
        return PairFound(heads, said("why.pair", heads=heads_name(heads), name=name, before=before,
                                     after=Num(f"{float(found.pairs.prob[v]):.3f}")))
    order = [int(v) for v in singles.order() if singles.sets[v]][:2]
    if not order:
        raise AppError(said("why.all_off").in_language(request.lang))
    heads = tuple(h for v in order for h in singles.sets[v])
    probs = [Num(f"{float(singles.prob[v]):.3f}") for v in order]
    alone = probs[0] if len(probs) == 1 else said("why.and", first=probs[0], second=probs[1])
    return PairFound(heads, said("why.singles", heads=heads_name(heads), name=name, before=before, alone=alone))


class NextStepEvents:
    """The line and the button of one page (page.results: why, step, step_target, said); `app` is the page's shared
    events (events.PageEvents)."""

    def __init__(self, app: Any):
        self.app, self.page, self.ctx = app, app.page, app.ctx
        self.status = app.status  # `reporting`: a refusal becomes the status line's message (it had none: a traceback)

    def shown(self, shown: Any, switched: Any) -> dict:
        """After a Run: what the step before it switched off (`switched`, already in words), its result's words and
        step in the language of the Run's request (nothing when the result was let go or had nothing to say)."""
        r = self.page.results
        result = shown.result(self.ctx.kept) if isinstance(shown, Shown) else None
        lang = language(getattr(getattr(shown, "request", None), "lang", None))
        why = getattr(result, "why", None)
        lines = [escape_md(switched)] if isinstance(switched, str) and switched else []
        step = why.step if why is not None else None
        lines += [escape_md(line) for line in (why.in_language(lang) if why is not None else ())]
        return {r.why: "\n\n".join(lines), r.said: "", r.step_target: step, r.why_row: gr.update(visible=bool(lines)),
                r.step: gr.update(visible=True, value=step.label_in(lang)) if step else gr.update(visible=False)}

    @reporting
    def switch_pair(self, session: Any, step: Any, lang: Any, *heads: Any) -> dict:
        """The page's head switches with the two heads that matter most for the step's token off too (read on the
        sentence of the Run that offered the step); its words in the page's language `lang`."""
        if not isinstance(step, NextStep):
            raise AppError(said("why.run_first").in_language(lang))
        kinds = get_model(session, self.ctx).config.attention_kinds()
        on = {k: parse_heads(v) for k, v in page_heads(kinds, *heads).items()}
        found = self.app.compute.call(pair_to_switch, session, PairRequest(step.text, step, on, language(lang)))
        for h in found.heads:
            on[h.kind] = on[h.kind] - {(h.layer, h.head)}
        words = said("why.switched", words=found.words).in_language(lang)
        return {self.app.status: "", self.page.results.said: words,
                **switch_updates(self.page.heads, kinds, on, choices=False)}

    def wire(self) -> None:
        page, r = self.page, self.page.results
        outputs = [r.why, r.said, r.step, r.step_target, r.why_row]
        self.app.after_run.add(self.shown, [page.kept, r.said], outputs, quiet=True)
        inputs = [page.session, r.step_target, page.setting("lang"), *page.heads.values()]
        click = r.step.click(self.switch_pair, inputs, [self.app.status, r.said, *page.heads.values()], **PRIVATE)
        self.app.add_run(self.app.then_analyze(click))

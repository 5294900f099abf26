"""Baseline vs changed output of one sentence, the change being a residual-stream hook: SAE latents switched
(explorer.interpret.sae.sae_hook, the SAE's error term kept) or a steering vector added (add_hook). The hook applies
at every position and at every generated step; without it the run is the model's own, so with nothing switched (or a
coefficient of 0) the two outputs are the same to the bit.

What is compared, as the page's output table does for the head switches:
  a language model     the 10 most probable next tokens after the sentence, and its greedy continuation
                       (`new_tokens` tokens, the page's "Continue")
  a sequence model     its greedy answer (the date models, induction-gpt, translation models), generated as the page
                       generates it (explorer.app.run.model_run.generate_rows' settings), token by token with the hook
An encoder has no output to generate: AppError.

Shapes: T tokens of the sentence, V vocabulary, k next tokens listed, N generated tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ....checkpoints import LoadedModel
from ....model.stacks import ResidHook
from ....outputs.generate import generate
from ...run.inputs import TextCodec, answer_length
from ...run.model_run import TOP_K, answer, is_language_model, takes_length
from ...run.sentence_outputs import GeneratedText
from ...serving.errors import AppError
from ...serving.limits import MAX_NEW_TOKENS

NO_OUTPUT = ("This model is an encoder: it generates nothing to compare. Switches and steering change the output of "
             "language models and sequence models (the date models, translation models).")


@dataclass(frozen=True)
class TopTokens:
    """A language model's k most probable next tokens after the sentence."""

    ids: list[int]
    labels: list[str]
    probs: list[float]


@dataclass(frozen=True)
class OutputComparison:
    """The tab's output table: the model's own output and the output with the change, small and plain."""

    change: str  # "switched" | "steered": what the changed run is called in the table
    what: str  # the change in words (plain text), e.g. "latents 12:off at blocks.2.hook_resid_pre"
    prompt_labels: list[str]  # the sentence as the model read it
    baseline: GeneratedText  # a language model's continuation, or a sequence model's answer
    changed: GeneratedText
    next_baseline: TopTokens | None = None  # language models only
    next_changed: TopTokens | None = None
    favourite_changed: float | None = None  # the baseline's top next token's probability in the changed run
    nothing_changed: bool = False  # no switch set (or a coefficient of 0): the changed run is the model's own
    notes: list[str] = field(default_factory=list)
    why: list[str] = field(default_factory=list)  # why nothing changed, in words (features.why_same), under the verdict

    @property
    def first_difference(self) -> int | None:
        """The first generated token where the two differ (None: the same tokens)."""
        a, b = self.baseline.ids, self.changed.ids
        first = next((n for n, (x, y) in enumerate(zip(a, b)) if x != y), None)
        return min(len(a), len(b)) if first is None and len(a) != len(b) else first

    @property
    def differs(self) -> bool:
        top_moved = self.next_baseline is not None and self.next_baseline.ids[0] != self.next_changed.ids[0]
        return top_moved or self.first_difference is not None


def _top(model, ids: torch.Tensor, hook: ResidHook | None, codec: TextCodec, k: int) -> tuple[TopTokens, torch.Tensor]:
    """The next-token top k after the sentence ids (1, T) with `hook`, and the probabilities (V,)."""
    real = torch.ones_like(ids, dtype=torch.bool)  # every token is real (the pad id may be a token of the text)
    out = model.decode(ids, need_weights=False, key_mask=real, resid_hook=hook).output[:, -1]  # (1, D) the last one
    probs = model.generator(out)[0].float().exp()  # (V,) the generator gives log-probabilities
    top = probs.topk(min(k, probs.shape[0]))
    picked = top.indices.tolist()
    return TopTokens(picked, codec.labels(picked), top.values.tolist()), probs


def _generated(loaded: LoadedModel, codec: TextCodec, src: torch.Tensor, hook: ResidHook | None,
               new_tokens: int) -> GeneratedText:
    """Greedy generation from the sentence ids (1, S), with the page's settings (run.model_run.generate_rows)."""
    task = loaded.task
    kwargs = dict(eos_id=task.get("eos_id", loaded.target_tokenizer.eos_id), max_new_tokens=new_tokens,
                  suppress_ids=task.get("suppress_ids", ()), resid_hook=hook,
                  key_mask=torch.ones_like(src, dtype=torch.bool))  # one sentence: every token is real
    if loaded.arch == "encoder-decoder":
        bos = task.get("bos_id", loaded.target_tokenizer.bos_id)
        if bos is None:
            raise AppError("this model's task names no start token (bos_id): it cannot generate")
        kwargs["bos_id"] = bos
    return answer(loaded, codec, generate(loaded.model, src, **kwargs), 0)


def generated_length(loaded: LoadedModel, new_tokens: int | None) -> int:
    """Tokens to generate: a language model continues with `new_tokens` (at most MAX_NEW_TOKENS); a Hub
    encoder-decoder answers with at most that many; the date models and induction-gpt with their task's own length."""
    if new_tokens is None or not takes_length(loaded):
        return answer_length(loaded)
    if is_language_model(loaded):
        return max(0, min(int(new_tokens), MAX_NEW_TOKENS))
    return max(1, min(int(new_tokens), answer_length(loaded)))


@torch.inference_mode()
def compare_outputs(loaded: LoadedModel, codec: TextCodec, ids: list[int], labels: list[str], hook: ResidHook | None,
                    *, change: str, what: str, new_tokens: int | None = None, nothing_changed: bool = False,
                    k: int = TOP_K) -> OutputComparison:
    """The model's output on the sentence `ids` (as the page encodes sentence 1) without and with `hook`."""
    if loaded.arch == "encoder":
        raise AppError(NO_OUTPUT)
    model = loaded.model
    src = torch.tensor([ids], dtype=torch.long, device=model.device)
    length = generated_length(loaded, new_tokens)
    runs = [_generated(loaded, codec, src, h, length) for h in (None, hook)]
    if not is_language_model(loaded):
        return OutputComparison(change, what, labels, *runs, nothing_changed=nothing_changed)
    (base, _), (changed, probs) = (_top(model, src, h, codec, k) for h in (None, hook))
    return OutputComparison(change, what, labels, *runs, base, changed, float(probs[base.ids[0]]),
                            nothing_changed=nothing_changed)

"""One run of the model under one set of toggles -> a typed result: the tokens on each attention axis, the
masks the model applied, every attention map, the output per sentence, and the generation behind it.

Shapes: B sentences, L layers, H heads, S source / T target length, N generated tokens. Attention kinds are
"encoder" (self), "decoder" (self) and "cross". Sequence models first generate their answer (greedy or sampled, with
the toggles), then run once over source + answer so that every layer's attention over the answer is shown;
a `teacher` (the baseline's answer) makes the toggled run attend over the same tokens, so the two can be
subtracted. Hub encoder-decoders (T5, BART, Marian) generate with `explorer.outputs.generate` like the date models,
never choosing their task's `suppress_ids`; a masked LM's output is the top fillers of each mask token
(explorer.outputs.masked_lm).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor

from ...batching import pad_rows
from ...checkpoints import LoadedModel
from ...model import AttentionMasks, Record
from ...model.cache import DecoderCache
from ...outputs import masked_lm
from ...outputs.classifier import class_probabilities
from ...outputs.generate import Generation, generate
from ...outputs.sampling import Sampling
from ..serving.errors import AppError
from ..serving.limits import MAX_NEW_TOKENS
from .inputs import PAD_LABEL, Inputs, TextCodec, answer_length, pad_id_of, row_mask
from .returned import full_masks, norms_of, on_cpu, values_record, weights_dtype
from .predictions import chosen_predictions, every_position, first_next_tokens
from .sampled import FirstStep, first_steps
from .sentence_outputs import ClassProbabilities, Embedding, GeneratedText, MaskFillers, Output
from .toggles import Toggles, custom_mask
from .view import View


TOP_K = 10  # next tokens listed per position


@dataclass
class Run:
    attentions: dict[str, tuple[Tensor, ...]]  # kind -> per layer (B, H, Tq, Tk), float32 on the CPU
    masks: dict[str, Tensor]  # kind -> (B, Tq, Tk) bool, what the model applied (True = may attend)
    queries: dict[str, list[list[str]]]  # kind -> per sentence, a label per query position
    keys: dict[str, list[list[str]]]  # kind -> per sentence, a label per key position
    outputs: list[Output]  # per sentence
    generations: list[tuple[Generation, int]] = field(default_factory=list)  # per sentence: generation, its row
    decoder_rows: list[list[int]] = field(default_factory=list)  # per sentence: answer ids the decoder read
    notices: list[str] = field(default_factory=list)
    ids: dict[str, list[list[int]]] = field(default_factory=dict)  # self-attention kind -> per sentence, the ids
    # its queries (= keys) read, unpadded: what head roles are scored on (explorer.interpret.roles)
    rest: Callable[["Run | None"], None] | None = None  # what still fills `outputs` and `generations` (a language
    # model read before its vocabulary head, see run_language_model); None once the run is complete
    value_norms: dict[str, tuple[Tensor, ...]] = field(default_factory=dict)  # kind -> per layer (B, H, S): the
    # length of what each key adds through each head (explorer.interpret.value_weighted), for value-weighted views
    first_steps: list[FirstStep] = field(default_factory=list)  # a sampled baseline's first draws (run.sampled)
    every_position: Callable[["Run | None"], None] | None = None  # an LM's predictions everywhere (run.predictions)
    record: Record | None = field(default=None, repr=False)  # the forward's: until run.captures keeps the view's block

    @property
    def complete(self) -> bool:
        return self.rest is None

    def finish(self, baseline: "Run | None" = None) -> None:
        """Compute what the run still lacks (its outputs); `baseline`: the finished baseline of a toggled run."""
        if self.rest is not None:
            rest, self.rest = self.rest, None
            rest(baseline)
        self.predict_every_position(baseline)

    def predict_every_position(self, baseline: "Run | None" = None) -> None:
        """Make what `every_position` left (once, after the outputs); `baseline` as in `finish`, predicted."""
        if self.every_position is not None:
            later, self.every_position = self.every_position, None
            later(baseline)


def mask_fillers(loaded: LoadedModel, logits: Tensor, inputs: Inputs, baseline: Run | None) -> list[Output]:
    """Top fillers of every mask token per sentence from the MLM logits (B, T, V) (explorer.outputs.masked_lm); a
    toggled run
    also rates the baseline's top filler of each mask."""
    task, outputs = loaded.task, []
    for b, row in enumerate(inputs.rows):
        fills = masked_lm.fill_masks(logits[b, : len(row)], row, loaded.tokenizer, task["mask_id"], TOP_K)
        favourites = None
        if baseline is not None:
            tops = [f.ids[0] for f in baseline.outputs[b].fillers]  # type: ignore[union-attr]
            favourites = [logits[b, f.position].float().softmax(-1)[top].item() for f, top in zip(fills, tops)]
        outputs.append(MaskFillers(fills, favourites, task["mask_token"]))
    return outputs


def run_encoder(loaded: LoadedModel, inputs: Inputs, toggles: Toggles, head_mask: dict | None,
                baseline: Run | None = None, view: View | None = None) -> Run:
    model, c = loaded.model, loaded.config
    src, real = inputs.padded(pad_id_of(loaded), model.device), inputs.key_mask(model.device)
    mask, notice = custom_mask(toggles, src.shape[1], model.device)
    record = values_record(view)
    out = model(src, padding=toggles.padding, attn_mask=mask, head_mask=head_mask, key_mask=real,
                weights_dtype=weights_dtype(loaded, *src.shape), record=record)
    attentions = {"encoder": on_cpu(out.attentions.encoder)}
    labels = inputs.padded_labels()
    if out.logits is not None and c.num_classes:
        outputs = [ClassProbabilities(p) for p in class_probabilities(out.logits, loaded.labels)]
    elif out.logits is not None and is_masked_lm(loaded):
        outputs = mask_fillers(loaded, out.logits, inputs, baseline)
    else:
        from ...outputs.embeddings import cls_pool, mean_pool

        pool = cls_pool if loaded.task.get("pooling") == "cls" else mean_pool
        pooled = pool(out.last_hidden_state.float(), real).cpu()
        outputs = [Embedding(v) for v in pooled]
    return Run(attentions, full_masks(out.masks, attentions), {"encoder": labels}, {"encoder": labels}, outputs,
               notices=[notice] if notice else [], ids={"encoder": inputs.rows},
               value_norms=norms_of(loaded, record, attentions), record=record)


def generate_rows(loaded: LoadedModel, inputs: Inputs, toggles: Toggles, head_mask: dict | None,
                  new_tokens: int | None = None, prompts: DecoderCache | None = None,
                  sampling: Sampling | None = None) -> list[tuple[Generation, int]]:
    """Greedy (or, with `sampling`, sampled) generation per sentence: one batch for an encoder-decoder, one call per
    decoder-only prompt (prompts of different lengths cannot share a batch without left padding). `prompts`: the keys
    and values of the sentences' batch, from the run just made with the same toggles, so no prompt token is run
    again. Each call draws from a generator seeded afresh: every run with the same seed reads the same uniforms."""
    model, c, task = loaded.model, loaded.config, loaded.task
    bos = task.get("bos_id", loaded.target_tokenizer.bos_id)
    eos = task.get("eos_id", loaded.target_tokenizer.eos_id)
    kwargs = dict(eos_id=eos, max_new_tokens=answer_length(loaded) if new_tokens is None else new_tokens,
                  padding=toggles.padding, causal=toggles.causal, head_mask=head_mask,
                  suppress_ids=task.get("suppress_ids", ()), sampling=sampling,
                  weights_dtype=weights_dtype(loaded, 1, max(map(len, inputs.rows)) + MAX_NEW_TOKENS))
    if c.arch == "encoder-decoder":
        if bos is None:
            raise AppError("this model's task names no start token (bos_id): it cannot generate")
        src = inputs.padded(pad_id_of(loaded), model.device)
        g = generate(model, src, bos_id=bos, attn_mask=custom_mask(toggles, src.shape[1], model.device)[0],
                     key_mask=inputs.key_mask(model.device), **kwargs)
        return [(g, b) for b in range(src.shape[0])]
    gens = []
    for b, row in enumerate(inputs.rows):
        prompt = torch.tensor([row], dtype=torch.long, device=model.device)
        cache = prompts.select(b, len(row) - 1) if prompts is not None and len(row) > 1 else None
        gens.append((generate(model, prompt, attn_mask=custom_mask(toggles, len(row), model.device)[0], cache=cache,
                              **kwargs), 0))
    return gens


def answer(loaded: LoadedModel, codec: TextCodec, gen: Generation, b: int) -> GeneratedText:
    """Row b of a generation, cut after the end token."""
    ids = [int(i) for i in gen.tokens[b].tolist()]
    probs = gen.log_probs[b].exp().tolist()
    eos = loaded.task.get("eos_id", loaded.target_tokenizer.eos_id)
    n = ids.index(eos) + 1 if eos is not None and eos in ids else len(ids)
    return GeneratedText(codec.decode(ids[:n]), ids[:n], codec.labels(ids[:n]), probs[:n])


def run_language_model(loaded: LoadedModel, codec: TextCodec, inputs: Inputs, toggles: Toggles,
                       head_mask: dict | None, new_tokens: int, sampling: Sampling | None = None,
                       view: View | None = None) -> Run:
    """A causal LM reads the sentences as typed: attention over them now; its outputs, the next-token predictions
    after `view.position` and a greedy continuation of each sentence, are left to `Run.finish` (drawing the attention
    need not wait for them), its predictions at every position to `Run.every_position` (run.predictions)."""
    model = loaded.model
    src, real = inputs.padded(pad_id_of(loaded), model.device), inputs.key_mask(model.device)
    mask, notice = custom_mask(toggles, src.shape[1], model.device)
    # With the causal mask, the keys and values of this run are the continuation's too (the prompts are not rerun).
    prompts = DecoderCache(len(model.decoder.layers)) if toggles.causal and new_tokens > 0 else None
    record = values_record(view)
    dec = model.decode(src, padding=toggles.padding, causal=toggles.causal, attn_mask=mask,
                       head_mask=model.head_masks(head_mask).get("decoder"), key_mask=real,
                       weights_dtype=weights_dtype(loaded, *src.shape), cache=prompts, record=record)
    attentions = {"decoder": on_cpu(dec.self_attentions)}
    labels = inputs.padded_labels()
    run = Run(attentions, full_masks(AttentionMasks(decoder=dec.self_mask), attentions), {"decoder": labels},
              {"decoder": labels}, [], notices=[notice] if notice else [], ids={"decoder": inputs.rows},
              value_norms=norms_of(loaded, record, attentions), record=record)
    hidden = dec.output  # (B, T, D) the last layer's output, before the vocabulary head
    del dec

    @torch.inference_mode()
    def outputs(baseline: Run | None) -> None:
        """The predictions after the chosen position (the baseline's favourite rated: a toggled run), continuations."""
        nonlocal prompts
        chosen = chosen_predictions(model.generator, hidden, src, inputs.rows, view, TOP_K, baseline)
        gens = generate_rows(loaded, inputs, toggles, head_mask, new_tokens, prompts, sampling)
        prompts = None
        # The baseline's first draw (what the sampling view shows): the vocabulary head at each prompt's last token.
        run.first_steps = first_steps(lambda b: model.generator.logits(hidden[b, len(inputs.rows[b]) - 1]), gens,
                                      sampling if baseline is None else None, loaded.task.get("suppress_ids", ()))
        for b, (row, (gen, gb)) in enumerate(zip(inputs.rows, gens)):
            run.outputs.append(first_next_tokens(chosen, b, len(row), answer(loaded, codec, gen, gb)))
        run.generations.extend(gens)

    @torch.inference_mode()
    def predictions(baseline: Run | None) -> None:
        run.outputs[:] = every_position(model.generator, hidden, src, real, run.outputs, TOP_K, baseline)

    run.rest, run.every_position = outputs, predictions
    return run


def run_sequence_model(loaded: LoadedModel, codec: TextCodec, inputs: Inputs, toggles: Toggles,
                       head_mask: dict | None, teacher: list[list[int]] | None, new_tokens: int | None = None,
                       sampling: Sampling | None = None, view: View | None = None) -> Run:
    """Generate (at most `new_tokens`; None: the task's limit; drawn with `sampling`), then one forward pass over the
    answers (the `teacher` rows when given) with every attention."""
    model, c = loaded.model, loaded.config
    baseline_run = teacher is None
    gens = generate_rows(loaded, inputs, toggles, head_mask, new_tokens, sampling=sampling)
    outputs = [answer(loaded, codec, g, b) for g, b in gens]
    teacher = teacher if teacher is not None else [o.ids for o in outputs]
    record = values_record(view)
    if c.arch == "encoder-decoder":
        bos = loaded.task.get("bos_id", loaded.target_tokenizer.bos_id)
        src = inputs.padded(pad_id_of(loaded), model.device)
        dec_rows = [[bos, *t] for t in teacher]
        tgt = pad_rows(dec_rows, pad_id_of(loaded), model.device)
        mask, notice = custom_mask(toggles, src.shape[1], model.device)
        # The answers' own tokens are real even where one is the padding id (T5 and Marian start with it).
        out = model(src, tgt, padding=toggles.padding, causal=toggles.causal, attn_mask=mask, head_mask=head_mask,
                    key_mask=inputs.key_mask(model.device), tgt_key_mask=row_mask(dec_rows, model.device),
                    weights_dtype=weights_dtype(loaded, *src.shape), record=record)
        attentions = {k: on_cpu(getattr(out.attentions, k)) for k in ("encoder", "decoder", "cross")}
        src_labels, tgt_labels = inputs.padded_labels(), padded_labels(codec, dec_rows)
        queries = {"encoder": src_labels, "decoder": tgt_labels, "cross": tgt_labels}
        keys = {"encoder": src_labels, "decoder": tgt_labels, "cross": src_labels}
        ids = {"encoder": inputs.rows, "decoder": dec_rows}
        first = [0] * len(dec_rows)  # the decoder's start token: where the first generated token is read
    else:
        seqs = [[*r, *t] for r, t in zip(inputs.rows, teacher)]
        seq = pad_rows(seqs, pad_id_of(loaded), model.device)
        mask, notice = custom_mask(toggles, seq.shape[1], model.device)
        out = model(seq, padding=toggles.padding, causal=toggles.causal, attn_mask=mask, head_mask=head_mask,
                    key_mask=row_mask(seqs, model.device), weights_dtype=weights_dtype(loaded, *seq.shape),
                    record=record)
        attentions = {"decoder": on_cpu(out.attentions.decoder)}
        queries = keys = {"decoder": padded_labels(codec, seqs, inputs.labels)}
        ids = {"decoder": seqs}
        first = [len(r) - 1 for r in inputs.rows]  # each prompt's last token
    steps = first_steps(lambda b: out.logits[b, first[b]], gens, sampling if baseline_run else None,
                        loaded.task.get("suppress_ids", ()))  # the baseline's first draw: what the view shows
    return Run(attentions, full_masks(out.masks, attentions), queries, keys, outputs, gens, teacher,
               [notice] if notice else [], ids, value_norms=norms_of(loaded, record, attentions), first_steps=steps,
               record=record)


def padded_labels(codec: TextCodec, rows: list[list[int]], prompt_labels: list[list[str]] | None = None
                  ) -> list[list[str]]:
    """Labels of id rows padded to one width; a row's prompt keeps the labels it got from its text."""
    width = max(len(r) for r in rows)
    out = []
    for i, row in enumerate(rows):
        known = prompt_labels[i] if prompt_labels else []
        labels = list(known) + codec.labels(row[len(known):])
        out.append(labels + [PAD_LABEL] * (width - len(row)))
    return out


def is_language_model(loaded: LoadedModel) -> bool:
    return loaded.task.get("name") == "causal-lm"


def is_masked_lm(loaded: LoadedModel) -> bool:
    return loaded.task.get("name") == "masked-lm" and loaded.task.get("mask_id") is not None


def takes_length(loaded: LoadedModel) -> bool:
    """Whether the page's generated-tokens control applies: language models and Hub encoder-decoders (the date
    models keep their task's own answer length)."""
    return loaded.task.get("name") in ("causal-lm", "seq2seq")


@torch.inference_mode()
def run_model(loaded: LoadedModel, codec: TextCodec, inputs: Inputs, toggles: Toggles, head_mask: dict | None,
              baseline: Run | None = None, new_tokens: int | None = None, later: bool = False,
              sampling: Sampling | None = None, view: View | None = None) -> Run:
    """One full run under `toggles` (see the module docstring). A toggled run gets the `baseline` run, so it reads
    the same answer (sequence models) or rates the same favourites (language models, masked LMs). `new_tokens`: how
    many tokens a language model continues each sentence with, or a Hub encoder-decoder generates at most (default:
    the task's own limit). `later`: a language model's outputs are left to `Run.finish(baseline)` (the attention
    is ready first); other models' runs are complete at once. `sampling`: how generated tokens are drawn (None:
    greedy; `pair` passes the same to both runs, so they read the same seeded uniforms). `view` (fitted): the block
    recorded (`Run.record`), a language model's next-token position predicted first (`Run.predict_every_position`)."""
    if loaded.arch == "encoder":
        return run_encoder(loaded, inputs, toggles, head_mask, baseline, view)
    if is_language_model(loaded):
        run = run_language_model(loaded, codec, inputs, toggles, head_mask,
                                 answer_length(loaded) if new_tokens is None else new_tokens, sampling, view)
        if not later:
            run.finish(baseline)
        return run
    teacher = baseline.decoder_rows if baseline is not None else None
    # An encoder-decoder answers with at least one token; the date models keep their own answer length.
    length = None
    if new_tokens is not None and takes_length(loaded):
        length = max(1, min(new_tokens, answer_length(loaded)))
    return run_sequence_model(loaded, codec, inputs, toggles, head_mask, teacher, length, sampling, view)

"""The output table: what the model produced with and without the toggles, side by side, per sentence.

Generated text (date models, translation and other encoder-decoders) with each token's probability; a language
model's next-token top 10 after the chosen position and its greedy continuation; a masked LM's top 10 fillers of
each mask token; class probabilities (classifiers); for encoders without a head, how similar the sentence
embeddings are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ... import viz
from ...labels import printable
from ..serving.errors import escape_md
from .inputs import TextCodec
from .pair import Comparison
from .sampled import sampling_words
from .sentence_outputs import ClassProbabilities, Embedding, GeneratedText, MaskFillers, NextTokens
from .view import View


@dataclass
class OutputTable:
    headers: list[str]
    rows: list[list[Any]]
    summary: str  # Markdown: did the toggles change the output?
    changed: bool

    def __post_init__(self) -> None:
        if len(set(self.headers)) != len(self.headers):  # gr.Dataframe would drop the repeated columns
            raise ValueError(f"output table headers must be unique: {self.headers}")


def generated_table(pairs: list[tuple[GeneratedText, GeneratedText]]) -> OutputTable:
    rows, changed = [], False
    for s, (base, tog) in enumerate(pairs, start=1):
        for name, out in (("baseline", base), ("toggled", tog)):
            per_token = " ".join(f"{label} ({p:.2f})" for label, p in zip(out.labels, out.probs))
            mean = float(np.mean(out.probs)) if out.probs else 0.0
            rows.append([s, name, printable(out.text), per_token, round(mean, 4)])
        changed |= base.ids != tog.ids
    lines = [output_line(s, base, tog) for s, (base, tog) in enumerate(pairs, start=1)]
    lines.append("**The toggles changed the generated output.**" if changed else
                 "The generated output is the same with and without the toggles "
                 "(see the probabilities and heatmaps for smaller changes).")
    return OutputTable(["#", "run", "output", "tokens (probability)", "mean p"], rows, "\n\n".join(lines), changed)


def output_line(sentence: int, base: GeneratedText, tog: GeneratedText) -> str:
    """“baseline” → with the toggles: “toggled” (from token n on), for the summary."""
    line = f"Sentence {sentence}: “{escape_md(printable(base.text))}”"
    if tog is base:
        return line
    first = next((n for n, (a, b) in enumerate(zip(base.ids, tog.ids)) if a != b), None)
    if first is None and len(base.ids) != len(tog.ids):
        first = min(len(base.ids), len(tog.ids))
    where = "the same" if first is None else f"different from token {first} on"
    return line + f" → with the toggles: “{escape_md(printable(tog.text))}” ({where})"


def class_table(pairs: list[tuple[ClassProbabilities, ClassProbabilities]]) -> OutputTable:
    rows, changed = [], False
    for s, (base, tog) in enumerate(pairs, start=1):
        rows += [[s, name, round(base.probs[name], 4), round(tog.probs[name], 4)] for name in base.probs]
        changed |= max(base.probs, key=base.probs.get) != max(tog.probs, key=tog.probs.get)
    summary = ("**The toggles changed the predicted class.**" if changed
               else "The predicted class is the same with and without the toggles.")
    return OutputTable(["#", "class", "baseline p", "toggled p"], rows, summary, changed)


def embedding_table(pairs: list[tuple[Embedding, Embedding]]) -> OutputTable:
    from ...outputs.embeddings import cosine_similarity

    def cos(a: Embedding, b: Embedding) -> float:
        return float(cosine_similarity(a.vector, b.vector))

    rows, changed = [], False
    if len(pairs) == 2:
        (b1, t1), (b2, t2) = pairs
        before, after = cos(b1, b2), cos(t1, t2)
        rows.append(["cosine similarity of sentence 1 and 2", round(before, 4), round(after, 4)])
        changed = abs(before - after) > 1e-4
    for s, (base, tog) in enumerate(pairs, start=1):
        same = cos(base, tog)
        rows.append([f"sentence {s}: embedding toggled vs baseline (cosine)", 1.0, round(same, 4)])
        changed |= same < 1 - 1e-4
    summary = ("Sentence embeddings are the mean of the last layer's token vectors. "
               + ("**The toggles changed the embeddings.**" if changed
                  else "The toggles did not change the embeddings."))
    return OutputTable(["comparison", "baseline", "toggled"], rows, summary, changed)


NEXT_TOKEN_HEADERS = ["#", "rank", "next token (baseline)", "p baseline", "next token (toggled)", "p toggled"]


def next_token_table(pairs: list[tuple[NextTokens, NextTokens]], codec: TextCodec, labels: list[list[str]],
                     view: View) -> OutputTable:
    """Top 10 after the chosen position, baseline vs toggled; the summary says how the baseline's favourite fared
    and how each sentence continues."""
    rows, lines, changed = [], [], False
    for s, ((base, tog), words) in enumerate(zip(pairs, labels), start=1):
        p = view.position_in(len(words))
        base_labels, tog_labels = codec.labels(base.top_ids[p].tolist()), codec.labels(tog.top_ids[p].tolist())
        for rank, (bl, bp, tl, tp) in enumerate(zip(base_labels, base.top_probs[p].tolist(), tog_labels,
                                                    tog.top_probs[p].tolist()), start=1):
            rows.append([s, rank, bl, round(bp, 4), tl, round(tp, 4)])
        favourite, before = base_labels[0], float(base.top_probs[p, 0])
        after = before if tog.favourite_probs is None else float(tog.favourite_probs[p])
        lines.append(f"Sentence {s}, after “{escape_md(words[p])}” (position {p}): the model expects "
                     f"**{escape_md(favourite)}** (p = {before:.3f})" + (
                         "." if tog.favourite_probs is None else
                         f"; with the toggles p = {after:.3f} ({after - before:+.3f}), and the top token is "
                         f"**{escape_md(tog_labels[0])}**."))
        lines.append(f"Continuation: “{escape_md(printable(base.continuation.text))}”" + (
            "" if tog is base else f" → with the toggles: “{escape_md(printable(tog.continuation.text))}”"))
        changed |= base.top_ids[p, 0] != tog.top_ids[p, 0] or base.continuation.ids != tog.continuation.ids
    lines.append("**The toggles changed the prediction.**" if changed else
                 "The top prediction and the continuation are the same with and without the toggles.")
    return OutputTable(NEXT_TOKEN_HEADERS, rows, "\n\n".join(lines), bool(changed))


def filler_table(pairs: list[tuple[MaskFillers, MaskFillers]]) -> OutputTable:
    """Top 10 fillers of each mask token, baseline vs toggled; the summary says how the baseline's top filler fared,
    and how to add a mask token to a sentence that has none."""
    rows, lines, changed = [], [], False
    for s, (base, tog) in enumerate(pairs, start=1):
        if not base.fillers:
            lines.append(f"Sentence {s} has no {escape_md(base.mask_token)}: write {escape_md(base.mask_token)} "
                         f"where a word is missing (“The capital of France is {escape_md(base.mask_token)}.”) to "
                         f"see the model's 10 most probable fillers.")
        for m, (bf, tf) in enumerate(zip(base.fillers, tog.fillers)):
            for rank, row in enumerate(zip(bf.labels, bf.probs, tf.labels, tf.probs), start=1):
                rows.append([s, bf.position, rank, row[0], round(row[1], 4), row[2], round(row[3], 4)])
            line = (f"Sentence {s}, {escape_md(base.mask_token)} at position {bf.position}: the model fills in "
                    f"**{escape_md(bf.labels[0])}** (p = {bf.probs[0]:.3f})")
            if tog.favourite_probs is not None:
                after = tog.favourite_probs[m]
                line += (f"; with the toggles p = {after:.3f} ({after - bf.probs[0]:+.3f}), and the top filler is "
                         f"**{escape_md(tf.labels[0])}**")
            lines.append(line + ".")
            changed |= bf.ids[0] != tf.ids[0]
    if any(b.fillers for b, _ in pairs):
        lines.append("**The toggles changed the top filler.**" if changed else
                     "The top fillers are the same with and without the toggles.")
    headers = ["#", "position", "rank", "filler (baseline)", "p baseline", "filler (toggled)", "p toggled"]
    return OutputTable(headers, rows, "\n\n".join(lines), changed)


TABLES = {GeneratedText: generated_table, ClassProbabilities: class_table, Embedding: embedding_table}


def output_table(cmp: Comparison, view: View) -> OutputTable:
    table = outputs_table(cmp, view)
    if cmp.sampling is not None:  # said under the outputs too: a screenshot of the table is never taken for greedy
        table.summary += (f"\n\nGenerated tokens {sampling_words(cmp.sampling)} (not greedy; the baseline and the "
                          "toggled run drew the same random numbers, so they differ only where the model does).")
    if cmp.greedy is not None:  # the greedy answer beside the sampled one
        table.summary += "\n\n" + greedy_lines(cmp)
        if table.headers[1] == "run":
            table.rows += [[s, "greedy (Sample off)", printable(g.text), " ".join(f"{label} ({p:.2f})" for label, p in
                           zip(g.labels, g.probs)), round(float(np.mean(g.probs)) if g.probs else 0.0, 4)]
                           for s, g in enumerate(cmp.greedy, start=1)]
    return table


def greedy_lines(cmp: Comparison) -> str:
    """Each sentence's sampled baseline answer beside its greedy one, and where they part."""
    lines = []
    for s, (out, greedy) in enumerate(zip(cmp.baseline.outputs, cmp.greedy or []), start=1):
        sampled = out.continuation if isinstance(out, NextTokens) else out
        if not isinstance(sampled, GeneratedText):
            continue
        first = next((n for n, (a, b) in enumerate(zip(sampled.ids, greedy.ids)) if a != b), None)
        if first is None and len(sampled.ids) != len(greedy.ids):
            first = min(len(sampled.ids), len(greedy.ids))
        where = "the same" if first is None else f"the draws differ from token {first} on"
        lines.append(f"Sentence {s}, sampled: “{escape_md(printable(sampled.text))}” · greedy (Sample off): "
                     f"“{escape_md(printable(greedy.text))}” ({where}).")
    return "\n\n".join(lines)


def outputs_table(cmp: Comparison, view: View) -> OutputTable:
    pairs = list(zip(cmp.baseline.outputs, cmp.toggled.outputs))
    if isinstance(pairs[0][0], NextTokens):
        return next_token_table(pairs, cmp.codec, cmp.inputs.labels, view)
    if isinstance(pairs[0][0], MaskFillers):
        return filler_table(pairs)
    return TABLES[type(pairs[0][0])](pairs)


@dataclass(frozen=True)
class SurprisalInputs:
    words: list[str]  # the tokens the values belong to (each but the first)
    baseline: np.ndarray | None  # (T - 1,) nats; None for a model that is not a language model
    toggled: np.ndarray | None  # None when nothing is toggled
    sentence: int


def surprisal_inputs(cmp: Comparison, view: View) -> SurprisalInputs:
    cmp.predict_every_position()  # every token's surprisal (the outputs hold the chosen position's predictions)
    base, tog = cmp.baseline.outputs[view.row], cmp.toggled.outputs[view.row]
    if not isinstance(base, NextTokens):
        return SurprisalInputs([], None, None, view.sentence)
    return SurprisalInputs(cmp.inputs.labels[view.row][1:], base.surprisal.numpy(),
                           None if cmp.no_toggle else tog.surprisal.numpy(), view.sentence)


def surprisal_figure(inp: SurprisalInputs) -> go.Figure:
    """A language model's surprisal at each token of the chosen sentence, with and without the toggles."""
    if inp.baseline is None:
        return viz.message_figure("Surprisal is shown for language models.")
    return viz.surprisal_chart(inp.words, inp.baseline, inp.toggled,
                               title=f"Surprisal of each token, sentence {inp.sentence}")

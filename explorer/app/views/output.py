"""The output table: what the model produced with and without the toggles, side by side, per sentence.

Generated text (date models and other sequence models) with each token's probability; class
probabilities (classifiers); for encoders without a head, how similar the sentence embeddings are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..compare import Comparison
from ..runs import ClassProbabilities, Embedding, GeneratedText


@dataclass
class OutputTable:
    headers: list[str]
    rows: list[list[Any]]
    summary: str  # Markdown: did the toggles change the output?
    changed: bool


def generated_table(pairs: list[tuple[GeneratedText, GeneratedText]]) -> OutputTable:
    rows, changed = [], False
    for s, (base, tog) in enumerate(pairs, start=1):
        for name, out in (("baseline", base), ("toggled", tog)):
            per_token = " ".join(f"{label} ({p:.2f})" for label, p in zip(out.labels, out.probs))
            rows.append([s, name, out.text, per_token, round(float(np.mean(out.probs)) if out.probs else 0.0, 4)])
        changed |= base.ids != tog.ids
    summary = ("**The toggles changed the generated output.**" if changed else
               "The generated output is the same with and without the toggles "
               "(see the probabilities and heatmaps for smaller changes).")
    return OutputTable(["#", "run", "output", "tokens (probability)", "mean p"], rows, summary, changed)


def class_table(pairs: list[tuple[ClassProbabilities, ClassProbabilities]]) -> OutputTable:
    rows, changed = [], False
    for s, (base, tog) in enumerate(pairs, start=1):
        rows += [[s, name, round(base.probs[name], 4), round(tog.probs[name], 4)] for name in base.probs]
        changed |= max(base.probs, key=base.probs.get) != max(tog.probs, key=tog.probs.get)
    summary = ("**The toggles changed the predicted class.**" if changed
               else "The predicted class is the same with and without the toggles.")
    return OutputTable(["#", "class", "baseline p", "toggled p"], rows, summary, changed)


def embedding_table(pairs: list[tuple[Embedding, Embedding]]) -> OutputTable:
    from ...embeddings import cosine_similarity

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


TABLES = {GeneratedText: generated_table, ClassProbabilities: class_table, Embedding: embedding_table}


def output_table(cmp: Comparison) -> OutputTable:
    pairs = list(zip(cmp.baseline.outputs, cmp.toggled.outputs))
    return TABLES[type(pairs[0][0])](pairs)

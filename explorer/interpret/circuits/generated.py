"""Tasks made for the shipped models, from their own training data's recipes (explorer.training).

    generated_task(loaded, n=64, seed=0) -> Task

- induction-gpt ("induction"): clean = [BOS] + A + A[:k], A `span` distinct random ordinary tokens, k from 3 to
  span - 1; the answer is A[k] (what copying predicts). `half` says which half of the corrupted prompt is fresh (B:
  `span` tokens sharing none with A; the wrong answer is B[k]):
    "second"  [BOS] + A + B[:k]: the query's token has no earlier copy. Only what the last position reads changes,
              so the scores find the query side (the token into the induction heads' q) and the keys score 0: the
              earlier tokens, and the previous-token head's writes there, are the same in both runs
    "first"   [BOS] + B + A[:k]: the earlier copy is gone. What the keys read changes (the previous-token head's
              writes, the tokens the values copy), so the scores find K-composition: the previous-token head into
              the induction heads' keys
- date-translator ("date-translation") and date-gpt: the month. A date written as people write it in the locale's
  full style ("lundi 3 mars 2025" in fr_FR, Babel's CLDR pattern), and the same text with another month whose name has
  as many characters (the models read characters: mars / juin / août, janvier / février / juillet / octobre, novembre
  / décembre); the weekday, day and year stay. The answer is the first ISO digit where the two months differ (2025-03
  vs 2025-06: the "3" after "2025-0"), the wrong answer the corrupted date's digit there. date-translator reads the
  date as its source and "[BOS]2025-0" as its decoder input; date-gpt reads "[BOS] date [SEP] 2025-0".

Reproducible from `seed`; different seeds give different pairs (held-out checks use another seed).
"""

from __future__ import annotations

import datetime as dt
import random
from collections import defaultdict

from babel.dates import format_date

from ...checkpoints import LoadedModel
from ...training import dates
from ...training.tasks import task_from_dict
from ..probe import probe_vocabulary
from .pairs import Task, make_task

KINDS = ("induction", "date-translation", "date-gpt")
SPAN = 10  # induction: tokens in each half
HALVES = ("second", "first")  # induction: which half of the corrupted prompt is fresh


def task_kind(loaded: LoadedModel) -> str:
    name = (loaded.task or {}).get("name")
    if name not in KINDS:
        raise ValueError(f"generated tasks exist for the shipped models' tasks ({', '.join(KINDS)}); this model's "
                         f"task is {name!r}: type the pairs instead")
    return name


def generated_task(loaded: LoadedModel, n: int = 64, seed: int = 0, *, locale: str = "fr_FR",
                   half: str = "second") -> Task:
    """`n` pairs of the model's own task (see the module docstring); `locale` for the date models, `half` for
    induction-gpt."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive number of pairs, got {n!r}")
    kind = task_kind(loaded)
    if kind == "induction":
        return induction_task(loaded, n, seed, half=half)
    return month_task(loaded, n, seed, locale)


def induction_task(loaded: LoadedModel, n: int, seed: int, span: int = SPAN, half: str = "second") -> Task:
    if half not in HALVES:
        raise ValueError(f"half must be one of {', '.join(HALVES)}, got {half!r}")
    tokenizer = loaded.tokenizer
    vocab = probe_vocabulary(tokenizer, loaded.model.config.vocab_size).tolist()
    rng = random.Random(seed)
    clean, corrupted, answers, wrongs = [], [], [], []
    for _ in range(n):
        drawn = rng.sample(vocab, 2 * span)
        first, fresh = drawn[:span], drawn[span:]
        k = rng.randint(3, span - 1)
        clean.append([tokenizer.bos_id, *first, *first[:k]])
        corrupted.append([tokenizer.bos_id, *first, *fresh[:k]] if half == "second"
                         else [tokenizer.bos_id, *fresh, *first[:k]])
        answers.append(first[k])
        wrongs.append(fresh[k])
    return make_task(clean, corrupted, answers, wrongs, name=f"induction: [BOS] + {span} tokens + a repeat vs a "
                                                             f"fresh {half} half (seed {seed})")


def _month_names(locale: str) -> dict[int, list[int]]:
    """Name length -> the months whose full name in `locale` has it (only lengths two months share)."""
    by_length: dict[int, list[int]] = defaultdict(list)
    for month in range(1, 13):
        by_length[len(format_date(dt.date(2001, month, 1), "MMMM", locale=locale))].append(month)
    return {length: months for length, months in by_length.items() if len(months) > 1}


def month_task(loaded: LoadedModel, n: int, seed: int, locale: str = "fr_FR") -> Task:
    task = task_from_dict(loaded.task, loaded.tokenizer)
    groups = list(_month_names(locale).values())
    rng = random.Random(seed)
    clean, corrupted, answers, wrongs, targets = [], [], [], [], []
    decoder_only = task.arch == "decoder"
    while len(clean) < n:
        months = groups[rng.randrange(len(groups))]
        m1, m2 = rng.sample(months, 2)
        date = dt.date(rng.randint(1900, 2099), m1, rng.randint(1, 28))
        other = date.replace(month=m2)
        example = dates.make_example(date, locale, "full")
        parts = dates.date_parts(example)
        name = format_date(other, "MMMM", locale=locale)
        text = "".join(name if field == "month name" else part for part, field in parts)
        iso, iso2 = date.isoformat(), other.isoformat()
        pos = next(i for i, (a, b) in enumerate(zip(iso, iso2)) if a != b)
        prefix = task.chars(iso[:pos])
        source, source2 = task.encode_source(example.text)[0], task.encode_source(text)[0]
        if decoder_only:
            clean.append(source + prefix)
            corrupted.append(source2 + prefix)
        else:
            clean.append(source)
            corrupted.append(source2)
            targets.append([task.bos_id, *prefix])
        answers.append(task.chars(iso[pos])[0])
        wrongs.append(task.chars(iso2[pos])[0])
    return make_task(clean, corrupted, answers, wrongs, None if decoder_only else targets,
                     name=f"the month: {locale} full dates with another month of the same length (seed {seed})")

"""The SAE trainer's data: the shipped tasks' sequences exactly as their training batches hold them, disjoint training
and held-out sets, and the properties of every position read from the data's structure."""

import datetime as dt

import pytest
import torch

import explorer
from explorer.training import dates, induction
from explorer.training.sae_data import date_rows, example_sequences, induction_rows, sae_splits, task_kind
from explorer.training.tasks import IGNORE_INDEX, task_from_dict


@pytest.fixture(scope="module")
def date_gpt():
    return explorer.load("date-gpt", "cpu")


@pytest.fixture(scope="module")
def translator():
    return explorer.load("date-translator", "cpu")


@pytest.fixture(scope="module")
def induction_gpt():
    return explorer.load("induction-gpt", "cpu")


def test_a_date_is_cut_into_its_fields():
    e = dates.make_example(dt.date(2026, 11, 21), "fr_FR", "full")
    assert e.text == "samedi 21 novembre 2026"
    assert dates.date_parts(e) == [("samedi", "weekday"), (" ", "literal"), ("21", "day"), (" ", "literal"),
                                   ("novembre", "month name"), (" ", "literal"), ("2026", "year")]
    e = dates.make_example(dt.date(1990, 10, 3), "de_DE", "dd.MM.y")
    assert [f for _, f in dates.date_parts(e)] == ["day", "literal", "month number", "literal", "year"]
    for e in dates.generate_examples(300, seed=3):  # every locale and style joins back to the text
        assert "".join(t for t, _ in dates.date_parts(e)) == e.text


def test_date_gpt_rows_are_its_training_batches(date_gpt):
    task = task_from_dict(date_gpt.task, date_gpt.tokenizer)
    examples = dates.generate_examples(6, seed=4)
    rows = date_rows(task, examples)
    for i, e in enumerate(examples):
        batch = task.training_batch([e])
        assert torch.equal(rows.ids[i], batch.src[0]) and torch.equal(rows.labels[i], batch.labels[0])
        assert rows.tgt[i] is None
        props = rows.properties[i]
        assert len(props) == len(rows.ids[i])
        sep = len(e.text) + 1
        assert props[0] == ("[BOS]",) and props[sep] == ("[SEP]", f"next char {e.target[0]}")
        assert [p[1] for p in props[sep + 1:]] == ["ISO year digit 1", "ISO year digit 2", "ISO year digit 3",
                                                   "ISO year digit 4", "ISO dash 1", "ISO month digit 1",
                                                   "ISO month digit 2", "ISO dash 2", "ISO day digit 1",
                                                   "ISO day digit 2"]
        assert all(p[0] == f"char {c}" for p, c in zip(props[sep + 1:], e.target))
        year_at = e.text.index(str(e.date.year))
        assert [p[-1] for p in props[1 + year_at:5 + year_at]] == [f"date year digit {k}" for k in range(1, 5)]
    assert rows.ignore_ids == (task.bos_id, task.eos_id, task.pad_id)


def test_the_month_is_named_in_the_date_and_in_the_answer(date_gpt):
    task = task_from_dict(date_gpt.task, date_gpt.tokenizer)
    e = dates.make_example(dt.date(2026, 11, 21), "fr_FR", "full")
    props = date_rows(task, [e]).properties[0]
    start = 1 + e.text.index("novembre")
    assert all({"date month", "date month name", "date month: November"} <= set(p) for p in props[start:start + 8])
    assert "date month" not in props[start - 1] and "date month" not in props[start + 8]
    iso = len(e.text) + 2  # [BOS] date [SEP]: the answer starts here
    assert [("ISO month: November" in p) for p in props[iso:]] == [False] * 5 + [True, True] + [False] * 3
    assert [("writes the month: November" in p) for p in props[iso:]] == [False] * 4 + [True, True] + [False] * 4
    assert [p[-1] for p in props[iso - 1:iso + 3]] == ["next char 2", "next char 0", "next char 2", "next char 6"]
    assert "date weekday: Saturday" in props[1]


def test_date_translator_rows_are_its_training_batches(translator):
    task = task_from_dict(translator.task, translator.tokenizer)
    examples = dates.generate_examples(5, seed=5)
    rows = date_rows(task, examples)
    for i, e in enumerate(examples):
        batch = task.training_batch([e])
        assert torch.equal(rows.ids[i], batch.src[0]) and torch.equal(rows.tgt[i], batch.tgt[0])
        assert torch.equal(rows.labels[i], batch.labels[0])
        assert len(rows.properties[i]) == len(e.text) + 1 and rows.properties[i][-1] == ("[EOS]",)


def test_induction_rows_are_its_training_batches_and_know_the_repeats(induction_gpt):
    task = induction.InductionTask.from_dict(induction_gpt.task, induction_gpt.tokenizer)
    rows = induction_rows(task, 8, seed=11)
    batch = task.training_batch(8, torch.Generator().manual_seed(11))
    assert torch.equal(torch.stack(rows.ids), batch.src) and torch.equal(torch.stack(rows.labels), batch.labels)
    name = induction_gpt.tokenizer.id_to_token
    for ids, props in zip(rows.ids, rows.properties):
        ids = ids.tolist()
        for p, token in enumerate(ids):
            repeated = token in ids[1:p]
            assert ("repeated token" in props[p]) == repeated and ("new token" in props[p]) == (not repeated)
            assert f"token {name(token)}" in props[p]
            if repeated:  # the token after its last earlier occurrence
                before = max(q for q in range(1, p) if ids[q] == token)
                assert f"copies {name(ids[before + 1])}" in props[p]
            assert sum(x.startswith("copies ") for x in props[p]) == repeated
            if p:
                assert f"after {name(ids[p - 1])}" in props[p]
        assert any("repeated token" in p for p in props)  # every row repeats a span


def test_splits_are_disjoint_and_seeded(date_gpt, induction_gpt):
    train, test = sae_splits(date_gpt, 40, 10, seed=2)
    assert not {tuple(r.tolist()) for r in train.ids} & {tuple(r.tolist()) for r in test.ids}
    again, _ = sae_splits(date_gpt, 40, 10, seed=2)
    assert all(torch.equal(a, b) for a, b in zip(train.ids, again.ids))
    train, test = sae_splits(induction_gpt, 30, 10, seed=2)
    assert not {tuple(r.tolist()) for r in train.ids} & {tuple(r.tolist()) for r in test.ids}
    assert train.tokens() == 30 * 62  # [BOS] left out of the 63 tokens of each row
    assert all(lab.ne(IGNORE_INDEX).all() for lab in train.labels)  # every next token counts


def test_only_the_shipped_tasks_have_data(date_gpt):
    class Other:
        task = {"name": "sentiment"}

    assert task_kind(date_gpt) == "date-gpt"
    with pytest.raises(ValueError, match="sentiment"):
        task_kind(Other())
    with pytest.raises(ValueError, match="n_test"):
        sae_splits(date_gpt, 5, 0)


def test_the_example_set_is_read_as_the_app_reads_it(date_gpt, translator, induction_gpt):
    gpt = example_sequences(date_gpt)
    assert len(gpt) == len(date_gpt.task["examples"])
    assert date_gpt.tokenizer.labels(gpt[0].tolist()) == ["[BOS]", *"samedi 21 novembre 2026", "[SEP]"]
    source = example_sequences(translator)[0].tolist()
    assert source[-1] == translator.task["eos_id"] and len(source) == len("samedi 21 novembre 2026") + 1
    ids = example_sequences(induction_gpt)[0]
    assert int(ids[0]) == induction_gpt.task["bos_id"] and len(ids) == 1 + 24  # a 12-token span, twice

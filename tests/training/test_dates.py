"""Tests for explorer.training.dates (date-translation task data)."""

import datetime as dt
import re

import pytest

from explorer.training import dates as D


@pytest.fixture(scope="module")
def sample() -> list[D.DateExample]:
    return D.generate_examples(3000, seed=123)


def test_reproducible_from_seed():
    a = D.generate_examples(200, seed=7)
    b = D.generate_examples(200, seed=7)
    c = D.generate_examples(200, seed=8)
    assert a == b
    assert [e.text for e in a] != [e.text for e in c]


def test_splits_reproducible_and_disjoint():
    s1 = D.splits(seed=3, n_train=1500, n_val=200, n_test=200)
    s2 = D.splits(seed=3, n_train=1500, n_val=200, n_test=200)
    assert s1 == s2
    assert [len(s1[k]) for k in ("train", "val", "test")] == [1500, 200, 200]
    texts = {k: {e.text for e in v} for k, v in s1.items()}
    assert sum(len(t) for t in texts.values()) == 1900  # distinct within splits too
    assert not texts["train"] & texts["val"]
    assert not texts["train"] & texts["test"]
    assert not texts["val"] & texts["test"]


def test_variety(sample):
    assert len({e.locale for e in sample}) >= 6
    assert len({e.locale.split("_")[0] for e in sample}) >= 6  # languages, not just regions
    assert len({e.style for e in sample}) >= 8
    assert len({e.pattern for e in sample}) >= 8


def test_years_and_targets(sample):
    for e in sample:
        assert D.MIN_DATE <= e.date <= D.MAX_DATE
        assert 1900 <= e.date.year <= 2099
        assert str(e.date.year) in e.text
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", e.target)
        assert dt.date.fromisoformat(e.target) == e.date
        assert e.text != e.target


def test_dates_spread_over_range(sample):
    years = [e.date.year for e in sample]
    assert min(years) < 1920 and max(years) > 2080


def test_no_two_digit_year_patterns():
    for loc, style in D.combinations():
        pattern = D.resolve_pattern(loc, style)
        assert not re.search(r"(?<!y)yy(?!y)", re.sub(r"'[^']*'", "", pattern)), (loc, style, pattern)
    # en_US short is M/d/yy in CLDR: two-digit year fixed AND month-first numeric -> excluded
    assert D.resolve_pattern("en_US", "short") is None
    assert D.resolve_pattern("it_IT", "short") == "dd/MM/y"  # CLDR dd/MM/yy, year widened


def test_numeric_dates_are_day_first(sample):
    numeric = [e for e in sample if re.fullmatch(r"[\d./-]+", e.text)]
    assert numeric
    for e in numeric:
        day, month, year = (int(p) for p in re.split(r"[./-]", e.text))
        assert (day, month, year) == (e.date.day, e.date.month, e.date.year), e


def test_target_form_is_never_a_source():
    assert D.resolve_pattern("en_US", "y-MM-dd") is None


def test_canonical_styles_producible():
    d = dt.date(2026, 11, 21)
    assert D.make_example(d, "fr_FR", "full").text == "samedi 21 novembre 2026"
    assert D.make_example(d, "de_DE", "long").text == "21. November 2026"
    assert D.make_example(d, "en_US", "medium").text == "Nov 21, 2026"
    assert D.make_example(d, "en_GB", "short").text == "21/11/2026"
    ui = [e.text for e in D.examples_for_ui(4)]
    assert ui == ["samedi 21 novembre 2026", "21. November 2026", "Nov 21, 2026", "21/11/2026"]
    assert all(e.target == "2026-11-21" for e in D.examples_for_ui(4))


def test_normalize_text():
    assert D.normalize_text("21\u202fnov.\u00a02026 ") == "21 nov. 2026"
    assert D.normalize_text("de\u0301ja\u0300") == "déjà"  # combining accents -> NFC


def test_texts_are_normalised(sample):
    for e in sample:
        assert e.text == D.normalize_text(e.text)


def test_charset_covers_sample(sample):
    chars = D.charset()
    assert set("".join(e.text for e in sample)) <= chars
    assert set("0123456789 ") <= chars and "é" in chars


def test_describe_mentions_key_facts():
    text = D.describe()
    assert "YYYY-MM-DD" in text and "1900" in text and "fr" in text

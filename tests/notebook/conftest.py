"""Fixtures of the notebook tests: the shipped date-gpt and date-translator, loaded once per module."""

from __future__ import annotations

import pytest

DATE = "samedi 21 novembre 2026"


@pytest.fixture(scope="module")
def date_gpt():
    import explorer

    return explorer.load("date-gpt", "cpu")


@pytest.fixture(scope="module")
def translator():
    import explorer

    return explorer.load("date-translator", "cpu")

"""Task data for the explorer (date translation: human-readable date -> ISO YYYY-MM-DD)."""

from explorer.data.dates import (
    LOCALES,
    PATTERNS,
    DateExample,
    describe,
    examples_for_ui,
    generate_examples,
    normalize_text,
    splits,
)

__all__ = [
    "LOCALES",
    "PATTERNS",
    "DateExample",
    "describe",
    "examples_for_ui",
    "generate_examples",
    "normalize_text",
    "splits",
]

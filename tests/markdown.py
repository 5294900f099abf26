"""The documentation's Markdown, read for tests: which files, their code blocks, their links and headings.

The documentation is README.md (the front door) and every docs/*.md (the reference); a page added to docs/ is
picked up without changing any test."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

# A python block starting with one of these is not run by tests/test_docs.py (the reason is the test's skip text).
NEEDS_APP = "# needs a running app"  # run against a live app by tests/app/test_api.py, or not at all
NEEDS_HUB = "# needs the Hub"  # tests never reach the network; the same calls run on tiny models (tests/outputs/)

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def pages() -> list[Path]:
    """README.md and every docs/*.md, in a stable order."""
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def code_blocks(path: Path, language: str) -> list[str]:
    """The fenced ```language blocks of a page, in order, without their fences."""
    return [body for lang, body in _FENCE.findall(path.read_text()) if lang == language]


def example_of(path: Path, heading: str) -> tuple[str, str]:
    """The ```python example of a section (`## heading`) and the ```text block under it (what it prints)."""
    section = path.read_text().split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    fences = _FENCE.findall(section)
    assert [lang for lang, _ in fences[:2]] == ["python", "text"], "the example, then what it prints"
    (_, example), (_, shown) = fences[:2]
    return example, shown


def prose(path: Path) -> str:
    """A page without its fenced code blocks (a `# comment` there is no heading, a `[x](y)` no link)."""
    return _FENCE.sub("", path.read_text())


def links(path: Path) -> list[str]:
    """Every link and image target of a page's prose: `[text](target)`, `![alt](target)`."""
    return _LINK.findall(prose(path))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (hyphens and underscores kept), spaces to -."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a page's headings (a repeated heading gets -1, -2, ... as on GitHub)."""
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", prose(path), re.M):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out

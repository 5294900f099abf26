"""Write the tables the docs take from the page's tabs (explorer.app.tabs.TABS): docs/app.md's table of tabs and
docs/link.md's table of link keys; and docs/lessons.md from explorer.app.page.lessons.LESSONS. Run after changing a tab: `python scripts/docs_tables.py` (tests check them)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from explorer.app.link.docs import keys_table  # noqa: E402
from explorer.app.page.lessons import lessons_markdown  # noqa: E402
from explorer.app.tabs import TABS, tabs_table  # noqa: E402

MARK = "<!-- generated from explorer.app.tabs.TABS"


def replace_table(path: Path, table: str) -> bool:
    """The table after the marker line replaced by `table`; True if the file changed."""
    text = path.read_text()
    start = text.index("\n", text.index(MARK)) + 1
    end = text.index("\n\n", start) + 1
    new = text[:start] + table + text[end:]
    if new != text:
        path.write_text(new)
    return new != text


if __name__ == "__main__":
    for doc, table in (("app.md", tabs_table()), ("link.md", keys_table(TABS))):
        print(f"docs/{doc}: {'rewritten' if replace_table(ROOT / 'docs' / doc, table) else 'up to date'}")
    lessons = ROOT / "docs" / "lessons.md"
    old = lessons.read_text() if lessons.exists() else ""
    if old != lessons_markdown():
        lessons.write_text(lessons_markdown())
    print(f"docs/lessons.md: {'rewritten' if old != lessons_markdown() else 'up to date'}")

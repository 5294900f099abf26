"""Write the tables the docs take from the page's tabs (explorer.app.tabs.TABS): docs/app.md's table of tabs and
docs/link.md's table of link keys; docs/http-api.md's table of every endpoint, from the built page's wired events
(explorer.app.tabs.api.endpoints); and docs/lessons.md from explorer.app.page.lessons.LESSONS (page.lesson_docs). Run after changing a
tab or an endpoint: `python scripts/docs_tables.py` (tests check them)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from explorer.app.demo import build_demo  # noqa: E402
from explorer.app.link.docs import keys_table  # noqa: E402
from explorer.app.page.lesson_docs import lessons_markdown  # noqa: E402
from explorer.app.tabs import TABS, tabs_table  # noqa: E402
from explorer.app.tabs.api.endpoints import endpoints, endpoints_table  # noqa: E402

MARK = "<!-- generated from explorer.app.tabs.TABS"
ENDPOINTS_MARK = "<!-- generated from the page's named endpoints"


def app_demo():
    """The page as `python app.py` serves it (its starting model: date-translator)."""
    return build_demo(device="auto")


def http_api_table(demo=None) -> str:
    """docs/http-api.md's table: the endpoints of `demo` (default: `app_demo()`; tests/app/test_api_endpoints.py
    checks it)."""
    return endpoints_table(endpoints(demo or app_demo()))


def replace_table(path: Path, table: str, mark: str = MARK) -> bool:
    """The table after the marker line replaced by `table`; True if the file changed."""
    text = path.read_text()
    start = text.index("\n", text.index(mark)) + 1
    end = text.find("\n\n", start) + 1 or len(text)  # a blank line, or the file's end, closes it
    new = text[:start] + table + text[end:]
    if new != text:
        path.write_text(new)
    return new != text


if __name__ == "__main__":
    for doc, table, mark in (("app.md", tabs_table(), MARK), ("link.md", keys_table(TABS), MARK),
                             ("http-api.md", http_api_table(), ENDPOINTS_MARK)):
        print(f"docs/{doc}: {'rewritten' if replace_table(ROOT / 'docs' / doc, table, mark) else 'up to date'}")
    lessons = ROOT / "docs" / "lessons.md"
    old = lessons.read_text() if lessons.exists() else ""
    if old != lessons_markdown():
        lessons.write_text(lessons_markdown())
    print(f"docs/lessons.md: {'rewritten' if old != lessons_markdown() else 'up to date'}")

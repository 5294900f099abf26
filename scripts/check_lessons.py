"""Check a teacher's lesson files before class: every `lessons/*.toml` of the given folders read as the app reads
them (`python app.py --allow-dir FOLDER`), each one named with what is wrong, or with its steps.

    python scripts/check_lessons.py /path/to/class [...]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from explorer.app.page.lesson_events import lesson_catalogue  # noqa: E402
from explorer.app.page.lessons import LESSONS  # noqa: E402
from explorer.app.tabs import TABS  # noqa: E402


def main(folders: list[str]) -> int:
    found = lesson_catalogue(folders, TABS)
    for n, lesson in enumerate(found.lessons[len(LESSONS):], len(LESSONS) + 1):
        print(f"ok  {lesson.source}: lesson {n}, ?lesson={lesson.id}, {len(lesson.steps)} steps")
    for error in found.errors:
        print(f"BAD {error}")
    return 1 if found.errors else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))

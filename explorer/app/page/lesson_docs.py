"""docs/lessons.md, written from the built-in lessons (page.lessons.LESSONS), the check vocabulary
(page.lesson_format.CHECKS) and the example lesson file (docs/examples/lessons/month-my-way.toml, which the tests load):
`python scripts/docs_tables.py` writes it, tests/app/test_lessons.py checks it is current.
"""

from __future__ import annotations

from pathlib import Path

from .lesson_files import FOLDER, LESSON_BYTES, MAX_FILES
from .lesson_format import CHECKS, MAX_STEPS, Check, Lesson
from .lessons import LESSONS

EXAMPLE = Path("docs/examples/lessons/month-my-way.toml")  # from the repository's root


def check_words(c: Check) -> str:
    parts = [f"`{kind}`" + (f" `{value}`" if value is not None else "") for kind, value in c.conditions]
    return f"check: {' and '.join(parts)} → “✓ {c.passed}”"


def lesson_section(n: int, lesson: Lesson) -> list[str]:
    key = lesson.id or str(n)
    out = [f"## {n}. {lesson.title}", "",
           f"[Open it](http://127.0.0.1:7860/?lesson={key}) (local app) · `?lesson={key}` (or `?lesson={n}`) opens "
           f"the view `?{lesson.query}` with the lesson's panel.", "", f"**Goal:** {lesson.shown_goal}", ""]
    for k, step in enumerate(lesson.shown_steps, 1):
        out.append(f"{k}. {step.do}" + (f" ({check_words(step.check)})" if step.check else ""))
    out.append("")
    if lesson.notice:
        out += [f"**Notice:** {lesson.notice}", ""]
    if lesson.goal and lesson.text != lesson.goal:
        out += [lesson.text, ""]
    return out


def vocabulary() -> list[str]:
    rows = ["| condition | value | holds when |", "|---|---|---|"]
    rows += [f"| `{kind}` | {c.value or '`true` (no value)'} | {c.doc} |" for kind, c in CHECKS.items()]
    return rows


def lessons_markdown(lessons: tuple[Lesson, ...] = LESSONS, example: str | None = None) -> str:
    """docs/lessons.md; `example`: the example file's text (default: read from the repository)."""
    if example is None:
        example = (Path(__file__).resolve().parents[3] / EXAMPLE).read_text()
    out = ["# Lessons", "",
           f"{len(lessons)} short lessons on the shipped models. Choose one in the page's **Lessons** menu (beside "
           "**Copy link**) or open a link with `lesson=` and its number or name: the page opens the lesson's view and "
           "a panel shows its title, the step to do, a check of your own Run, the goal and what to notice, with "
           "**◀ Previous**, **Next ▶** and **✕ Leave**: on a wide screen a column at the window's right, the page "
           "narrowed beside it so that it covers none of the results (**⇥ Fold** leaves only its buttons, "
           "**⇤ Unfold** brings it back), on a narrower screen docked at the bottom of the window, under the output; "
           "on a phone docked there too, folded to its buttons, the step's first sentence and the check's verdict "
           "(at most 120 px; **⇤ Unfold** shows the title, the whole step, what was measured, the goal and what to "
           "notice). The check is computed by the "
           "server from your last Run (its output with and without your toggles, the heads off, the masks, the tab "
           "shown), after every Run and every tab you open: “✓ the month changed to 05”, or “✗ not yet: …” with "
           "what your Run gave. `step=` in a link opens a step; **Copy link** keeps the lesson and its step; a "
           "link's own keys win over the lesson's view. The panel speaks the page's language (`lang=`, or the "
           "menu: choosing another rewrites the open panel); the built-in lessons' words are in "
           "`explorer/app/i18n/<lang>.lessons.toml`.", "",
           "<!-- generated from explorer.app.page.lessons.LESSONS by scripts/docs_tables.py; tests/app/test_lessons.py "
           "checks it -->", ""]
    for n, lesson in enumerate(lessons, 1):
        out += lesson_section(n, lesson)
    out += ["## Write your own", "",
            f"A lesson is a small TOML file, no code. Put it in a folder named `{FOLDER}` inside a folder the app "
            "allows, and start the app with that folder allowed: `python app.py --allow-dir /path/to/class` reads "
            f"`/path/to/class/{FOLDER}/*.toml` when it starts (at most {MAX_FILES} files, each at most "
            f"{LESSON_BYTES // 1024} KiB; a file that is a link is refused). Its file name is its name in a link "
            "(`month-my-way.toml`: `?lesson=month-my-way`; lowercase letters, digits and `-`); it is listed in the "
            "Lessons menu after the built-in ones. A file the app cannot use is named with what is wrong on the page, "
            "in the page's language (a note under the title, and a “⚠️ not loaded” entry at the end of the Lessons "
            "menu), and in the server's log, in English: `month.toml in lessons: step 2: check 'output_contain' is "
            "not one of …`; check your files before "
            "class with `python scripts/check_lessons.py /path/to/class`.", "",
            "The keys: `title`, `goal`, `view` (the link's query the lesson opens: any key of "
            "[link.md](link.md), copied from the page's **Copy link**), `notice` (optional: what to notice), and 1 "
            f"to {MAX_STEPS} `[[steps]]`, each with `do` (what to do, Markdown) and optionally a check: a "
            "`[steps.check]` table of conditions that must all hold on the learner's Run, with `passed` (the words of "
            "“✓ …”) and `hint` (the words of “✗ not yet: …”). A lesson may carry its translations: a table per "
            "language (`[fr]`, `[de]`, `[es]`) with `title`, `goal` and `notice`, and in a step `do_fr`, `passed_fr`, "
            "`hint_fr` (likewise `_de`, `_es`); the page in that language shows them, and the file's own words where "
            "a translation is not given. The conditions:", "",
            *vocabulary(), "",
            "“Sentence 1's output” is the text the model wrote for the first sentence: the answer of a "
            "date model, a language model's continuation, a masked model's top filler, a classifier's class. The "
            f"example, `{EXAMPLE}`, which the tests load and run:", "", "```toml", example.rstrip(), "```", ""]
    return "\n".join(out)

"""A teacher's lessons as small TOML files, no code: read from the `lessons` folder of each allowed folder
(`--allow-dir`) when the app starts, and the page's catalogue of lessons (the built-in ones, then the files').

    title = "The month, my way"
    goal = "Find the heads that carry the month."
    view = "model=date-translator&s1=lundi%203%20mars%202025&tab=attention&kind=cross"   # a link's query
    notice = "Only the month breaks."
    [[steps]]
    do = "Untick L0 H1 and L1 H3 under Cross-attention."
    passed = "the month changed to 05"
    hint = "switch both heads off"
    [steps.check]                  # every condition must hold (page.lesson_format.CHECKS)
    heads_off_at_least = 2
    output_contains = "-05-"

A translation is optional, per language (fr, de, es): a `[fr]` table with `title`, `goal`, `notice`, and in a step
`do_fr`, `passed_fr`, `hint_fr`; a word not given is shown in the file's own language.

Bounds: a file of at most LESSON_BYTES, at most MAX_FILES files a folder, read through explorer.file_reads (messages
name the file by its name and folder, never the server's path); a file that is a link, or whose real path leaves its
folder, is refused. A name in a link or the menu only picks a lesson of the catalogue: it never reaches a path.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from ...file_reads import CheckpointError, describe, read_bounded
from ..i18n.words import LANGS
from .lesson_format import CHECKS, LESSON_ID, Check, Lesson, LessonError, Step
from .lessons import LESSONS

LESSON_BYTES = 64 * 1024  # a lesson of 5 steps is 1-3 KB
MAX_FILES = 50  # lesson files read from one folder
FOLDER = "lessons"  # inside an allowed folder
OTHER_LANGS = LANGS[1:]  # a lesson's translations: the page's languages but English (the file's own words)
TRANSLATED = ("title", "goal", "notice")  # the words of a lesson a `[fr]` table may give
LESSON_KEYS = ("title", "goal", "view", "notice", "steps", *OTHER_LANGS)
STEP_WORDS = ("do", "passed", "hint")  # a step's words, translated as `do_fr`, `passed_fr`, `hint_fr`
STEP_KEYS = ("do", "check", "passed", "hint", *(f"{w}_{lang}" for lang in OTHER_LANGS for w in STEP_WORDS))


def text_of(data: dict, key: str, where: str, required: bool = True) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        raise LessonError(f"{where}`{key}` must be text in quotes, not {type(value).__name__}")
    if required and not value.strip():
        raise LessonError(f"{where}`{key}` is missing")
    return value


def unknown(data: dict, keys: Sequence[str], where: str) -> None:
    extra = [k for k in data if k not in keys]
    if extra:
        raise LessonError(f"{where}unknown key {extra[0][:40]!r} (the keys: {', '.join(keys)})")


def step_of(data: Any, n: int) -> Step:
    where = f"step {n}: "
    if not isinstance(data, dict):
        raise LessonError(f"{where}write it as a [[steps]] table")
    unknown(data, STEP_KEYS, where)
    do = text_of(data, "do", where)
    conditions = data.get("check")
    if conditions is None:
        return Step(do)
    if not isinstance(conditions, dict) or not conditions:
        raise LessonError(f"{where}`check` must be a table of conditions ([steps.check]: {', '.join(CHECKS)})")
    pairs = []
    for kind, value in conditions.items():
        if kind not in CHECKS:
            raise LessonError(f"{where}check {kind[:40]!r} is not one of {', '.join(CHECKS)}")
        takes = CHECKS[kind].value is not None
        if not takes and value is not True:
            raise LessonError(f"{where}write `{kind} = true` (it takes no value)")
        pairs.append((kind, value if takes else None))
    passed, hint = text_of(data, "passed", where), text_of(data, "hint", where)  # named with their step already
    try:
        return Step(do, Check(tuple(pairs), passed, hint))
    except LessonError as err:
        raise LessonError(f"{where}{err}") from None


def lesson_of(data: dict, lesson_id: str, source: str) -> Lesson:
    """A lesson from a file's parsed TOML (LessonError naming what is wrong, without the file's name)."""
    unknown(data, LESSON_KEYS, "")
    steps = data.get("steps", [])
    if not isinstance(steps, list) or not 1 <= len(steps) <= 8:
        raise LessonError("a lesson needs 1 to 8 [[steps]]")
    goal = text_of(data, "goal", "")
    view = text_of(data, "view", "").strip().lstrip("?")
    return Lesson(text_of(data, "title", ""), view, goal, goal=goal, steps=tuple(step_of(s, n) for n, s in
                                                                                 enumerate(steps, 1)),
                  notice=text_of(data, "notice", "", required=False), id=lesson_id, source=source,
                  translations=translations_of(data, steps))


def translations_of(data: dict, steps: list) -> dict[str, dict[str, str]]:
    """A file's translations, language -> its words by name as Lesson.translations has them ("step2_hint")."""
    found: dict[str, dict[str, str]] = {}
    for lang in OTHER_LANGS:
        table = data.get(lang, {})
        if not isinstance(table, dict):
            raise LessonError(f"`{lang}` must be a table: [{lang}] with {', '.join(TRANSLATED)}")
        unknown(table, TRANSLATED, f"[{lang}]: ")
        words = {k: text_of(table, k, f"[{lang}]: ") for k in TRANSLATED if k in table}
        for n, step in enumerate(steps, 1):
            for w in STEP_WORDS:
                if f"{w}_{lang}" in step:
                    words[f"step{n}" if w == "do" else f"step{n}_{w}"] = text_of(step, f"{w}_{lang}", f"step {n}: ")
        if words:
            found[lang] = words
    return found


def read_lesson(path: Path, check_view: Callable[[str], list[str]] | None = None) -> Lesson:
    """One lesson file, or LessonError naming the file and what is wrong. `check_view(query)` -> what a link would
    refuse of the lesson's view (explorer.app.link.state.parse_link's notices)."""
    name = describe(path)
    lesson_id = path.stem.lower()
    if not LESSON_ID.fullmatch(lesson_id):
        raise LessonError(f"{name}: a lesson file's name (its id in a link) is lowercase letters, digits and '-'")
    try:
        data = tomllib.loads(read_bounded(path, LESSON_BYTES, "a lesson file").decode("utf-8"))
    except CheckpointError as err:
        raise LessonError(str(err)) from None
    except UnicodeDecodeError as err:
        raise LessonError(f"{name} is not UTF-8 text (at byte {err.start})") from None
    except tomllib.TOMLDecodeError as err:
        raise LessonError(f"{name} is not valid TOML: {err}") from None
    try:
        lesson = lesson_of(data, lesson_id, name)
        refused = check_view(lesson.query) if check_view is not None else []
    except LessonError as err:
        raise LessonError(f"{name}: {err}") from None
    if refused:
        raise LessonError(f"{name}: its view {'; '.join(refused)}")
    return lesson


def lesson_paths(folder: Path) -> tuple[list[Path], list[str]]:
    """The lesson files of one folder (sorted, at most MAX_FILES) and what was refused of it, in words: a folder or
    a file that is a link, or that leads out of the allowed folder, is refused."""
    if not folder.is_dir():
        return [], []
    real = folder.resolve()
    if folder.is_symlink() or real.parent != folder.parent.resolve():
        return [], [f"{folder.parent.name}/{folder.name} is a link; refused (its lessons were not read)"]
    try:
        files = sorted(p for p in folder.iterdir() if p.suffix == ".toml")
    except OSError as err:
        return [], [f"{folder.parent.name}/{folder.name} cannot be read: {err.strerror or type(err).__name__}"]
    refused = [f"{describe(p)} is a link or leaves its folder; refused" for p in files
               if p.is_symlink() or p.resolve().parent != real]
    files = [p for p in files if not p.is_symlink() and p.resolve().parent == real]
    if len(files) > MAX_FILES:
        refused.append(f"{folder.name}/ holds {len(files)} lesson files; the first {MAX_FILES} were read")
    return files[:MAX_FILES], refused


@dataclass(frozen=True)
class Catalogue:
    """The page's lessons in menu order (lesson N is `lessons[N - 1]`) and what could not be read, in words."""

    lessons: tuple[Lesson, ...] = LESSONS
    errors: tuple[str, ...] = ()

    def find(self, key: str) -> tuple[int, Lesson] | None:
        """(its number, the lesson) of `lesson=<key>`: a number from 1 or an id; None for neither."""
        key = str(key or "").strip().lower()
        if key.isdigit() and 1 <= int(key) <= len(self.lessons):
            return int(key), self.lessons[int(key) - 1]
        return next(((n, x) for n, x in enumerate(self.lessons, 1) if x.id and x.id == key), None)

    def opened(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """A link's pairs with its lesson's view: each key of the lesson's query the link does not give itself (a
        copied link gives them all), and the lesson named by its id; pairs without a known lesson unchanged."""
        given = dict(pairs)
        found = self.find(given.get("lesson", ""))
        if found is None:
            return pairs
        n, lesson = found
        own = [(k, v) for k, v in pairs if k != "lesson"] + [("lesson", self.key_of(n))]
        return own + [(k, v) for k, v in parse_qsl(lesson.query, keep_blank_values=True) if k not in given]

    def key_of(self, n: int) -> str:
        """What a link writes for lesson `n`: its id (a number moves when lessons are added), else its number."""
        return self.lessons[n - 1].id or str(n)


def catalogue(allowed_dirs: Iterable[str], check_view: Callable[[str], list[str]] | None = None,
              built_in: tuple[Lesson, ...] = LESSONS) -> Catalogue:
    """The built-in lessons, then each allowed folder's `lessons/*.toml` (an id already taken is refused)."""
    lessons, errors = list(built_in), []
    for d in allowed_dirs:
        paths, refused = lesson_paths(Path(d) / FOLDER)
        errors += refused
        for path in paths:
            try:
                lesson = read_lesson(path, check_view)
            except LessonError as err:
                errors.append(str(err))
                continue
            if any(x.id == lesson.id for x in lessons):
                errors.append(f"{lesson.source}: the id {lesson.id!r} is another lesson's; rename the file")
                continue
            lessons.append(lesson)
    return Catalogue(tuple(lessons), tuple(errors))

"""What a lesson is (`Lesson`: a title, the view it opens as a link query, a goal, 3-5 steps, what to notice) and the
small fixed vocabulary of checks a step may ask of the learner's own Run (`CHECKS`), evaluated on `RunFacts`: what
the page's last Run produced and was run with (its model, the tab shown, sentence 1's output with and without the
toggles, the heads switched off, the masks). Pure: no Gradio, no files but the catalogues of words (page.lesson_files reads a teacher's file,
page.lesson_panel shows a lesson and gathers the facts).

A check's verdict is computed from the facts, never written in advance: "✓ " + the lesson's words for success, or
"✗ not yet: " + its hint, each followed by what the Run measured (its output, the heads off), in the page's language
(`lang`, the request's: explorer.app.i18n; a lesson's own words in it through `Lesson.in_language`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..i18n.words import ENGLISH, language, t
from ..link.setting_keys import LESSON_KEY as LESSON_ID  # a lesson's id in a link (`lesson=month-heads`)
from ..serving.errors import escape_md

MAX_STEPS = 8
MAX_TEXT = 2000  # characters of one text of a lesson (a title, a goal, a step)


class LessonError(ValueError):
    """A lesson that cannot be used; the message names what is wrong (and, from a file, the file)."""


@dataclass(frozen=True)
class RunFacts:
    """What the page's last Run produced and was run with, as the checks read it."""

    model: str  # the session's model (a shipped name, an allowed folder's name or a Hub id)
    tab: str  # the tab shown (a tab id)
    sentence: str  # sentence 1 as typed
    baseline: str  # sentence 1's output with every head on and the model's own masks ("" for a model without text out)
    toggled: str  # the same with the page's toggles (== baseline when nothing is toggled)
    heads_off: Mapping[str, int] = field(default_factory=dict)  # attention kind -> heads switched off
    masks_off: frozenset[str] = frozenset()  # "causal", "padding" when that mask is off

    @property
    def changed(self) -> bool:
        return self.toggled != self.baseline

    def measured(self, lang: str = ENGLISH) -> str:
        """What the Run gave, in words of `lang` (shown after every verdict; the outputs escaped for Markdown; the
        masks' names are the link's words)."""
        out = (t("lesson.output", lang, output=escape_md(self.baseline)) if self.baseline
               else t("lesson.no_output", lang))
        if self.changed:
            out += t("lesson.toggled", lang, output=escape_md(self.toggled))
        off = sum(self.heads_off.values())
        out += (t("lesson.heads_off", lang, n=off) if off > 1 else t("lesson.one_head_off", lang) if off
                else t("lesson.every_head_on", lang))
        masks = sorted(self.masks_off)
        if masks:
            out += (t("lesson.mask_off", lang, mask=masks[0]) if len(masks) == 1
                    else t("lesson.masks_off", lang, first=masks[0], second=masks[1]))
        return out


@dataclass(frozen=True)
class CheckKind:
    """One word of the vocabulary: what its value is (None: takes none) and whether the facts pass."""

    doc: str
    value: str | None  # "text", "tab id", "number", "mask", "model name"; None: no value
    passes: Callable[[RunFacts, Any], bool]


def _heads_off(facts: RunFacts, value: Any) -> bool:
    return sum(facts.heads_off.values()) >= int(value)


CHECKS: dict[str, CheckKind] = {
    "output_contains": CheckKind("sentence 1's output (with the toggles) contains the text", "text",
                                 lambda f, v: str(v) in f.toggled),
    "output_lacks": CheckKind("sentence 1's output (with the toggles) does not contain the text", "text",
                              lambda f, v: str(v) not in f.toggled),
    "output_equals": CheckKind("sentence 1's output (with the toggles) is exactly the text", "text",
                               lambda f, v: f.toggled.strip() == str(v).strip()),
    "output_changes": CheckKind("the toggles changed sentence 1's output", None, lambda f, v: f.changed),
    "output_unchanged": CheckKind("the toggles left sentence 1's output as it was", None, lambda f, v: not f.changed),
    "sentence_contains": CheckKind("sentence 1 as typed contains the text", "text", lambda f, v: str(v) in f.sentence),
    "tab_is": CheckKind("the tab shown is this one (its id, as in a link's `tab=`)", "tab id",
                        lambda f, v: f.tab == str(v)),
    "heads_off_at_least": CheckKind("at least this many heads are switched off (every kind counted)", "number",
                                    _heads_off),
    "mask_off": CheckKind("this mask is off (`causal` or `padding`)", "mask", lambda f, v: str(v) in f.masks_off),
    "mask_on": CheckKind("this mask is on (`causal` or `padding`)", "mask", lambda f, v: str(v) not in f.masks_off),
    "model_is": CheckKind("the page's model is this one", "model name", lambda f, v: f.model == str(v)),
}
MASKS = ("causal", "padding")


@dataclass(frozen=True)
class Check:
    """What a step asks of the Run: every condition (`CHECKS` kind, value) holds; `passed` says so in the lesson's
    words ("the month changed to 05"), `hint` what to do while it does not."""

    conditions: tuple[tuple[str, Any], ...]
    passed: str
    hint: str

    def __post_init__(self) -> None:
        if not self.conditions:
            raise LessonError("a check needs at least one condition")
        for kind, value in self.conditions:
            if kind not in CHECKS:
                raise LessonError(f"check {kind!r} is not one of {', '.join(CHECKS)}")
            wants = CHECKS[kind].value
            if wants is None and value not in (None, ""):
                raise LessonError(f"check {kind!r} takes no value")
            if wants is not None and (value is None or str(value) == ""):
                raise LessonError(f"check {kind!r} needs a value ({wants})")
            if wants == "number" and not (isinstance(value, int) and not isinstance(value, bool) and 0 < value < 10**4):
                raise LessonError(f"check {kind!r} needs a whole number from 1, not {str(value)[:40]!r}")
            if wants == "mask" and value not in MASKS:
                raise LessonError(f"check {kind!r} needs `causal` or `padding`, not {str(value)[:40]!r}")
        for words in (self.passed, self.hint):
            if not words.strip():
                raise LessonError("a check needs `passed` and `hint` words")

    def verdict(self, facts: RunFacts | None, lang: str = ENGLISH) -> tuple[bool, str]:
        """(passed?, the line the panel shows, in `lang`) for the learner's last Run (None: no Run yet); `passed` and
        `hint` are said as they are (a lesson in `lang`: Lesson.in_language)."""
        if facts is None:
            return False, t("lesson.no_run", lang, hint=self.hint)
        ok = all(CHECKS[kind].passes(facts, value) for kind, value in self.conditions)
        measured = facts.measured(lang)
        return ok, (t("lesson.passed", lang, passed=self.passed, measured=measured) if ok
                    else t("lesson.not_yet", lang, hint=self.hint, measured=measured))


def check(*conditions: tuple[str, Any] | str, passed: str, hint: str) -> Check:
    """A Check from conditions written ("output_changes") or ("output_contains", "05")."""
    return Check(tuple((c, None) if isinstance(c, str) else (c[0], c[1]) for c in conditions), passed, hint)


@dataclass(frozen=True)
class Step:
    """One thing to do, and the check of the Run that shows it done (None: read, then go on)."""

    do: str  # Markdown
    check: Check | None = None


@dataclass(frozen=True)
class Lesson:
    """A lesson: `title`, the view it opens (`query`: a link query, docs/link.md's keys), `text` (the lesson in a
    paragraph: docs/lessons.md, and the goal of a lesson given no `goal`), its steps and what to notice. `id`: its
    name in a link (`lesson=<id>`; a built-in lesson is also `lesson=<its number>`). `translations`: language ->
    its words by name ("title", "goal", "notice", "step2", "step2_passed", "step2_hint"; a word missing: English)."""

    title: str
    query: str  # no "?" (explorer.app.link.state.parse_link reads it)
    text: str  # Markdown
    goal: str = ""
    steps: tuple[Step, ...] = ()
    notice: str = ""  # what to notice
    id: str = ""
    source: str = ""  # "" built in; a teacher's file: its name ("month.toml in lessons")
    translations: Mapping[str, Mapping[str, str]] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not self.title.strip() or not (self.text.strip() or self.goal.strip()):
            raise LessonError("a lesson needs a title and a goal")
        if self.id and not LESSON_ID.fullmatch(self.id):
            raise LessonError(f"lesson id {self.id[:60]!r}: lowercase letters, digits and '-', at most 40")
        if len(self.steps) > MAX_STEPS:
            raise LessonError(f"a lesson has at most {MAX_STEPS} steps, not {len(self.steps)}")
        texts = [self.title, self.text, self.goal, self.notice, *(s.do for s in self.steps),
                 *(w for words in self.translations.values() for w in words.values())]
        if max(map(len, texts)) > MAX_TEXT:
            raise LessonError(f"a text of a lesson is longer than {MAX_TEXT} characters")

    def in_language(self, lang: Any) -> Lesson:
        """This lesson with its words in `lang` where it has them (its translations), English where it has not."""
        words = self.translations.get(language(lang), {})
        if not words:
            return self

        def step(n: int, s: Step) -> Step:
            c = s.check
            return Step(words.get(f"step{n}", s.do), c and replace(c, passed=words.get(f"step{n}_passed", c.passed),
                                                                    hint=words.get(f"step{n}_hint", c.hint)))

        return replace(self, title=words.get("title", self.title), goal=words.get("goal", self.goal),
                       notice=words.get("notice", self.notice),
                       steps=tuple(step(n, s) for n, s in enumerate(self.steps, 1)))

    @property
    def shown_goal(self) -> str:
        return self.goal or self.text

    @property
    def shown_steps(self) -> tuple[Step, ...]:
        """Its steps (a lesson written as one paragraph: one step, "try what it says")."""
        return self.steps or (Step("Try what the goal says, then press **Run**."),)

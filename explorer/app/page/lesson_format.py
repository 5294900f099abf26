"""What a lesson is (`Lesson`: a title, the view it opens as a link query, a goal, 3-5 steps, what to notice) and the
small fixed vocabulary of checks a step may ask of the learner's own Run (`CHECKS`), evaluated on `RunFacts`: what
the page's last Run produced and was run with (its model, the tab shown, sentence 1's output with and without the
toggles, the heads switched off, the masks). Pure: no Gradio, no files (page.lesson_files reads a teacher's file,
page.lesson_panel shows a lesson and gathers the facts).

A check's verdict is computed from the facts, never written in advance: "✓ " + the lesson's words for success, or
"✗ not yet: " + its hint, each followed by what the Run measured (its output, the heads off).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

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

    def measured(self) -> str:
        """What the Run gave, in words (shown after every verdict; the outputs escaped for Markdown)."""
        out = f"your Run's output: “{escape_md(self.baseline)}”" if self.baseline else "your Run has no text output"
        if self.changed:
            out += f" → with your toggles: “{escape_md(self.toggled)}”"
        off = sum(self.heads_off.values())
        out += f"; {off} head{'s' if off != 1 else ''} off" if off else "; every head on"
        if self.masks_off:
            out += "; " + " and ".join(sorted(self.masks_off)) + " mask off"
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

    def verdict(self, facts: RunFacts | None) -> tuple[bool, str]:
        """(passed?, the line the panel shows) for the learner's last Run (None: no Run yet)."""
        if facts is None:
            return False, f"✗ not yet: {self.hint} (press **Run** first)"
        ok = all(CHECKS[kind].passes(facts, value) for kind, value in self.conditions)
        return ok, f"{'✓ ' + self.passed if ok else '✗ not yet: ' + self.hint} ({facts.measured()})"


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
    name in a link (`lesson=<id>`; a built-in lesson is also `lesson=<its number>`)."""

    title: str
    query: str  # no "?" (explorer.app.link.state.parse_link reads it)
    text: str  # Markdown
    goal: str = ""
    steps: tuple[Step, ...] = ()
    notice: str = ""  # what to notice
    id: str = ""
    source: str = ""  # "" built in; a teacher's file: its name ("month.toml in lessons")

    def __post_init__(self) -> None:
        if not self.title.strip() or not (self.text.strip() or self.goal.strip()):
            raise LessonError("a lesson needs a title and a goal")
        if self.id and not LESSON_ID.fullmatch(self.id):
            raise LessonError(f"lesson id {self.id[:60]!r}: lowercase letters, digits and '-', at most 40")
        if len(self.steps) > MAX_STEPS:
            raise LessonError(f"a lesson has at most {MAX_STEPS} steps, not {len(self.steps)}")
        texts = [self.title, self.text, self.goal, self.notice, *(s.do for s in self.steps)]
        if max(map(len, texts)) > MAX_TEXT:
            raise LessonError(f"a text of a lesson is longer than {MAX_TEXT} characters")

    @property
    def shown_goal(self) -> str:
        return self.goal or self.text

    @property
    def shown_steps(self) -> tuple[Step, ...]:
        """Its steps (a lesson written as one paragraph: one step, "try what it says")."""
        return self.steps or (Step("Try what the goal says, then press **Run**."),)

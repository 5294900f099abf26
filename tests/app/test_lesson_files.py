"""A teacher's lesson files (explorer.app.page.lesson_files): read from an allowed folder's `lessons/` within bounds,
each refusal naming the file and what is wrong (never the server's path); the docs' example loads, its view opens
without a notice and its checks pass and fail on real Runs of the shipped date-translator."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from starlette.datastructures import QueryParams

from explorer.app.forms import RunForm, form_inputs, form_of, replaced
from explorer.app.link.opening import LinkEvents
from explorer.app.page.lesson_events import lesson_catalogue, run_facts
from explorer.app.page.lesson_files import LESSON_BYTES, MAX_FILES, Catalogue, catalogue, read_lesson
from explorer.app.page.lesson_format import LessonError
from explorer.app.page.lessons import LESSONS
from explorer.app.serving.errors import escape_md
from explorer.app.serving.kept import Shown
from explorer.app.serving.session import Session
from explorer.app.tabs import TABS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "lessons" / "month-my-way.toml"
GOOD = EXAMPLE.read_text()


def folder(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    """An allowed folder whose lessons/ holds `files`."""
    lessons = tmp_path / "class" / "lessons"
    lessons.mkdir(parents=True)
    for name, text in files.items():
        (lessons / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    return tmp_path / "class"


def test_the_docs_example_is_in_the_doc_and_loads():
    assert GOOD.rstrip() in (ROOT / "docs" / "lessons.md").read_text()
    lesson = read_lesson(EXAMPLE)
    assert (lesson.id, lesson.title, len(lesson.steps)) == ("month-my-way", "The month, my way", 3)
    assert lesson.source == "month-my-way.toml in lessons" and all(s.check for s in lesson.steps)
    assert lesson.steps[1].check.conditions == (("heads_off_at_least", 2), ("output_contains", "-05-"))


def test_a_good_file_joins_the_catalogue_after_the_built_in_lessons(tmp_path):
    allowed = folder(tmp_path, {"month-my-way.toml": GOOD})
    found = lesson_catalogue([str(allowed)], TABS)  # its view checked as a link is
    assert found.errors == () and found.lessons[:len(LESSONS)] == LESSONS
    n = len(LESSONS) + 1
    assert found.find("month-my-way")[0] == n and found.find(str(n))[1].id == "month-my-way"
    assert found.key_of(n) == "month-my-way" and found.find("../lessons/month-my-way") is None
    pairs = found.opened([("lesson", str(n))])
    assert ("lesson", "month-my-way") in pairs and ("s1", "lundi 3 mars 2025") in pairs


def test_the_examples_checks_on_real_runs(page_events):
    """Each step's check of the example, on the view it opens: passes once done, "not yet" before."""
    ev = page_events
    lesson = read_lesson(EXAMPLE)
    opened = LinkEvents(ev).open_page(Session("date-translator", "cpu"),
                                      SimpleNamespace(query_params=QueryParams(lesson.query)))
    assert opened[ev.page.inputs.link_notice] == ""

    def value(component):
        v = opened.get(component, getattr(component, "value", None))
        return v.get("value") if isinstance(v, dict) else v

    base = form_of(RunForm, *[value(c) for c in form_inputs(RunForm, ev.page)])
    every = value(ev.page.setting("cross_heads_on"))
    runs = {}
    for name, on in (("all on", every), ("both off", [h for h in every if h not in ("L0 H1", "L1 H3")]),
                     ("L0 H1 off", [h for h in every if h != "L0 H1"])):
        shown = Shown()
        ev.analyze_at_once(replaced(base, cross_heads_on=on), shown)
        runs[name] = run_facts(shown, "attention", ev)
    expected = [{"all on": True, "both off": False}, {"both off": True, "L0 H1 off": False},
                {"L0 H1 off": True, "both off": False}]
    for step, cases in zip(lesson.steps, expected):
        assert {name: step.check.verdict(runs[name])[0] for name in cases} == cases, step.do


BAD = {
    "no-title.toml": (GOOD.replace('title = "The month, my way"', ""), "`title` is missing"),
    "typo.toml": (GOOD.replace("output_equals", "output_equal", 1), "check 'output_equal' is not one of"),
    "unknown-key.toml": ('tittle = "x"\n' + GOOD, "unknown key 'tittle'"),
    "not-toml.toml": ("title = 'x\n", "is not valid TOML"),
    "not-text.toml": (b"title = \"\xff\xfe\"\n", "is not UTF-8 text"),
    "number.toml": (GOOD.replace("heads_off_at_least = 2", 'heads_off_at_least = "two"'),
                    "needs a whole number from 1"),
    "no-value.toml": (GOOD.replace('output_equals = "2025-03-03"', "output_changes = 3", 1),
                      "write `output_changes = true`"),
    "no-steps.toml": (GOOD.split("[[steps]]")[0], "needs 1 to 8 [[steps]]"),
    "no-hint.toml": (GOOD.replace('hint = "switch both heads off"\n', ""), "step 2: `hint` is missing"),
    "bad-view.toml": (GOOD.replace("kind=cross", "kind=sideways"), "its view kind 'sideways'"),
    "bad-model.toml": (GOOD.replace("model=date-translator", "model=/etc"), "its view model"),
    "Upper Case.toml": (GOOD, "a lesson file's name (its id in a link) is lowercase"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_file_is_named_with_what_is_wrong(tmp_path, name):
    text, words = BAD[name]
    allowed = folder(tmp_path, {name: text})
    found = lesson_catalogue([str(allowed)], TABS)
    assert found.lessons == LESSONS and len(found.errors) == 1
    error = found.errors[0]
    assert error.startswith(f"{name} in lessons") and words in error, error
    assert str(tmp_path) not in error  # no server path


def test_a_file_too_large_is_refused_unread(tmp_path):
    allowed = folder(tmp_path, {"big.toml": GOOD + "#" * LESSON_BYTES})
    found = catalogue([str(allowed)])
    assert found.errors == (f"big.toml in lessons is larger than {LESSON_BYTES / 2**20:g} MiB, the limit for a lesson "
                            "file",)


def test_files_outside_the_folder_are_refused(tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.toml").write_text(GOOD)
    allowed = folder(tmp_path, {"ok.toml": GOOD})
    os.symlink(outside / "secret.toml", allowed / "lessons" / "linked.toml")
    found = catalogue([str(allowed)])
    assert [x.id for x in found.lessons[len(LESSONS):]] == ["ok"]
    assert found.errors == ("linked.toml in lessons is a link or leaves its folder; refused",)
    other = tmp_path / "other"  # an allowed folder whose lessons/ is a link to a folder outside it
    other.mkdir()
    os.symlink(outside, other / "lessons")
    found = catalogue([str(other)])
    assert found.lessons == LESSONS and found.errors == ("other/lessons is a link; refused (its lessons were not read)",)
    assert catalogue([str(tmp_path / "no-such-folder")]) == Catalogue()  # no lessons/ folder: none, no error


def test_an_id_taken_and_too_many_files(tmp_path):
    allowed = folder(tmp_path, {"compare.toml": GOOD, **{f"l{k:02}.toml": GOOD for k in range(MAX_FILES + 1)}})
    found = catalogue([str(allowed)])
    assert len(found.lessons) == len(LESSONS) + MAX_FILES - 1  # the first 50 files: one of them an id taken
    assert "compare.toml in lessons: the id 'compare' is another lesson's; rename the file" in found.errors
    assert f"lessons/ holds {MAX_FILES + 2} lesson files; the first {MAX_FILES} were read" in found.errors


def test_a_lesson_written_in_code_is_checked_too():
    from explorer.app.page.lesson_format import Check, Lesson

    with pytest.raises(LessonError, match="check 'output_has' is not one of"):
        Check((("output_has", "x"),), "yes", "no")
    with pytest.raises(LessonError, match="needs `causal` or `padding`"):
        Check((("mask_off", "window"),), "yes", "no")
    with pytest.raises(LessonError, match="lesson id"):
        Lesson("t", "model=date-gpt", "text", id="Bad Id")
    # the old format still works: title, view, paragraph (the panel shows one step)
    old = Lesson("The month's circuit", "model=date-translator&tab=attention", "A paragraph.")
    assert old.shown_goal == "A paragraph." and len(old.shown_steps) == 1 and old.shown_steps[0].check is None


def test_the_app_started_with_an_allowed_folder_lists_its_lessons(tmp_path):
    """build_demo(allowed_dirs=...) reads the folder's lessons/ once: the Lessons menu lists them after the
    built-in ones, by their ids; a file it could not use is named with what is wrong, in the menu (an entry that
    opens nothing) and in a note under the title, never with the server's path."""
    import gradio as gr

    from explorer.app.demo import build_demo
    from explorer.app.page.lesson_panel import refused_note

    allowed = folder(tmp_path, {"month-my-way.toml": GOOD, "broken.toml": "title = 'x'\n"})
    demo = build_demo(allowed_dirs=[str(allowed)], device="cpu")
    menu = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "lessons")
    assert menu.label == "Lessons" and menu.choices[0] == ("Lessons …", "")
    assert menu.choices[-2] == (f"{len(LESSONS) + 1}. The month, my way", "month-my-way")
    reason = "broken.toml in lessons: a lesson needs 1 to 8 [[steps]]"
    assert menu.choices[-1] == (f"⚠️ not loaded: {reason}", "!1") and len(menu.choices) == len(LESSONS) + 3
    note = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "lesson-refused")
    assert note.visible and "Lesson files not loaded" in note.value and escape_md(reason) in note.value
    assert str(tmp_path) not in note.value + str(menu.choices)
    with gr.Blocks():  # every file loaded: no note
        note = refused_note(Catalogue())
    assert not note.visible and not note.value

"""The lesson panel's events: the panel follows the lesson and step settings (a link, the menu, previous / next /
leave) and the page's language (its `lang` setting: the panel and the menu's titles rewritten in it), and after every
Run (a tab's button that runs the page too) and every tab opened it says the step's check on the learner's own Run.

The check reads the session's last Run on the server (serving.kept.Shown: its request, with the toggles, and its
kept result: sentence 1's output with and without them, run.answers), never words written in advance
(page.lesson_format.Check.verdict). A result let go from the store is computed again from the session's request.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from ..i18n.words import language
from ..serving.handlers import PRIVATE, reporting
from ..serving.kept import Shown
from ..serving.session import get_model
from .lesson_files import Catalogue
from .lesson_format import RunFacts
from .lesson_panel import LessonPanel, menu_choices, panel_text, refused_text, unknown_text


def run_facts(shown: Any, tab: str, app: Any) -> RunFacts | None:
    """What the session's last Run produced and was run with (None before its first Run); `app`: events.PageEvents."""
    if not isinstance(shown, Shown) or shown.request is None:
        return None
    request = shown.request
    analysis = shown.result(app.ctx.kept) or app.recompute(request)
    kinds = get_model(request.session, app.ctx).config.attention_kinds()
    on = request.toggles.heads_on or {}
    off = {k: n_layers * n_heads - len(on[k]) for k, (n_layers, n_heads) in kinds.items() if k in on}
    masks = frozenset(m for m, kept in (("causal", request.toggles.causal), ("padding", request.toggles.padding))
                      if not kept)
    return RunFacts(request.session.source, str(tab or ""), request.text1, analysis.answers.baseline,
                    analysis.answers.toggled, {k: n for k, n in off.items() if n}, masks)


def step_number(value: Any, steps: int) -> int:
    """The step setting's value as a step of the lesson (1 to `steps`)."""
    try:
        n = int(float(value))
    except (TypeError, ValueError, OverflowError):
        n = 1
    return min(max(n, 1), steps)


class LessonEvents:
    """The panel's handlers of one page; `app` is the page's shared events (events.PageEvents)."""

    def __init__(self, app: Any, panel: LessonPanel):
        self.app, self.panel, self.catalogue = app, panel, panel.catalogue
        self.ctx, self.status = app.ctx, app.status  # `reporting`: an error becomes the status line's message
        page = app.page
        self.lesson, self.step, self.lang = page.setting("lesson"), page.setting("lesson_step"), page.setting("lang")
        self.inputs = [self.lesson, self.step, page.visible_tab, page.kept, self.lang]
        self.note = panel.refused if panel.catalogue.errors else None  # the note on lesson files not loaded
        self.outputs = [panel.box, panel.text, panel.about, self.step, panel.menu, self.status,
                        *([self.note] if self.note is not None else [])]

    @reporting
    def show(self, key: Any, step: Any, tab: Any, shown: Any, lang: Any = "en") -> dict:
        """The panel for lesson `key` at `step` in the page's language `lang`, its check on the last Run; hidden when
        no lesson runs (the menu's titles in `lang` either way)."""
        p, lang = self.panel, language(lang)
        choices = menu_choices(self.catalogue, lang)
        note = {self.note: refused_text(self.catalogue, lang)} if self.note is not None else {}  # for the teacher
        if not str(key or "").strip():
            return {p.box: gr.update(visible=False), p.text: "", p.about: "", p.menu: gr.update(choices=choices,
                                                                                                   value=""), **note}
        found = self.catalogue.find(str(key))
        if found is None:
            return {p.box: gr.update(visible=True), p.text: unknown_text(str(key), self.catalogue, lang), p.about: "",
                    self.step: gr.skip(), p.menu: gr.update(choices=choices), **note}
        n, lesson = found
        lesson = lesson.in_language(lang)
        k = step_number(step, len(lesson.shown_steps))
        check = lesson.shown_steps[k - 1].check
        verdict = None if check is None else check.verdict(run_facts(shown, str(tab or ""), self.app), lang)[1]
        text, about = panel_text(n, lesson, len(self.catalogue.lessons), k, verdict, lang)
        return {p.box: gr.update(visible=True), p.text: text, p.about: about, self.step: k if k != step else gr.skip(),
                p.menu: gr.update(choices=choices, value=self.catalogue.key_of(n)), **note}

    def moved(self, by: int, key: Any, step: Any) -> Any:
        """Previous (-1) or next (+1): the step setting moved within the lesson."""
        found = self.catalogue.find(str(key or ""))
        if found is None:
            return gr.skip()
        return step_number(step_number(step, len(found[1].shown_steps)) + by, len(found[1].shown_steps))

    def wire(self) -> None:
        """The settings' changes, the buttons, and a check after every Run and every tab opened."""
        app, p = self.app, self.panel
        quiet = dict(show_progress="hidden", **PRIVATE)  # the panel never greys out while its check is computed
        for setting in (self.lesson, self.step, self.lang):  # the language: the panel and the menu rewritten in it
            setting.change(self.show, self.inputs, self.outputs, **quiet)
        p.previous.click(lambda key, step: self.moved(-1, key, step), [self.lesson, self.step], [self.step], **PRIVATE)
        p.next.click(lambda key, step: self.moved(1, key, step), [self.lesson, self.step], [self.step], **PRIVATE)
        p.leave.click(lambda: ("", 1), None, [self.lesson, self.step], **PRIVATE)
        # every Run (in the one event that follows it: page.after_run), and a tab's button that sets toggles and runs
        # the page ("Keep only this circuit"): wired last, when every event that runs the page is
        app.after_run.add(self.show, self.inputs, self.outputs, quiet=True)
        for ran in app.every_run:
            if all(ran is not run for run in app.runs):
                ran.then(self.show, self.inputs, self.outputs, **quiet)
        for opened in app.selected.values():
            opened.then(self.show, self.inputs, self.outputs, **quiet)


def lesson_catalogue(allowed_dirs: Any, tabs: Any) -> Catalogue:
    """The page's lessons: the built-in ones and those of the allowed folders' `lessons/`, each file's view checked
    as a link is (a model it cannot open, a key it does not know: the file is refused, named, in the log)."""
    import functools
    import logging

    from ..link.state import parse_link
    from ..serving.session import checked_source
    from .lesson_files import catalogue

    check = functools.partial(checked_source, allowed_dirs=tuple(allowed_dirs))
    found = catalogue(allowed_dirs, lambda query: parse_link(query, check_model=check, tabs=tabs)[1])
    for error in found.errors:
        logging.getLogger(__name__).warning("lesson file refused: %s", error)
    return found

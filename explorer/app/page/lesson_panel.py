"""The lesson panel and the Lessons menu: what a class sees of a lesson while it runs (its title, goal, the step to
do, the check of the learner's own Run, what to notice, previous / next / leave), in view while the page scrolls
(LESSON_CSS): a column at the window's right on a wide screen (the page narrowed beside it; "Fold" leaves its buttons),
docked at the bottom of the window on a narrower one (on a phone folded to its title and step until Unfold), and
the menu that opens a lesson by its link (`?lesson=<id>`).

The lesson shown and its step are page-wide settings (page.settings: `lesson`, `lesson_step`), so a link carries them
and Copy link writes them; what the panel says is made here (`panel_text`), the check's verdict from the page's last
Run on the server (page.lesson_events). Layout only: the events are page.lesson_events.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import gradio as gr

from ..i18n.messages import lesson_error_in
from ..i18n.words import ENGLISH, t
from ..serving.errors import escape_md
from .lesson_files import Catalogue
from .lesson_format import Lesson

# Docked to the bottom of the window (sticky: in the page's flow at its end, so it never covers the page's last
# lines); at most a third of the screen, scrolled inside, so on a phone the output above stays in view.
LESSON_CSS = """
  /* Gradio's container hides its overflow (a scroll box: no sticky inside it); clip clips the same without one */
  .gradio-container:has(#lesson-panel) {overflow: clip !important}
  #lesson-panel {position: sticky; bottom: 0; z-index: 55;  /* above the blocks' labels (Gradio's --layer-5: 50) */
                 max-height: 34vh; overflow-y: auto;
                 background: var(--background-fill-primary); border: 2px solid #4f46e5; border-radius: 10px;
                 box-shadow: 0 -4px 14px rgba(0, 0, 0, 0.15); padding: 4px 10px !important}
  #lesson-row {gap: 12px !important; align-items: flex-start}
  #lesson-text, #lesson-about {font-size: 14px}
  #lesson-about {font-size: 13px}
  #lesson-text p, #lesson-about p {margin: 2px 0}
  #lesson-text h3 {margin: 0 0 2px 0; font-size: 15px}
  #lesson-nav {gap: 4px !important; flex: 0 0 auto !important}
  #lesson-nav button {min-width: 0 !important; white-space: nowrap}
  #lessons .wrap {min-height: 0 !important}
  #lessons .wrap-inner {padding: 1px 8px !important}
  #lessons input {font-size: 12px !important; margin: 0 !important;
                  padding-right: 22px !important}  /* clear of the arrow: a title under it counts as cut */
  /* A wide screen: a column of its own at the window's right, the page narrowed beside it, so that it covers none of
     the results; "Fold" leaves only its buttons, the page taking the room back. */
  @media (min-width: 1024px) {
    /* Gradio puts its container before every selector of the page's CSS: the page's column that holds the panel */
    div:has(> #lesson-panel:not(.folded)) {padding-right: 344px !important}
    div:has(> #lesson-panel.folded) {padding-right: 140px !important}
    #lesson-panel {position: fixed !important; top: 8px; right: 8px; bottom: auto; width: 328px !important;
                   min-width: 0 !important; max-height: calc(100vh - 16px); z-index: 1200;  /* above the pinned bar */
                   box-shadow: -4px 0 14px rgba(0, 0, 0, 0.15)}
    #lesson-panel.folded {width: 124px !important}
    /* the menu, while a lesson runs, as wide as its longest title (376 px at its 12 px): never cut */
    div:has(> #lesson-panel) #lessons {flex: 1 1 400px !important; min-width: min(100%, 400px) !important}
    #lesson-panel.folded #lesson-text, #lesson-panel.folded #lesson-about {display: none}
    #lesson-row {flex-direction: column !important}
    #lesson-row > div {min-width: 0 !important; width: 100% !important}
    #lesson-nav {order: -1; flex-direction: row !important; flex-wrap: wrap !important}
    #lesson-nav button {flex: 1 1 40% !important; width: auto !important}  /* two a row */
    #lesson-panel.folded #lesson-nav {flex-direction: column !important}
  }
  #lesson-fold, #lesson-unfold {display: none}
  @media (min-width: 1024px) {
    #lesson-panel:not(.folded) #lesson-fold, #lesson-panel.folded #lesson-unfold {display: inline-flex}
  }
  @media (max-width: 640px) {
    #lesson-panel.open #lesson-fold, #lesson-panel:not(.open) #lesson-unfold {display: inline-flex}
    /* folded unless opened: the buttons, the step's first sentence and the check's verdict, whole (at most 120 px;
       the Lessons menu names the lesson); Unfold for the title, the rest of the step, what was measured, the goal */
    #lesson-panel:not(.open) {max-height: 120px !important; overflow: hidden !important}
    #lesson-panel:not(.open) #lesson-about, #lesson-panel:not(.open) #lesson-text h3,
    #lesson-panel:not(.open) .lesson-rest, #lesson-panel:not(.open) .lesson-measured {display: none}
    #lesson-panel:not(.open) #lesson-text p {line-height: 1.3}
    #lesson-nav button {padding: 0 4px !important; font-size: 12px !important}
    /* the menu on a line of its own while a lesson runs, its text a little smaller: the title readable */
    div:has(> #lesson-panel) #lessons {flex: 1 1 100% !important}
    div:has(> #lesson-panel) #lessons input {font-size: 10.5px !important}
    #lesson-panel {order: 99; max-height: 32vh; padding: 4px 8px !important;  /* after the page's other parts */
                   z-index: 1150}  /* over the results bar (1100) where the two meet before it is pinned */
    #lesson-row {flex-wrap: wrap !important; gap: 4px !important}
    #lesson-row > div {min-width: 100% !important}
    #lesson-nav {order: -1; flex-direction: row !important; flex-wrap: nowrap !important}  /* one row, first */
    #lesson-nav button {flex: 1 1 0 !important; width: auto !important}
    #lesson-text {font-size: 13px}
  }
"""


@dataclass
class LessonPanel:
    """The panel's components and the page's lessons."""

    catalogue: Catalogue
    menu: gr.Dropdown  # the Lessons menu (title row): its value the lesson running
    box: gr.Column  # hidden while no lesson runs
    text: gr.Markdown  # the title, the step and its check's verdict
    about: gr.Markdown  # the goal and what to notice (beside the step on a screen, under it on a phone)
    previous: gr.Button
    next: gr.Button
    leave: gr.Button
    refused: gr.Markdown | None = None  # under the title: the lesson files not loaded (refused_note), for the teacher


# The panel folded or unfolded, the page's own (no server round trip): a wide screen's side column opens unfolded
# and folds to its buttons ("folded"); a phone's opens folded to its title and step, so it covers little of the page,
# and unfolds ("open"). Fold and Unfold are two buttons, each shown in the state it changes (LESSON_CSS).
FOLD_JS = """() => {
  const panel = document.querySelector('#lesson-panel');
  const phone = window.matchMedia('(max-width: 640px)').matches;
  const open = phone ? panel.classList.toggle('open') : !panel.classList.toggle('folded');
  for (const b of document.querySelectorAll('#lesson-fold, #lesson-unfold')) b.setAttribute('aria-expanded', String(open));
}"""
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z*`“(])")  # a sentence's end: a capital, bold, code or quote next
REFUSED = "!"  # a menu value that names a lesson file not loaded (no lesson id starts with it)


def menu_js() -> str:
    """Choosing a lesson opens its link: the page reloads on `?lesson=<id>` and the link machinery restores its view;
    choosing a file that was not loaded opens nothing (its entry and the note under the title say why)."""
    return f"""(key) => {{
  if (key && !key.startsWith('{REFUSED}')) window.location.search = '?lesson=' + encodeURIComponent(key);
  return key;
}}"""


def menu_choices(catalogue: Catalogue, lang: str = ENGLISH) -> list[tuple[str, str]]:
    """The menu's entries in `lang`: "Lessons …", each lesson by number and title, then each lesson file that could
    not be read, named with what is wrong ("⚠️ not loaded: month.toml in lessons: step 2: ..."; never the server's
    path)."""
    return ([(t("lesson.menu", lang), "")]
            + [(f"{n}. {x.in_language(lang).title}", catalogue.key_of(n)) for n, x in enumerate(catalogue.lessons, 1)]
            + [(t("lesson.not_loaded", lang, error=lesson_error_in(error, lang)[:160]), f"{REFUSED}{k}")
               for k, error in enumerate(catalogue.errors, 1)])


def refused_text(catalogue: Catalogue, lang: str = ENGLISH) -> str:
    """The note's words in `lang`: each lesson file the app could not use, and what is wrong with it ("" for none)."""
    lines = [f"- {escape_md(lesson_error_in(error, lang))}" for error in catalogue.errors]
    return t("teacher.not_loaded", lang) + "\n\n" + "\n".join(lines) if lines else ""


def refused_note(catalogue: Catalogue) -> gr.Markdown:
    """Under the title, for the teacher: the lesson files the app could not use (hidden when every file loaded;
    written in the page's language by the lesson events)."""
    text = refused_text(catalogue)
    return gr.Markdown(text, visible=bool(text), elem_id="lesson-refused")


def lessons_menu(catalogue: Catalogue) -> gr.Dropdown:
    """The page's compact "Lessons" dropdown (its accessible name "Lessons"); its value is the lesson running."""
    choices = menu_choices(catalogue)
    menu = gr.Dropdown(choices, value="", label="Lessons", show_label=False, container=False, scale=0, min_width=180,
                       elem_id="lessons", interactive=True)
    menu.input(None, [menu], [menu], js=menu_js(), queue=False, api_visibility="private")
    return menu


def lesson_panel(catalogue: Catalogue, menu: gr.Dropdown, refused: gr.Markdown | None = None) -> LessonPanel:
    """The panel, laid out where this is called (the page's end: it docks to the window's bottom)."""
    with gr.Column(visible=False, elem_id="lesson-panel") as box:
        with gr.Row(elem_id="lesson-row"):
            with gr.Column(scale=3, min_width=240):
                text = gr.Markdown(elem_id="lesson-text")
            with gr.Column(scale=2, min_width=200):
                about = gr.Markdown(elem_id="lesson-about")
            with gr.Column(scale=0, min_width=100, elem_id="lesson-nav"):
                previous = gr.Button("◀ Previous", size="sm", elem_id="lesson-prev")
                nxt = gr.Button("Next ▶", size="sm", elem_id="lesson-next")
                leave = gr.Button("✕ Leave", size="sm", elem_id="lesson-leave")
                for label, elem_id in (("⇥ Fold", "lesson-fold"), ("⇤ Unfold", "lesson-unfold")):  # in the browser only
                    gr.Button(label, size="sm", elem_id=elem_id).click(None, js=FOLD_JS, queue=False,
                                                                        api_visibility="private")
    return LessonPanel(catalogue, menu, box, text, about, previous, nxt, leave, refused)


def panel_text(n: int, lesson: Lesson, total: int, step: int, verdict: str | None,
               lang: str = ENGLISH) -> tuple[str, str]:
    """The panel's Markdown for step `step` (from 1) of lesson `n` of `total`, in `lang` (the lesson's own words in
    it where it has them): the title, the step and its check's line (`verdict`, already in `lang`; None: the step
    has no check), then the goal and what to notice."""
    lesson = lesson.in_language(lang)
    steps = lesson.shown_steps
    do = steps[step - 1].do if lesson.steps else t("lesson.try_goal", lang)
    where = t("lesson.from", lang, source=lesson.source) if lesson.source else ""
    main = [t("lesson.heading", lang, n=n, total=total, title=lesson.title) + where,
            t("lesson.step", lang, k=step, steps=len(steps), do=folded(*first_sentence(do), "lesson-rest")),
            folded(*measured(verdict), "lesson-measured") if verdict is not None else
            t("lesson.nothing_to_check" if step < len(steps) else "lesson.last_step", lang)]
    about = ([t("lesson.goal", lang, goal=lesson.shown_goal)]
             + ([t("lesson.notice", lang, notice=lesson.notice)] if lesson.notice else []))
    return "\n\n".join(main), "\n\n".join(about)


def first_sentence(text: str) -> tuple[str, str]:
    """A step's first sentence and the rest ("" when it is one sentence)."""
    parts = SENTENCE_END.split(text.strip(), maxsplit=1)
    return (parts[0], " " + parts[1]) if len(parts) == 2 else (text, "")


def measured(verdict: str) -> tuple[str, str]:
    """A check's verdict and its last parenthesis (what the Run measured), "" when it has none."""
    cut = verdict.rfind(" (")
    return (verdict[:cut], verdict[cut:]) if verdict.endswith(")") and cut > 0 else (verdict, "")


def folded(shown: str, rest: str, css_class: str) -> str:
    """`shown`, then `rest` in a span of `css_class` that the folded phone panel hides (LESSON_CSS): its step and
    verdict whole in a few lines, Unfold for the rest."""
    return f'{shown}<span class="{css_class}">{rest}</span>' if rest else shown


def unknown_text(key: str, catalogue: Catalogue, lang: str = ENGLISH) -> str:
    ids = ", ".join(catalogue.key_of(n) for n in range(1, len(catalogue.lessons) + 1))
    return (t("lesson.unknown", lang, key=escape_md(str(key)[:40])) + "\n\n"
            + t("lesson.unknown_list", lang, count=len(catalogue.lessons), ids=ids))

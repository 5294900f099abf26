"""The page's layout: which components there are and where they sit (no behaviour: explorer.app.events and each tab's
`wire`): the title row, the sentences and Run (`Inputs`), the model panel (model_panel), the controls column
(controls), the results bar and the tabs; the page-wide settings each in its place (page.settings.SETTINGS). Every
component the events read or write is a field of a typed dataclass (`Page`, `ModelPanel`, `Inputs`, `Controls`, and
each tab's own parts) or a setting of the table (`page.setting("window")`), so a renamed component fails where it is
named when the page is built, not when a person clicks.

At 1280 x 800 the sentence boxes, Run and the chosen head's heatmap are on the first screen: the model panel is a
collapsible sidebar, the view, mask and head controls a narrow column left of the figures. On a phone (narrower than
640 px) the page's CSS (assets.CSS) puts the output (pinned at the top as the page scrolls), the chosen head's
heatmap, then the head switches and masks right after the first sentence and Run, the long tables after them; the
layout here is the same for both. How the page is drawn (its size, a class's view with the rest behind "More") is
page.display's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr

from ..i18n.words import ENGLISH, t
from ..serving.kept import Shown
from ..serving.limits import DELETE_CACHE
from .a11y import skip_link
from .controls import Controls, controls
from .display import Display, class_view_button, more_button
from .glossary import glossed
from .lesson_files import Catalogue
from .lesson_panel import LessonPanel, lesson_panel, lessons_menu, refused_note
from .model_panel import ModelPanel, Start, model_panel
from .results_bar import Results, results_bar
from .settings import DISPLAY, HEAD_GROUPS, SENTENCE1, SENTENCE2, SETTINGS, TAB_STRIP, Setting, check_table, lay
from .stream_watchdog import watchdog_button

INTRO = ("Type a sentence and press **Run**, then switch heads off and change masks to see what changes. Other "
         "models: the panel behind **›** at the top left.")


@dataclass
class Inputs:
    """The sentences' examples, Run, the status line and the link's components (the sentences are settings)."""

    ex1: gr.Dropdown
    ex2: gr.Dropdown
    run_btn: gr.Button
    api_run: gr.Button  # /analyze for API clients: the whole result in one answer (the page's Run streams it)
    api_tab: gr.Button  # /show_tab for API clients: another tab of the last /analyze
    status: gr.Markdown
    copy_link: gr.Button
    link_url: gr.Textbox  # the link, shown once made (the clipboard may be unavailable)
    link_notice: gr.Markdown  # what an opened (or copied) link could not take
    link_query: gr.Textbox  # the query the server built from the page
    address: gr.Textbox  # the query of the view after each Run, for the address bar (link.opening)


@dataclass
class Page:
    """Every component the events read or write."""

    demo: gr.Blocks
    session: gr.State
    kept: gr.State  # kept.Shown: a key to the last Run's result, its request, the tab opened last
    headline: gr.Markdown
    model: ModelPanel
    inputs: Inputs
    controls: Controls
    results: Results
    tab_strip: gr.Tabs
    tabs: dict[str, gr.Tab]  # tab id -> its gr.Tab
    parts: dict[str, Any]  # tab id -> its parts (Tab.layout)
    registry: tuple[Any, ...]  # the tabs (tabs.base.Tab), in the page's order (explorer.app.tabs.TABS)
    settings: dict[str, Any]  # setting name -> its component, in table order
    table: tuple[Setting, ...]  # the page's settings (page.settings.SETTINGS)
    display: Display  # the buttons that switch a class's view (page.display)
    lesson: LessonPanel | None = None  # the lesson panel and the Lessons menu (page.lesson_panel)

    def setting(self, name: str) -> Any:
        """The component of the setting `name` (KeyError naming the settings: a handler wired to a setting the page
        does not have fails when the page is built)."""
        try:
            return self.settings[name]
        except KeyError:
            raise KeyError(f"the page has no setting {name!r} (page.settings.SETTINGS: "
                           f"{', '.join(self.settings)})") from None

    @property
    def visible_tab(self) -> gr.Textbox:
        """Which tab is shown: the setting `tab`, an input of /analyze (only that tab's figures are drawn and sent)."""
        return self.setting("tab")

    @property
    def heads(self) -> dict[str, gr.CheckboxGroup]:
        """Kind -> its head switches (labels "L0 H1" of the heads on), in the API's order (encoder, decoder, cross)."""
        return {kind: self.setting(f"{kind}_heads_on") for kind, _, _ in HEAD_GROUPS}

    def plots(self) -> dict[str, gr.Plot]:
        """The plot of every Run figure of the page, by figure name."""
        return {name: plot for tab in self.registry for name, plot in tab.plots(self.parts[tab.id]).items()}


EXAMPLE_LABEL_CHARS = 40  # an example's label in its menu, cut with "…" (the sentence it sets is whole)


def example_label(example: str, limit: int = EXAMPLE_LABEL_CHARS) -> str:
    """An example as its menu names it: at most `limit` characters, so a long one (induction-gpt's 113-character
    repeated sequence) fits the dropdown beside its sentence, on a phone too."""
    return example if len(example) <= limit else example[:limit - 1].rstrip() + "…"


def example_choices(examples: list[str], which: str, lang: str = ENGLISH) -> list[tuple[str, str]]:
    """Dropdown choices whose first entry says what the list is (so it never looks empty), in `lang`; each example
    named by its cut label, its value the whole sentence. `which`: "sentence 1" or "sentence 2"."""
    first = (t(f"examples.for_{which[-1]}", lang, n=len(examples)) if examples else t("examples.none", lang))
    return [(first, ""), *((example_label(e), e) for e in examples)]


def input_rows(start: Start, copy_link: gr.Button, table: Sequence[Setting]) -> tuple[Inputs, dict[str, Any]]:
    """The sentences (the settings placed there), their examples and Run; the status line and the link's boxes."""
    examples = start.info.examples if start.info else []
    with gr.Row(equal_height=False, elem_id="inputs"):
        with gr.Column(scale=5, min_width=200, elem_id="sentence1-col"):
            made = lay(table, SENTENCE1, start)
            ex1 = gr.Dropdown(example_choices(examples, "sentence 1"), value="", label="Examples for sentence 1",
                              show_label=False, container=False,
                              elem_id="ex1", elem_classes="examples")
        with gr.Column(scale=5, min_width=200, elem_id="sentence2-col"):
            made |= lay(table, SENTENCE2, start)
            ex2 = gr.Dropdown(example_choices(examples, "sentence 2"), value="", label="Examples for sentence 2",
                              show_label=False, container=False,
                              elem_id="ex2", elem_classes="examples")
        run_btn = gr.Button("Run", variant="primary", scale=1, min_width=90, elem_id="run")
        api_run, api_tab = gr.Button(visible=False), gr.Button(visible=False)
    status = gr.Markdown(elem_id="status")
    link_url = gr.Textbox(label="Link to this view", visible=False, max_lines=1, buttons=["copy"], elem_id="link-url")
    link_notice = gr.Markdown(elem_id="link-notice")
    link_query = gr.Textbox(visible=False, elem_id="link-query", label="link query")
    address = gr.Textbox(visible=False, elem_id="address-query", label="address query")
    return Inputs(ex1, ex2, run_btn, api_run, api_tab, status, copy_link, link_url, link_notice, link_query,
                  address), made


def layout(start: Start, session_value: Any, tabs: Sequence[Any], table: Sequence[Setting] = SETTINGS,
           lessons: Catalogue = Catalogue()) -> Page:
    """The page with `tabs` (tabs.TABS: each lays out its own components inside its gr.Tab), the settings of
    `table` (page.settings.SETTINGS: each in its place) and the lessons of `lessons` (page.lesson_files)."""
    check_table(table)
    with gr.Blocks(title="Transformer Explorer", delete_cache=DELETE_CACHE) as demo:
        session = gr.State(session_value)
        # A key to the last Run's result in the app's store of kept results, its request, the tab opened last
        # (explorer.app.serving.kept.Shown): small, so no time to live; the store bounds the results by bytes.
        kept = gr.State(Shown())
        skip_link()  # the first focusable element (page.a11y)
        model = model_panel(start)
        with gr.Row(elem_id="title", equal_height=True):
            gr.Markdown("# Transformer Explorer", elem_id="title-text")  # the page's one h1
            headline = gr.Markdown(start.info.headline if start.info else "", elem_id="headline")
            menu = lessons_menu(lessons)  # choosing a lesson opens its link (in the browser only)
            shown_as = lay(table, DISPLAY, start)
            class_view = class_view_button()
            copy_link = gr.Button("Copy link", size="sm", scale=0, min_width=90, elem_id="copy-link")
        refused = refused_note(lessons)  # a teacher's lesson file the app could not use: named, with what is wrong
        gr.Markdown(INTRO, elem_classes="intro")
        inputs, made = input_rows(start, copy_link, table)
        with gr.Row(equal_height=False, elem_id="workspace"):  # on a phone: figures first (assets.CSS)
            ctl, in_column = controls(start, table)
            with gr.Column(scale=4, elem_id="views-col"):
                results = results_bar()
                more = more_button()  # in a class's view only: the tabs and controls it hides
                with gr.Tabs(elem_id="views", overflow_behavior="wrap") as tab_strip:  # every tab one click away
                    shown, parts = {}, {}
                    for tab in tabs:
                        with gr.Tab(tab.title, id=tab.id, visible=tab.shown_for(start.info)) as shown[tab.id]:
                            if tab.help and not tab.help_folded:
                                gr.Markdown(glossed(tab.help), elem_classes="tab-text")  # jargon explained
                            parts[tab.id] = tab.layout(start)
                made |= in_column | lay(table, TAB_STRIP, start) | shown_as
        lesson = lesson_panel(lessons, menu, refused)  # last: docked to the window's bottom while a lesson runs
        watchdog_button()  # clicked by the page's script only, when a queue stream was left closed (stream_watchdog)
    return Page(demo, session, kept, headline, model, inputs, ctl, results, tab_strip, shown, parts, tuple(tabs),
                {s.name: made[s.name] for s in table}, tuple(table), Display(more, class_view), lesson)

"""What a tab of the page is: one object (`Tab`) that says everything about it, so that a new view is one new module
and one line in `tabs.TABS`.

A tab has an id (the link's `tab` value and the page's tab id), a title, a help line (one plain sentence first, then
how to read it), its layout (the components inside its gr.Tab, returned as a typed dataclass: its "parts"), its
events (`wire`), and how it is computed: by the page's Run (`figures`: each a reduction of the Run and its drawing,
explorer.app.run.figures) or by its own button (`button`: the elem_id a link presses once the page has run). It says
what a link restores for it (`link_keys`, read and written only while it is the tab shown), what it shows after a
model change (`model_updates`: cleared results, hidden for models it does not apply to), what it adds to the
page's script (`script`), and what it reads of the wired page (`page_wired`).

The page (explorer.app.page.layout), the events (explorer.app.events), the link (explorer.app.link), /show_tab and the
compute path take the page's tabs (`TABS`, handed to them by explorer.app.demo, which assembles the page) and import
none; nothing else holds a table keyed by tab ids. Shapes and sizes live with each tab's module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..run.figures import RunFigure


@dataclass(frozen=True)
class LinkKey:
    """A key of the link that belongs to a tab: its value goes to (and is read from) the field `part` of the tab's
    parts. `parse(text, check_model)` turns the link's text into the component's value (raising `link.values.Invalid`
    with the end of a notice "key 'text' ..."); `doc` is its line in docs/link.md's table."""

    key: str
    part: str
    parse: Callable[[str, Callable[[str], str]], Any]
    doc: str


class Wiring(Protocol):
    """What a tab's events may use of the page's shared events (explorer.app.events.PageEvents)."""

    page: Any  # page.layout.Page
    ctx: Any  # serving.session.AppContext
    compute: Any  # serving.compute.Compute
    figure_set: Any  # run.figures.RunFigures: every Run figure of the page (a comparison draws them for each model)
    status: Any  # the status line (gr.Markdown)
    selected: dict[str, Any]  # tab id -> the event of its opening (the page's show_tab): a tab may chain after it
    model_outputs: list[Any]  # what a model change updates (`model_updates`' components)

    def then_analyze(self, event: Any) -> Any: ...  # the page's Run chained after `event`

    def after_model(self, event: Any) -> Any: ...  # the page's Run and what follows a model change, after `event`

    def model_updates(self, session: Any, loaded: Any, message: str) -> dict: ...  # the page after a model change

    def add_run(self, event: Any) -> Any: ...  # a Run event of the page (followers chained after it); returns it

    def follow_runs(self, then: Callable[[Any], Any]) -> None: ...  # `then(run)` for every Run event of the page


class TabEvents:
    """A tab's handlers (subclass per tab): the page's shared events `app` and the tab's `parts`. `handlers.reporting`
    reads `ctx` and `status` from it."""

    def __init__(self, app: Wiring, parts: Any):
        self.app, self.parts = app, parts
        self.page, self.ctx, self.compute, self.status = app.page, app.ctx, app.compute, app.status


class Tab:
    """One tab of the page. Subclasses set the class attributes and override what they use."""

    id: str = ""
    title: str = ""
    help: str = ""  # Markdown under the tab's title
    help_folded: bool = False  # True: folded under the tab's form instead ("How to read this": `folded_help`)
    result: str = ""  # elem_id of what shows the tab's result (empty until computed: tests wait for it)
    button: str | None = None  # elem_id of the button that computes the tab; None: the page's Run draws it
    opens_computed: bool = False  # computed when opened and after each Run while shown: a link never presses `button`
    figures: tuple[RunFigure, ...] = ()  # drawn from each Run (their names are fields of the parts holding gr.Plot)
    link_keys: tuple[LinkKey, ...] = ()
    script: str = ""  # JavaScript run once on the page (a function body's statements), e.g. click bindings

    def layout(self, start: Any) -> Any:
        """The components inside the tab (called within its gr.Tab, after its help line); returns its parts."""
        raise NotImplementedError

    def folded_help(self) -> None:
        """The help folded, where the tab's layout calls this (under its form: a long help first pushed it down)."""
        import gradio as gr

        from ..page.glossary import glossed

        with gr.Accordion("How to read this", open=False, elem_classes="tab-help"):
            gr.Markdown(glossed(self.help), elem_classes="tab-text")  # jargon explained

    def shown_for(self, info: Any) -> bool:
        """Whether the tab is shown for a model (None: the starting model failed to load)."""
        return True

    def wire(self, parts: Any, app: Wiring) -> "TabEvents | None":
        """Attach the tab's events and return its handlers (tests call them with typed forms). Named (API) events
        first: an unnamed event takes its handler's name."""
        return None

    def page_wired(self, parts: Any, demo: Any) -> None:
        """Once every event of the page is wired (`demo`: the page's gr.Blocks, still open): what the tab takes from
        them (the API tab lists the named endpoints)."""

    def model_updates(self, parts: Any, info: Any) -> dict:
        """After a model change: its results cleared, its controls fitted to the model (component -> update)."""
        return {}

    def run_outputs(self, parts: Any) -> list[Any]:
        """Components besides its figures that every Run writes (the output table, the tokens)."""
        return []

    def run_updates(self, parts: Any, result: Any) -> dict:
        """Their values from a Run's result (`run.result.Analysis`)."""
        return {}

    def waiting_updates(self, parts: Any) -> dict:
        """Their values while a language model's outputs are computed (its attention shown already)."""
        return {}

    def failed_updates(self, parts: Any) -> dict:
        """Their values when a Run that sent `waiting_updates` failed (its message is on the status line)."""
        return {}

    def after_model_change(self, parts: Any, app: Wiring, ran: Any) -> None:
        """Chain what the tab recomputes after a model change once the page has run (`ran`: that Run's event)."""

    def restore_link(self, parts: Any, app: Wiring, values: dict[str, Any]) -> tuple[dict, list[str]]:
        """The updates that set the tab's controls to a link's values (key -> value, parsed by its `link_keys`), and
        notices of what could not be set."""
        by_key = {k.key: k for k in self.link_keys}
        return {getattr(parts, by_key[key].part): value for key, value in values.items() if key in by_key}, []

    def restored(self, parts: Any) -> list[Any]:
        """The components `restore_link` may update."""
        return [getattr(parts, k.part) for k in self.link_keys]

    def plots(self, parts: Any) -> dict[str, Any]:
        """The plot of each of its Run figures, by figure name."""
        return {f.name: getattr(parts, f.name) for f in self.figures}

    @property
    def computed_by(self) -> str:
        """What computes the tab, in words (docs/app.md's table of tabs)."""
        return "each Run" if self.figures else "its button (a link presses it)" if self.button else "nothing: text"

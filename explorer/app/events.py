"""The page's shared behaviour: the Run (/analyze) and opening a tab (/show_tab), the head switches' buttons (a model
change: model_events); then each tab wires its own events (`Tab.wire`) and the link its own (link.opening). Each
handler turns one typed form (explorer.app.forms) into calls of the app's plain functions and the result into
`{component: value}` updates; an error becomes a status line message (`handlers.reporting`), never a traceback.

The named events are the HTTP API (docs/http-api.md): /analyze, /show_tab here, /load_model, /build_model there, the
tabs' own in their modules; their parameters their forms' fields, their results the outputs listed here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

import gradio as gr

from ..checkpoints import LoadedModel
from .forms import RunForm, endpoint, form_inputs, run_form
from .page.after_run import AfterRun, is_skip
from .page.assets import REFLOW_JS, plot
from .page.gradio_fixes import progress_on_text
from .page.head_switches import switch_updates
from .page.layout import Page
from .page.model_events import EVERY_KIND, ModelEvents, mask_defaults
from .page.model_panel import ModelInfo, model_info
from .i18n import relabel, words
from .page.next_step import NextStepEvents
from .page.settings import ATTENTION_TAB, BLUR_ON_ENTER
from .run.figures import RunFigures
from .run.pair import drawn_with
from .run.request import RunRequest
from .run.request_memory import analysis_bytes
from .run.result import Analysis, FirstLook, status_in
from .run.state_line import note_in, state_line
from .run.view import default_kind
from .serving.compute import Compute
from .serving.errors import AppError, escape_md
from .serving.handlers import PRIVATE, reporting
from .serving.kept import Shown
from .serving.session import AppContext, Session, get_model

class PageEvents:
    """The shared handlers of one page (methods), and `wire()`, which attaches them and every tab's."""

    def __init__(self, page: Page, ctx: AppContext):
        self.page, self.ctx = page, ctx
        self.figure_set = RunFigures.of(page.registry)
        self.compute = Compute(ctx, self.figure_set)  # every model run, through spaces.GPU
        m, i, c, setting = page.model, page.inputs, page.controls, page.setting
        self.status = i.status
        self.run_form = run_form(page.table)  # /analyze's form: the session, then the page's settings
        self.models = ModelEvents(self)
        self.runs: list[Any] = []  # the page's Run events (a tab may follow them: `follow_runs`)
        self._followers: list[Callable[[Any], Any]] = []
        self.after_run = AfterRun(self.status)  # the tabs' steps after each Run, one event (page.after_run)
        self.every_run: list[Any] = []  # every event that runs the page (`follow_every_run`)
        self._every_followers: list[Callable[[Any], Any]] = []
        self.selected: dict[str, Any] = {}  # tab id -> the event of its opening
        self.tab_events: dict[str, Any] = {}  # tab id -> its handlers (`Tab.wire`)
        self.model_outputs = [self.status, page.session, m.model_md, page.headline, i.ex1, i.ex2,
                              setting("sentence1"), setting("sentence2"), *page.heads.values(), setting("kind"),
                              setting("layer"), setting("head"), c.lm_controls]
        for t in page.registry:
            self.model_outputs += [x for x in t.model_updates(page.parts[t.id], EVERY_KIND) if x not in
                                   self.model_outputs]
        self.model_outputs += [setting("predict_after"), setting("continue_tokens"), *page.tabs.values(),
                               *mask_defaults(page), m.source]
        plots = page.plots()
        # /analyze returns its figures in the order it always has (RunFigure.api_order), then the results bar, then
        # newer figures (no api_order) in the page's order; /show_tab the ordered ones in the page's order, then those.
        ranked = sorted(self.figure_set.of_tab("all"), key=lambda f: (f.api_order is None, f.api_order or 0))
        order = [f.name for f in ranked if f.api_order is not None]
        newer = [f.name for f in ranked if f.api_order is None]
        self.plots = {n: plots[n] for n in [*(n for n in plots if n not in newer), *newer]}  # /show_tab's outputs
        self.run_outputs = [x for t in page.registry for x in t.run_outputs(page.parts[t.id])]
        r = page.results  # after the documented outputs: the API's order stays (docs/http-api.md)
        self.analysis_outputs = [self.status, *self.run_outputs, *(plots[n] for n in order), page.kept, r.state,
                                 r.output, r.targets, *(plots[n] for n in newer)]
        # A Run shows a timer on the status line only, without the animated spinner over every output: Chromium's
        # repainting of 15 overlays took CPU time from the model's own forward pass (BENCHMARKS.md, app_long).
        self.run_progress = dict(show_progress="minimal", show_progress_on=[self.status])

    # ------------------------------------------------------------------ model
    def info_of(self, loaded: LoadedModel) -> ModelInfo:
        return model_info(loaded)

    def model_updates(self, session: Session, loaded: LoadedModel, message: str) -> dict:
        """Everything that follows the model (model_events.ModelEvents.model_updates)."""
        return self.models.model_updates(session, loaded, message)

    # ------------------------------------------------------------------ runs and tabs
    def request_of(self, form: RunForm) -> RunRequest:
        if not isinstance(form.session, Session):
            raise AppError("This page's session was lost: reload the page.")
        return form.request(form.session, get_model(form.session, self.ctx).config.attention_kinds())

    @reporting
    def analyze(self, form: RunForm, shown: Any = None) -> Iterator[dict]:
        """Run the model on the sentences; draw and send the figures of the visible tab (`form.tab` when it was
        clicked, the one opened since if any; "all": every tab). `shown`: the page's kept.Shown.

        Yields the updates: a language model's first (its attention drawn while its vocabulary head, predictions
        and continuation are computed: half of a 1,024-token Run), then everything; other models', once."""
        yield from self.run(self.request_of(form), str(form.tab or ATTENTION_TAB),
                            shown if isinstance(shown, Shown) else Shown())

    def run(self, request: RunRequest, tab: str, shown: Shown) -> Iterator[dict]:
        """The Run of `analyze` on its typed request."""
        page, loaded, lang = self.page, get_model(request.session, self.ctx), request.lang
        line = state_line(request.toggles, loaded.config.attention_kinds(), drawn_with(loaded, request.sampling), lang)
        state = {page.results.state: escape_md(line)}  # in the page's language (a.state: English, for the file)
        looked: tuple[str, set[str], int] | None = None  # the tab the first looks drew, their figures, tabs opened
        waiting = {k: v for t in page.registry for k, v in t.waiting_updates(page.parts[t.id]).items()}
        with self.ctx.gate.hold(analysis_bytes(loaded, request, self.ctx.max_tokens)):
            try:
                for step in self.compute.analyze(request, shown.visible_tab(tab)):
                    if isinstance(step, FirstLook):
                        drawn_tab = shown.visible_tab(tab)
                        figures = step.figures(drawn_tab)
                        if looked is None or looked[0] != drawn_tab or looked[2] != shown.opened:
                            looked = (drawn_tab, set(), shown.opened)
                            said = [status_in(step.notices, lang), words.t("run.waiting", lang)]
                            yield {self.status: "\n\n".join(filter(None, said)), **waiting,
                                   **state, **self.plots_of(figures)}
                        else:
                            yield self.plots_of(figures)
                        looked[1].update(figures)
                    else:
                        a = step
                tab_now, opened = shown.visible_tab(tab), shown.opened
                on_page = looked[1] if looked is not None and looked[0] == tab_now and looked[2] == opened else ()
                figures = a.figures(tab_now, skip=on_page)
                texts = {k: v for t in page.registry for k, v in t.run_updates(page.parts[t.id], a).items()}
                state = {page.results.state: "\n\n".join(escape_md(x) for x in (line, note_in(a.note, lang)) if x)}
                status = "\n\n".join(filter(None, [shown.take_model_notice(), status_in(a.notices, lang)]))
                yield {self.status: status, **texts, page.kept: shown, **state, page.results.output: a.chips.said(lang),
                       page.results.targets: a.chips.targets, **self.plots_of(figures)}
                # (`shown` ends below: the same object, changed in place)
            except Exception:
                if looked is not None:  # the output panel said its outputs were coming
                    yield {k: v for t in page.registry for k, v in t.failed_updates(page.parts[t.id]).items()}
                raise
            # The other tabs' reductions, after this one is sent; then the result is kept (still within the gate: the
            # runs are let go here). A tab opened meanwhile drew the Run before (kept.Shown.open): drawn again.
            a.complete()
            shown.ended(request, a, self.ctx.kept)
        again = self.plots_of(a.figures(shown.visible_tab(tab))) if shown.opened != opened else {}
        # Gradio ends a generator's event by sending its last yield's values once more (process_completed): a last
        # update that changes nothing makes that message a no-op for the page instead of a second copy of every
        # figure to receive and draw (API clients read that message: /analyze is `analyze_at_once`).
        yield {self.status: gr.skip(), **again}

    def analyze_at_once(self, form: RunForm, shown: Any = None) -> dict:
        """/analyze for API clients: `analyze`'s updates merged into one answer (the closing message a client reads)."""
        if isinstance(shown, Shown):  # an API client's `tab` argument decides, not a tab it opened with /show_tab
            shown.tab = None
            shown.model_notice = ""  # and it read what a model change said in that change's own answer
        merged: dict = {}
        for update in self.analyze(form, shown):
            merged.update((c, value) for c, value in update.items() if not is_skip(value))
        return merged

    def recompute(self, request: RunRequest) -> Analysis:
        """A session's last Run made again from its request (its kept result was let go), within the memory gate."""
        loaded = get_model(request.session, self.ctx)
        with self.ctx.gate.hold(analysis_bytes(loaded, request, self.ctx.max_tokens)):
            *_, a = self.compute.analyze(request, "")
        return a

    def plots_of(self, figures: dict[str, Any]) -> dict:
        return {self.plots[name]: plot(fig) for name, fig in figures.items()}  # {plot: figure} of figures by name

    @reporting
    def show_tab(self, tab, shown):
        """A tab was opened: draw its figures from the session's last Run (kept, or computed again from its request if
        the store let it go; kept.Shown.open). /show_tab for API clients: the figures of `tab` (attention, overview,
        generation, rollout, all) of the client's last /analyze, without running the model when its result is kept."""
        if not isinstance(shown, Shown):
            figures, notice = {}, None
        elif self.figure_set.of_tab(tab):
            figures, notice = shown.open(tab, self.ctx.kept, self.recompute)
        else:  # a tab the Run does not draw: nothing to draw (nor to compute again)
            figures, notice = shown.opening(tab), None
        # The status line keeps what the Run said (its notices) unless the tab was recomputed.
        return {self.page.visible_tab: tab, self.status: "⚠️ " + escape_md(notice) if notice else gr.skip(),
                **self.plots_of(figures)}

    # ------------------------------------------------------------------ small controls
    @reporting
    def set_heads(self, mode, session, kind, layer, head):
        """mode "all": every head on; "only": only the chosen head of the chosen kind (others all on)."""
        kinds = get_model(session, self.ctx).config.attention_kinds()
        chosen = kind if kind in kinds else default_kind(kinds)
        on = {chosen: {(int(layer or 0), int(head or 0))}} if mode == "only" else None
        return {self.status: "", **switch_updates(self.page.heads, kinds, on, choices=False)}

    # ------------------------------------------------------------------ wiring
    def run_inputs(self) -> list[Any]:
        """The page's Run's inputs: /analyze's form's components, then the page's kept.Shown."""
        return form_inputs(self.run_form, self.page) + [self.page.kept]

    def then_analyze(self, event: Any) -> Any:
        return self.any_run(event.then(self.page_run, self.run_inputs(), self.analysis_outputs, **self.run_progress,
                                       **PRIVATE))

    def add_run(self, event: Any) -> Any:
        self.runs.append(event)
        for follow in self._followers:
            follow(event)
        return self.any_run(event)

    def any_run(self, event: Any) -> Any:
        """Every event that runs the page (`add_run`'s, and a tab's `then_analyze` that tabs do not follow), once."""
        if all(e is not event for e in self.every_run):
            self.every_run.append(event)
            for follow in self._every_followers:
                follow(event)
        return event

    def follow_every_run(self, then: Callable[[Any], Any]) -> None:
        """`then(event)` for every event that runs the page, wired or to be wired (the address bar follows them)."""
        self._every_followers.append(then)
        for event in self.every_run:
            then(event)

    def follow_runs(self, then: Callable[[Any], Any]) -> None:
        self._followers.append(then)
        for event in self.runs:
            then(event)

    def after_model(self, event: Any) -> Any:
        """After a model change: the page's Run, then what each tab recomputes (`Tab.after_model_change`)."""
        ran = self.add_run(self.then_analyze(event))
        for t in self.page.registry:
            t.after_model_change(self.page.parts[t.id], self, ran)
        return ran

    @functools.cached_property
    def page_run(self) -> Callable[..., Any]:
        """What a page event calls for a Run (the same as /analyze, streamed; not an API endpoint)."""
        return endpoint(self.run_form, self.analyze, "analyze_page", extra=("shown",))

    def wire(self) -> None:
        from .export import download
        from .link import opening
        from .page import display, lesson_events

        page, m, i, c = self.page, self.page.model, self.page.inputs, self.page.controls
        # Named (API) events first: an unnamed event takes its handler's name, and a later explicit
        # api_name would then get a suffix.
        changes = self.models.wire()  # /load_model and /build_model
        run_inputs = self.run_inputs()
        i.api_run.click(endpoint(self.run_form, self.analyze_at_once, "analyze", extra=("shown",)), run_inputs,
                        self.analysis_outputs, api_name="analyze",
                        api_description="Run the model on the sentences with the masks and head switches: its "
                                        "output and the figures of `tab`.")
        shown_outputs = [page.visible_tab, self.status, *self.plots.values()]
        i.api_tab.click(self.show_tab, [page.visible_tab, page.kept], shown_outputs, api_name="show_tab",
                        api_description="Draw one tab's figures from this client's last /analyze, without running "
                                        "the model again.")
        for t in page.registry:  # opening a tab draws its figures of the last Run (and tells the next Run)
            self.selected[t.id] = page.tabs[t.id].select(functools.partial(self.show_tab, t.id), [page.kept],
                                                         shown_outputs, **PRIVATE)
        for t in page.registry:
            self.tab_events[t.id] = t.wire(page.parts[t.id], self)
        for event in changes:
            self.after_model(event)
        display.wire_display(page.setting("size"), page.setting("mode"), page.display)  # in the browser only
        for shared in (opening.LinkEvents, download.DownloadEvents, NextStepEvents, relabel.LanguageEvents):
            shared(self).wire()  # a link's view then its first Run; the tab as a file; why nothing changed; words
        # Run, and each setting's `rerun` event. A click while a Run is under way (say after its attention is shown,
        # before its predictions) runs again once it ends, with what is on the page then; Gradio's default for clicks
        # would drop it.
        triggers = [getattr(page.setting(s.name), s.rerun) for s in page.table if s.rerun]
        for trigger in (i.run_btn.click, *triggers):
            self.add_run(trigger(self.page_run, run_inputs, self.analysis_outputs, trigger_mode="always_last",
                                 **self.run_progress, **PRIVATE))
        for s in page.table:  # Enter in a field that reruns on leaving it: it leaves it (settings.BLUR_ON_ENTER)
            if s.rerun == "blur":
                page.setting(s.name).submit(None, js=BLUR_ON_ENTER, **PRIVATE)
        sample = page.setting("sample")  # its numbers shown while it is ticked (by a click or by a link: `change`)
        sample.change(lambda on: gr.update(visible=bool(on)), [sample], [c.sampling], **PRIVATE)
        for box, text in ((i.ex1, page.setting("sentence1")), (i.ex2, page.setting("sentence2"))):  # Tab out sends ""
            self.then_analyze(box.input(lambda value, text=text: {text: value} if value else gr.skip(), [box], [text],
                                        **PRIVATE))
        view_inputs = [page.session, page.setting("kind"), page.setting("layer"), page.setting("head")]
        for button, mode in ((c.all_on, "all"), (c.only_this, "only")):
            self.add_run(self.then_analyze(button.click(functools.partial(self.set_heads, mode), view_inputs,
                                                        [self.status, *page.heads.values()], **PRIVATE)))
        for reflow in (m.sidebar.expand, m.sidebar.collapse):
            reflow(None, js=REFLOW_JS)
        if page.lesson is not None:  # the lesson panel: its check after every Run and every tab opened
            lesson_events.LessonEvents(self, page.lesson).wire()
        self.follow_runs(self.after_run.then)  # every follower added: one event after each Run
        progress_on_text(page.demo, self.status)  # every event wired: loading statuses on small text (gradio_fixes)
        for t in page.registry:  # every event is wired: what a tab reads of them (the API tab: its endpoints)
            t.page_wired(page.parts[t.id], page.demo)

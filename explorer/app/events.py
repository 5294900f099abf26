"""The page's behaviour: each event turns component values into a call of the app's plain functions and the
result into `{component: value}` updates. Errors become a message in the status line (never a traceback).

The named events are the HTTP API (docs/http-api.md): /load_model, /build_model, /analyze, /positional,
/importance (and /roles, /switch_off_role, /patching, /lens: `events_heads`; /contributions: `events_contrib`);
their parameters are the input components in the order listed in `Events.__init__` (names from the handler
signatures), their results the outputs in that order.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterator
from typing import Any

import gradio as gr
import pandas as pd

from ..checkpoints import LoadedModel
from ..model import PRESETS
from .assets import REFLOW_JS, plot
from .build import BuildSpec
from .compute import Compute
from .errors import escape_md
from .events_compare import CompareEvents
from .events_contrib import ContributionEvents
from .events_heads import HeadEvents
from .events_link import LinkEvents
from .handlers import PRIVATE, reporting
from .head_labels import clicked_tile, head_label, head_labels
from .limits import DEFAULT_CONTINUATION
from .kept import Shown
from .request_memory import analysis_bytes
from .request import RunRequest, toggles_from
from .session import AppContext, Session, build_session, get_model, load_session
from .ui import HEAD_GROUPS, Page, example_choices
from .views.analysis import Analysis, FirstLook
from .model_panel import model_info
from .views.output import NEXT_TOKEN_HEADERS

PREDICTING = "Attention drawn; computing the next-token predictions and the continuation…"
NO_OUTPUTS = "The predictions could not be computed: see the message above."


def frame(headers: list[str], rows: list[list[Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=headers)


def is_skip(value: Any) -> bool:
    """Whether an update leaves its component as it is (gr.skip())."""
    return isinstance(value, dict) and value == gr.skip()


class Events:
    """The handlers of one page (methods) and `wire()`, which attaches them to its components."""

    def __init__(self, page: Page, ctx: AppContext):
        self.page, self.ctx = page, ctx
        self.compute = Compute(ctx)  # every model run, through spaces.GPU
        m, i, c, v = page.model, page.inputs, page.controls, page.views
        self.status = i.status
        self.groups = [c.heads[k] for k, _, _ in HEAD_GROUPS]
        self.model_outputs = [self.status, page.session, m.model_md, page.headline, i.ex1, i.ex2, i.text1, i.text2,
                              *self.groups, c.kind, c.layer, c.head, c.lm_controls, v.surprisal_plot,
                              v.gen_cross]
        self.heads = HeadEvents(page, ctx, self.compute, self.groups, self.then_analyze)
        self.link = LinkEvents(page, ctx, self.model_updates)
        self.model_outputs += list(self.heads.model_updates(True))
        self.contrib = ContributionEvents(page, ctx, self.compute, self.groups, self.then_analyze)
        self.model_outputs += list(self.contrib.model_updates())
        self.analysis_inputs = [page.session, i.text1, i.text2, c.padding, c.causal, c.custom, c.block_token,
                                c.window, *self.groups, c.kind, c.layer, c.head, c.sentence, c.position, c.new_tokens,
                                v.tab, c.measure, page.kept]
        # The plot of each figure /analyze draws (views.analysis.TAB_FIGURES).
        self.plots = dict(mask=v.mask_plot, head=v.head_plot, baseline=v.baseline_plot, difference=v.diff_plot,
                          surprisal=v.surprisal_plot, overview=v.overview_plot, large=v.large_plot,
                          generation_self=v.gen_self, generation_cross=v.gen_cross, rollout=v.rollout_plot)
        self.analysis_outputs = [self.status, v.tokens_df, v.output_md, v.output_df, v.mask_plot, v.head_plot,
                                 v.baseline_plot, v.diff_plot, v.overview_plot, v.large_plot, v.gen_self,
                                 v.gen_cross, v.rollout_plot, v.surprisal_plot, page.kept]
        # A Run shows a timer on the status line only, without the animated spinner: over every output (15 of them,
        # the plots large) Chromium spent ~5 CPU seconds repainting the overlays during one 1,024-token Run on 2
        # cores, taken from the model's own forward pass; the spinner alone, redrawn every frame, still took 1.2 of
        # the first 2.5 s (the timer, redrawn ten times a second: 0.7, as much as with no progress at all).
        self.run_progress = dict(show_progress="minimal", show_progress_on=[self.status])
        self.pe_inputs = [page.session, v.pe_d, v.pe_len, v.pe_base]
        self.model_outputs += [c.position, c.new_tokens]
        self.compare = CompareEvents(page, ctx, self.compute, self.model_updates, self.model_outputs, self.after_model)
        self.compare.attach_link(self.link)  # a link's model2 key
        # /positional: the first four figures as before, then the scheme's name and the model's other figures.
        self.pe_outputs = [self.status, v.pe_heat, v.pe_curves, v.pe_sim, v.pe_model, v.pe_scheme, v.pe_model2,
                           v.pe_model3, v.pe_model4]

    # ------------------------------------------------------------------ model
    def model_updates(self, session: Session, loaded: LoadedModel, message: str) -> dict:
        """Everything that follows the model: its panel, examples, attention kinds, layers, heads."""
        i, c = self.page.inputs, self.page.controls
        info = model_info(loaded)
        ex, kinds = info.examples, info.kinds
        n_layers, n_heads = next(iter(kinds.values()))
        updates = {self.status: message, self.page.session: session, self.page.model.model_md: info.markdown,
                   self.page.headline: info.headline, i.text1: ex[0] if ex else "",
                   i.ex1: gr.update(choices=example_choices(ex, "sentence 1"), value=""),
                   i.ex2: gr.update(choices=example_choices(ex, "sentence 2"), value=""),
                   i.text2: ex[1] if len(ex) > 1 else "",
                   c.kind: gr.update(choices=list(kinds), value="cross" if "cross" in kinds else next(iter(kinds))),
                   c.layer: gr.update(choices=list(range(n_layers)), value=0),
                   c.head: gr.update(choices=list(range(n_heads)), value=0),
                   c.lm_controls: gr.update(visible=info.answer_length is not None,
                                            label="Language model" if info.language_model else "Generated output"),
                   c.position: gr.update(visible=info.language_model),
                   c.new_tokens: gr.update(value=info.answer_length or DEFAULT_CONTINUATION,
                                           label="Continue (tokens)" if info.language_model else
                                           "Generate at most (tokens)"),
                   self.page.views.surprisal_plot: gr.update(visible=info.language_model),
                   self.page.views.gen_cross: gr.update(visible="cross" in kinds),
                   **self.heads.model_updates("decoder" in kinds), **self.contrib.model_updates()}
        for kind, _, _ in HEAD_GROUPS:
            labels = head_labels(*kinds[kind]) if kind in kinds else []
            updates[c.heads[kind]] = gr.update(choices=labels, value=labels, visible=bool(labels))
        return updates

    @reporting
    def load_model(self, source, hub_id_or_folder, device, progress=gr.Progress(track_tqdm=True)):
        name = (hub_id_or_folder or "").strip() or source
        session, loaded = load_session(name, device, self.ctx, progress)
        return self.model_updates(session, loaded, f"Loaded {escape_md(name)}.")

    @reporting
    def build_model(self, preset, arch, n_layers, n_heads, d_model, d_ff, norm, positional, seed, device,
                    progress=gr.Progress()):
        spec = BuildSpec.from_form(preset=preset, arch=arch, n_layers=n_layers, n_heads=n_heads, d_model=d_model,
                                   d_ff=d_ff, norm=norm, positional=positional, seed=seed)
        session, loaded = build_session(spec, device, self.ctx, progress)
        return self.model_updates(session, loaded, "Built a fresh model with random weights.")

    # ------------------------------------------------------------------ runs and views
    @reporting
    def analyze(self, session, sentence1, sentence2, padding_mask, causal_mask, custom_mask, blocked_position,
                window, encoder_heads_on, decoder_heads_on, cross_heads_on, kind, layer, head, sentence,
                predict_after=-1, continue_tokens=DEFAULT_CONTINUATION, tab="attention", measure="weights",
                shown=None):
        """Run the model on the sentences; draw and send the figures of the visible tab (`tab` when it was clicked,
        the one opened since if any; "all": every tab). `shown`: the page's kept.Shown.

        Yields the updates: a language model's first (its attention drawn while its vocabulary head, predictions
        and continuation are computed: half of a 1,024-token Run), then everything; other models', once."""
        loaded = get_model(session, self.ctx)
        heads = {"encoder": encoder_heads_on, "decoder": decoder_heads_on, "cross": cross_heads_on}
        request = RunRequest.from_page(session, loaded.config.attention_kinds(), sentence1, sentence2, padding_mask,
                                       causal_mask, custom_mask, blocked_position, window, heads, kind, layer, head,
                                       sentence, predict_after, continue_tokens, measure)
        yield from self.run(request, loaded, tab, shown if isinstance(shown, Shown) else Shown())

    def run(self, request: RunRequest, loaded: LoadedModel, tab: str, shown: Shown) -> Iterator[dict]:
        """The Run of `analyze` on its typed request."""
        v = self.page.views
        looked: tuple[str, set[str], int] | None = None  # the tab the first looks drew, their figures, tabs opened
        with self.ctx.gate.hold(analysis_bytes(loaded, request, self.ctx.max_tokens)):
            try:
                for step in self.compute.analyze(request, shown.visible_tab(tab)):
                    if isinstance(step, FirstLook):
                        drawn_tab = shown.visible_tab(tab)
                        figures = step.figures(drawn_tab)
                        if looked is None or looked[0] != drawn_tab or looked[2] != shown.opened:
                            looked = (drawn_tab, set(), shown.opened)
                            yield {self.status: "\n\n".join(filter(None, [step.status, PREDICTING])),
                                   v.output_md: PREDICTING, v.output_df: frame(NEXT_TOKEN_HEADERS, []),
                                   **self.plots_of(figures)}
                        else:
                            yield self.plots_of(figures)
                        looked[1].update(figures)
                    else:
                        a = step
                tab_now, opened = shown.visible_tab(tab), shown.opened
                on_page = looked[1] if looked is not None and looked[0] == tab_now and looked[2] == opened else ()
                figures = a.figures(tab_now, skip=on_page)
                yield {self.status: a.status, v.tokens_df: frame(*a.tokens), v.output_md: a.output_summary,
                       v.output_df: frame(a.output.headers, a.output.rows), self.page.kept: shown,
                       **self.plots_of(figures)}  # `shown` ends below (the same object, changed in place)
            except Exception:
                if looked is not None:  # the output panel said its outputs were coming
                    yield {v.output_md: NO_OUTPUTS}
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

    def analyze_at_once(self, *args: Any, **kwargs: Any) -> dict:
        """/analyze for API clients: the page's Run (`analyze`) with its updates merged into one answer. A client
        reads the event's closing message, which the page's Run leaves empty (see there)."""
        shown = inspect.signature(self.analyze).bind(*args, **kwargs).arguments.get("shown")
        if isinstance(shown, Shown):  # an API client's `tab` argument decides, not a tab it opened with /show_tab
            shown.tab = None
        merged: dict = {}
        for update in self.analyze(*args, **kwargs):
            merged.update((c, value) for c, value in update.items() if not is_skip(value))
        return merged

    analyze_at_once.__signature__ = inspect.signature(analyze)  # type: ignore[attr-defined]  # the API's names

    def recompute(self, request: RunRequest) -> Analysis:
        """A session's last Run made again from its request (its kept result was let go), within the memory gate."""
        loaded = get_model(request.session, self.ctx)
        with self.ctx.gate.hold(analysis_bytes(loaded, request, self.ctx.max_tokens)):
            *_, a = self.compute.analyze(request, "")
        return a

    def plots_of(self, figures: dict[str, Any]) -> dict:
        """{plot component: figure} for figures by name (views.analysis.TAB_FIGURES)."""
        return {self.plots[name]: plot(fig) for name, fig in figures.items()}

    @reporting
    def show_tab(self, tab, shown):
        """A tab was opened: draw its figures from the session's last Run (kept, or computed again from its request if
        the store let it go; kept.Shown.open). /show_tab for API clients: the figures of `tab` (attention, overview,
        generation, rollout, all) of the client's last /analyze, without running the model when its result is kept."""
        figures, notice = shown.open(tab, self.ctx.kept, self.recompute) if isinstance(shown, Shown) else ({}, None)
        # The status line keeps what the Run said (its notices, "No toggle is active") unless the tab was recomputed.
        return {self.page.views.tab: tab, self.status: "⚠️ " + escape_md(notice) if notice else gr.skip(),
                **self.plots_of(figures)}

    @reporting
    def positional(self, session, d_model, positions, base):
        pv, v = self.compute.positional(session if isinstance(session, Session) else None, d_model, positions,
                                        base), self.page.views
        own = {slot: gr.update(value=fig, visible=True) for slot, fig in
               zip((v.pe_model2, v.pe_model3, v.pe_model4), pv.model[1:])}
        unused = {slot: gr.update(value=None, visible=False) for slot in (v.pe_model2, v.pe_model3, v.pe_model4)
                  if slot not in own}
        return {self.status: "", v.pe_heat: pv.heat, v.pe_curves: pv.curves, v.pe_sim: pv.similarity,
                v.pe_model: pv.model[0], v.pe_scheme: pv.scheme, **own, **unused}

    def positional_after_run(self, session, d_model, positions, base):
        """The positional tab redrawn after a model change and its first Run: the status line keeps what the Run
        said (its notices, "No toggle is active") unless this fails."""
        updates = self.positional(session, d_model, positions, base)
        if not updates.get(self.status):
            updates.pop(self.status, None)
        return updates

    @reporting
    def importance(self, session, sentence1, sentence2, padding_mask, causal_mask, custom_mask, blocked_position,
                   window, kind):
        toggles = toggles_from(padding_mask, causal_mask, custom_mask, blocked_position, window)
        fig, md = self.compute.importance(session, sentence1, sentence2, toggles, kind or "")
        return {self.status: "", self.page.views.imp_md: md, self.page.views.imp_plot: fig}

    # ------------------------------------------------------------------ small controls
    @reporting
    def set_heads(self, mode, session, kind, layer, head):
        """mode "all": every head on; "only": only the chosen head of the chosen kind (others all on)."""
        kinds = get_model(session, self.ctx).config.attention_kinds()
        chosen = kind if kind in kinds else next(iter(kinds))
        updates = {self.status: ""}
        for k, _, _ in HEAD_GROUPS:
            only = mode == "only" and k == chosen
            labels = head_labels(*kinds[k]) if k in kinds else []
            updates[self.page.controls.heads[k]] = [head_label(int(layer or 0), int(head or 0))] if only else labels
        return updates

    def fill_preset(self, name):
        if name not in PRESETS:
            return {}
        spec, m = BuildSpec.from_preset(name), self.page.model
        return {m.arch: spec.arch, m.n_layers: spec.n_layers, m.n_heads: spec.n_heads, m.d_model: spec.d_model,
                m.d_ff: spec.d_ff, m.norm: spec.norm, m.pos: spec.positional}

    def choose_tile(self, message):
        tile = clicked_tile(message)
        return {} if tile is None else {self.page.controls.layer: tile[0], self.page.controls.head: tile[1]}

    # ------------------------------------------------------------------ wiring
    def then_analyze(self, event: Any) -> Any:
        return event.then(self.analyze, self.analysis_inputs, self.analysis_outputs, **self.run_progress, **PRIVATE)

    def after_model(self, event: Any) -> Any:
        """After a model change: the page's Run, then its positional tab."""
        return self.then_analyze(event).then(self.positional_after_run, self.pe_inputs, self.pe_outputs, **PRIVATE)

    def wire(self) -> None:
        page, m, i, c, v = self.page, self.page.model, self.page.inputs, self.page.controls, self.page.views
        # Named (API) events first: an unnamed event takes its handler's name, and a later explicit
        # api_name would then get a suffix.
        build_inputs = [m.preset, m.arch, m.n_layers, m.n_heads, m.d_model, m.d_ff, m.norm, m.pos, m.seed,
                        m.build_device]
        loaded = m.load_btn.click(self.load_model, [m.source, m.custom_source, m.device_in], self.model_outputs,
                                  api_name="load_model")
        built = m.build_btn.click(self.build_model, build_inputs, self.model_outputs, api_name="build_model")
        i.api_run.click(self.analyze_at_once, self.analysis_inputs, self.analysis_outputs, api_name="analyze")
        # A click while a Run is under way (say after its attention is shown, before its predictions) runs again
        # once it ends, with what is on the page then; Gradio's default for clicks would drop it.
        i.run_btn.click(self.analyze, self.analysis_inputs, self.analysis_outputs, trigger_mode="always_last",
                        **self.run_progress, **PRIVATE)
        v.pe_btn.click(self.positional, self.pe_inputs, self.pe_outputs, api_name="positional")
        self.heads.wire()
        self.contrib.wire()
        runs = []  # the Runs a control of the first model starts: the Compare models tab follows them
        v.imp_btn.click(self.importance, [page.session, i.text1, i.text2, c.padding, c.causal, c.custom,
                                          c.block_token, c.window, c.kind], [self.status, v.imp_md, v.imp_plot],
                        api_name="importance")
        for event in (loaded, built):
            runs.append(self.after_model(event))
        # Page load: the session's model described (and the view of a link in the page's address restored), then
        # the first Run (events_link).
        self.link.wire(self.model_outputs, self.then_analyze,
                       lambda run: runs.append(run.then(self.positional_after_run, self.pe_inputs, self.pe_outputs,
                                                        **PRIVATE)))
        for trigger in (i.text1.submit, i.text2.submit, c.padding.input, c.causal.input, c.custom.input,
                        c.block_token.submit, c.window.release, *(g.input for g in self.groups), c.kind.input,
                        c.layer.input, c.head.input, c.sentence.input, c.position.submit, c.new_tokens.release,
                        c.measure.input):
            runs.append(trigger(self.analyze, self.analysis_inputs, self.analysis_outputs, trigger_mode="always_last",
                                **self.run_progress, **PRIVATE))
        for box, text in ((i.ex1, i.text1), (i.ex2, i.text2)):
            self.then_analyze(box.input(lambda value, text=text: {text: value} if value else {}, [box], [text],
                                        **PRIVATE))
        head_outputs, view_inputs = [self.status, *self.groups], [page.session, c.kind, c.layer, c.head]
        for button, mode in ((c.all_on, "all"), (c.only_this, "only")):
            runs.append(self.then_analyze(button.click(functools.partial(self.set_heads, mode), view_inputs,
                                                       head_outputs, **PRIVATE)))
        runs.append(self.then_analyze(v.tile_click.change(self.choose_tile, [v.tile_click], [c.layer, c.head],
                                                          **PRIVATE)))
        shown = [v.tab, self.status, *self.plots.values()]
        for tab_id, tab in v.tabs.items():
            if tab_id != "compare":  # its own (events_compare)
                tab.select(functools.partial(self.show_tab, tab_id), [self.page.kept], shown, **PRIVATE)
        i.api_tab.click(self.show_tab, [v.tab, page.kept], shown, api_name="show_tab")
        self.compare.wire(runs)
        for reflow in (m.sidebar.expand, m.sidebar.collapse):
            reflow(None, js=REFLOW_JS)
        m.preset.input(self.fill_preset, [m.preset], [m.arch, m.n_layers, m.n_heads, m.d_model, m.d_ff, m.norm,
                                                      m.pos], **PRIVATE)

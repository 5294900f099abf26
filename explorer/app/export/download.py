"""The "Download" button: the shown tab as one HTML file to keep (explorer.app.export.view_file writes it).

A tab the page's Run draws is drawn again from the session's kept result (kept.Shown: no model run; if the store
let it go, the Run is computed again from the session's last request, as opening a tab would). A tab computed by its
own button (Roles, Patching, Lens, ...) or by opening it (Positions, Compare models) exports what it shows: its plots
and texts as the page holds them (the page sends only the shown tab's: `ONLY_SHOWN_JS`). The settings come from the
kept request (model, sentences, view, the state line, the output) and the link from the same code as "Copy link".

The file is named by the tab id and the time (view_file.file_name) and kept as the session's one file, within the
server's budget for downloads (download_files.DownloadFiles: its next download replaces it, its end removes it); the
page's hidden gr.DownloadButton gets it and a script clicks it, so one click on "Download" saves the file.
"""

from __future__ import annotations

import html
import json
import os
import time
from dataclasses import replace
from typing import Any

import gradio as gr
import pandas as pd
from gradio.components.plot import PlotData

from ... import viz
from ..link.length import fit_length
from ..link.opening import LinkEvents, space_page
from ..link.page_link import LinkForm, from_page
from ..page.assets import PLOT_CONFIG
from ..page.figure_alt import alt_of
from ..page.head_labels import head_label
from ..page.model_panel import model_info
from ..i18n.messages import message_in
from ..i18n.relabel import translated
from ..i18n.result_words import figure_json_in, result_in
from ..i18n import words
from ..run.pair import drawn_with
from ..run.state_line import state_line
from ..serving.errors import AppError
from ..serving.handlers import PRIVATE, reporting
from ..serving.kept import RECOMPUTED, Shown
from ..serving.session import get_model
from .download_files import DownloadFiles
from .view_file import Table, ViewExport, file_name, view_html

NO_RUN = "Press Run first: there is no view to download yet."
CLICK_JS = "() => { const b = document.querySelector('#download-file'); if (b) b.click(); }"


def own_parts(parts: Any) -> list[Any]:
    """A tab's plots, texts and tables as laid out (gr.Plot, gr.Markdown and gr.Dataframe fields of its parts), in its
    parts' order."""
    return [v for v in vars(parts).values() if isinstance(v, (gr.Plot, gr.Markdown, gr.Dataframe))]


def frame_table(component: Any, value: Any) -> Table | None:
    """A gr.Dataframe's value (a pandas DataFrame, or the page's {"headers", "data"}) as a Table; None when empty."""
    if isinstance(value, pd.DataFrame):
        headers, rows = [str(c) for c in value.columns], value.astype(object).values.tolist()
    elif isinstance(value, dict) and isinstance(value.get("data"), list):
        headers, rows = [str(h) for h in value.get("headers") or []], value["data"]
    else:
        return None
    rows = [list(r) for r in rows if isinstance(r, (list, tuple)) and any(c not in (None, "") for c in r)]
    return Table(str(component.label or ""), headers, rows) if rows else None


def figure_or_note(figure_json: str) -> tuple[str | None, str]:
    """A figure's JSON, or (None, its words) for a figure that only holds a message (viz.message_figure: no data),
    which the file writes as a line of text instead of an empty box."""
    spec = json.loads(figure_json)
    if spec.get("data"):
        return figure_json, ""
    notes = [a.get("text", "") for a in (spec.get("layout") or {}).get("annotations") or [] if isinstance(a, dict)]
    return None, html.unescape(" ".join(notes).replace("<br>", " ")).strip()


def plot_json(value: Any) -> str | None:
    """A gr.Plot's value as the page sent it -> the figure's JSON (None for an empty plot)."""
    if isinstance(value, PlotData):
        return value.plot
    if isinstance(value, dict) and isinstance(value.get("plot"), str):
        return value["plot"]
    return None


def base_address(request: Any) -> str:
    """The page's address without its query: the Space's page on a Space, else the page the event came from."""
    space = space_page()
    if space:
        return space
    referer = str(getattr(request, "headers", {}).get("referer", "") or "") if request is not None else ""
    base = referer.split("?", 1)[0].split("#", 1)[0]
    return base if base.startswith(("http://", "https://")) else ""


class DownloadEvents:
    """The Download button's handler on one page (`app`: events.PageEvents)."""

    def __init__(self, app: Any):
        self.app, self.page, self.ctx, self.status = app, app.page, app.ctx, app.status
        self.links = LinkEvents(app)
        self.link_inputs = self.links.link_inputs()
        # tab id -> its plots and texts, for the tabs a Run does not draw
        self.own = {t.id: own_parts(self.page.parts[t.id]) for t in self.page.registry if not t.figures}
        self.files = DownloadFiles(self.ctx.download_disk, self.page.results.download_file.GRADIO_CACHE)

    def only_shown_js(self) -> str:
        """The page sends the shown tab's own plots, texts and tables only (the others as null; a table as an empty
        one, which Gradio's Dataframe must be given)."""
        start, spans, tables = 3 + len(self.link_inputs), {}, []
        for tab_id, parts in self.own.items():
            spans[tab_id] = [start, start + len(parts)]
            tables += [start + n for n, c in enumerate(parts) if isinstance(c, gr.Dataframe)]
            start += len(parts)
        return f"""(...args) => {{
  const spans = {json.dumps(spans)}, tables = new Set({json.dumps(tables)}), [a, b] = spans[args[0]] || [0, 0];
  return args.map((v, n) => n < {3 + len(self.link_inputs)} || (n >= a && n < b) ? v
    : tables.has(n) ? {{headers: [], data: []}} : null);
}}"""

    def inputs(self) -> list[Any]:
        page = self.page
        return [page.visible_tab, page.kept, page.session, *self.link_inputs,
                *(x for parts in self.own.values() for x in parts)]

    @reporting
    def download(self, tab: Any, shown: Any, session: Any, request: gr.Request, *values: Any) -> dict:
        """The shown tab as an HTML file -> the hidden download button's value (and the status line)."""
        by_id = {t.id: t for t in self.page.registry}
        if tab not in by_id:
            raise AppError(f"unknown tab {tab!r}")
        if not isinstance(shown, Shown) or shown.request is None:
            raise AppError(NO_RUN)
        t, notice = by_id[tab], ""
        analysis = shown.result(self.ctx.kept)
        if analysis is None:  # let go to make room: the session's last Run again, as opening a tab does
            analysis, notice = self.app.recompute(shown.request), RECOMPUTED
        link_values, own = values[:len(self.link_inputs)], values[len(self.link_inputs):]
        if t.figures:
            figures, notes = self.run_figures(analysis, tab, shown)
            parts = self.page.parts[tab]
            updates = t.run_updates(parts, analysis)  # the tab's texts and tables, as the Run wrote them
            mine = [(c, updates[c]) for c in vars(parts).values() if c in updates]
            texts = [str(v) for c, v in mine if isinstance(c, gr.Markdown) and isinstance(v, str)] + notes
        else:
            start = sum(len(p) for tab_id, p in self.own.items() if list(self.own).index(tab_id) <
                        list(self.own).index(tab))
            mine = list(zip(self.own[tab], own[start:start + len(self.own[tab])]))
            shown_figures = [figure_or_note(j) for c, v in mine if isinstance(c, gr.Plot) and (j := plot_json(v))]
            figures = [j for j, _ in shown_figures if j]
            texts = [str(v) for c, v in mine if isinstance(c, gr.Markdown) and isinstance(v, str)]
            texts += [note for j, note in shown_figures if note]
        tables = [x for c, v in mine if isinstance(c, gr.Dataframe) and (x := frame_table(c, v))]
        query = self.links.link_of_page(self.links.link_form(link_values)).get(self.page.inputs.link_query, "")
        view = self.in_language(ViewExport(t.title, figures, [], f"{base_address(request)}?{query}", texts, tables),
                                shown, analysis)
        return {self.page.results.download_file: self.written(view, tab, request),
                self.status: "⚠️ " + notice if notice else gr.skip()}

    @reporting
    def download_view(self, tab: Any, shown: Any, request: gr.Request) -> dict:
        """/download_view for API clients: `tab` (one the Run draws: attention, overview, generation, rollout, ...)
        of the client's last /analyze as the HTML file, drawn from its kept result; its link from that Run's request.
        A tab computed by its own endpoint returns its figures as Plotly JSON there."""
        t = {t.id: t for t in self.page.registry}.get(tab)
        if t is None or not t.figures:
            drawn = ", ".join(t.id for t in self.page.registry if t.figures)
            raise AppError(f"/download_view exports a tab the Run draws ({drawn}), not {str(tab)[:40]!r}")
        if not isinstance(shown, Shown) or shown.request is None:
            raise AppError("Call /analyze first: there is no view to download yet.")
        analysis, notice = shown.result(self.ctx.kept), ""
        if analysis is None:
            analysis, notice = self.app.recompute(shown.request), RECOMPUTED
        figures, notes = self.run_figures(analysis, tab, shown)
        parts = self.page.parts[tab]
        updates = t.run_updates(parts, analysis)
        tables = [x for c in vars(parts).values()
                  if isinstance(c, gr.Dataframe) and (x := frame_table(c, updates.get(c)))]
        view = self.in_language(ViewExport(t.title, figures, [], f"{base_address(request)}?"
                                           f"{self.request_query(shown.request, tab)}", notes, tables), shown, analysis)
        return {self.page.results.download_file: self.written(view, tab, request),
                self.status: "⚠️ " + notice if notice else ""}

    def in_language(self, view: ViewExport, shown: Shown, analysis: Any) -> ViewExport:
        """The file's view with its words in the language of the page's Run (its title, settings, figures, texts)."""
        r, lang = shown.request, shown.request.lang
        loaded = get_model(r.session, self.ctx)
        state = None if lang == "en" else state_line(r.toggles, loaded.config.attention_kinds(),
                                                      drawn_with(loaded, r.sampling), lang)
        title = translated(view.tab_title, lang) or view.tab_title
        return replace(view, tab_title=title, settings=settings(shown, analysis, title, state), lang=lang,
                       figures=[figure_json_in(f, lang) for f in view.figures],
                       texts=[result_in(x, lang) for x in view.texts])

    def request_query(self, r: Any, tab: str) -> str:
        """The link query of a Run's request (as Copy link writes the page's): the values the Run was checked to, by
        setting name (the Run's view, measure and sampling included)."""
        kinds = get_model(r.session, self.ctx).config.attention_kinds()
        t, v, s = r.toggles, r.view, r.sampling
        heads = {} if t.heads_on is None else {f"{k}_heads_on": [head_label(la, h) for la, h in sorted(on)]
                                               for k, on in t.heads_on.items()}
        sampled = {} if s is None else dict(sample=True, temperature=s.temperature, top_k=s.top_k, top_p=s.top_p,
                                            seed=s.seed)
        values = dict(sentence1=r.text1, sentence2=r.text2, tab=tab, kind=v.kind or None, layer=v.layer, head=v.head,
                      sentence=v.sentence, measure=v.measure, padding_mask=t.padding, causal_mask=t.causal,
                      custom_mask=t.custom, blocked_position=t.block_token, window=t.window, predict_after=v.position,
                      continue_tokens=r.new_tokens, **heads, **sampled)
        form = LinkForm(r.session if r.session.build is None else None, values)
        state, _ = from_page(form, kinds=kinds, check_model=self.links.check_model, tabs=self.page.registry,
                             table=self.page.table)
        return fit_length(state, table=self.page.table)[0].to_query(self.page.table)

    def run_figures(self, analysis: Any, tab: str, shown: Shown) -> tuple[list[str], list[str]]:
        """A Run-drawn tab's figures as JSON, in the order the tab lays them out (its parts' fields), without those
        the page hides for this model (`Tab.model_updates`); a figure that only holds a message gives its words."""
        drawn, parts = analysis.figures(tab), self.page.parts[tab]
        t = {t.id: t for t in self.page.registry}[tab]
        info = model_info(get_model(shown.request.session, self.ctx))
        hidden = {id(c) for c, u in t.model_updates(parts, info).items()
                  if isinstance(u, dict) and u.get("visible") is False}
        figures, notes = [], []
        for name, component in vars(parts).items():
            if name in drawn and id(component) not in hidden:
                figure, note = figure_or_note(viz.figure_json(drawn[name], PLOT_CONFIG, alt_of(drawn[name])))
                figures += [figure] if figure else []
                notes += [note] if note else []
        return figures, notes

    def written(self, view: ViewExport, tab: str, request: Any) -> str:
        """The file of `view` as the session's one download file: its path."""
        name = file_name(tab, time.strftime("%Y%m%d-%H%M%S"))
        path = str(self.files.write(session_of(request), name, view_html(view)))
        # Gradio's list of the button's files keeps every path it was handed (for delete_cache): not the gone ones
        gradio_list, root = self.page.results.download_file.temp_files, str(self.files.root) + os.sep
        gradio_list.difference_update([p for p in list(gradio_list) if p.startswith(root) and not os.path.exists(p)])
        return path

    def session_ended(self, request: gr.Request) -> None:
        """The page was closed (or the API client went): its file goes."""
        self.files.forget(session_of(request))

    def wire(self) -> None:
        r, i = self.page.results, self.page.inputs
        i.api_tab.click(self.download_view, [self.page.visible_tab, self.page.kept], [r.download_file, self.status],
                        api_name="download_view",
                        api_description="One tab of this client's last /analyze as a self-contained HTML file.")
        r.download.click(self.download, self.inputs(), [r.download_file, self.status], js=self.only_shown_js(),
                         **PRIVATE).then(None, None, None, js=CLICK_JS, **PRIVATE)
        self.page.demo.unload(self.session_ended)


def session_of(request: Any) -> str | None:
    """The session an event comes from (Gradio's session hash; None for a call without one): its key, never a path."""
    return getattr(request, "session_hash", None)


def settings(shown: Shown, analysis: Any, title: str, state: str | None = None) -> list[tuple[str, str]]:
    """The view's settings in words (plain text: the file escapes them), in the Run's language (`state`: its state
    line in it; None: the Run's, in English)."""
    r = shown.request
    v, lang = r.view, r.lang
    source = r.session.source if r.session.build is None else words.t("download.built", lang)
    rows = [("tab", title), ("model", message_in(str(source), lang)), ("sentence", r.text1)]
    if r.text2:
        rows.append(("second_sentence", r.text2))
    rows += [("view", words.t("download.view_line", lang, kind=v.kind or "first", layer=v.layer, head=v.head,
                        sentence=v.sentence, measure=v.measure)), ("state", state or analysis.state)]
    output = " ".join(said for n, ((text, _), (said, _)) in enumerate(zip(analysis.chips.items, analysis.chips.said(lang)))
                      if n or text != "Output:")
    if output:
        rows.append(("output", output))
    return [(words.t(f"download.{name}", lang), value) for name, value in rows]

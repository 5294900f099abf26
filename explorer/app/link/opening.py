"""A link that reopens the view (explorer.app.link.state) on the page: opening the page restores what its URL's
query asks for, then the page runs as on any first load; "Copy link" builds the link of what the page shows.

Opening: Gradio's page-load event gets the page's query (`gr.Request.query_params`; the page's script sends the
URL's query with each event). Without link keys the page opens on its model with one sentence. With them, the model
is loaded (the same checks as a typed name), the components are set from the link fitted to that model (each page
setting by its key, link.setting_keys; each tab its own keys: `Tab.restore_link`), the notice line names what could
not be taken (a link without `s2` opens on one sentence too), and after the first Run a tab with its own button is
computed as if that button had been pressed. Copying: the server turns the components' values (a
`page_link.LinkForm`) into the query (the same parser as an opened link; a tab's own keys only while it is the tab
shown), cut to a length the app can open (`length.fit_length`), and a script in the browser puts the page's address
before it and copies it.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import Any

import gradio as gr
from gradio.utils import get_space

from ...checkpoints import LoadedModel
from ..i18n.words import best_language, language
from ..page.layout import Page
from ..run.view import default_kind
from ..serving.api_inputs import quiet_refusals
from ..serving.errors import escape_md, user_message
from ..serving.handlers import PRIVATE, reporting
from ..serving.session import Session, checked_source, get_model, load_session
from .length import fit_length
from .page_link import LinkForm, from_page, linked_names
from .setting_keys import carried
from .state import LinkState, notice_line, parse_link
from .values import show

# Where the copied link points: the page's own address (origin + path: on a Space opened at *.hf.space, that one);
# on a Space, the Space's page on huggingface.co, which passes its query to the app's iframe when it opens (Hugging
# Face's "How to handle URL parameters in Spaces"; the iframe cannot read its parent's address, a cross-origin page).
COPY_LINK_JS = """async (query) => {
  const base = SPACE_PAGE || (window.location.origin + window.location.pathname);
  const url = query ? base + '?' + query : base;
  try { await navigator.clipboard.writeText(url); } catch (e) {}  // no clipboard (or not allowed): the box shows it
  return url;
}"""
# The address bar follows the view: after each Run (and a tab opened) it is the link "Copy link" would make, in place
# (history.replaceState: no reload, no new history entry); Gradio's and Hugging Face's own keys ("__theme") stay.
ADDRESS_JS = """(query) => {
  if (typeof query !== 'string') return;
  const own = [...new URLSearchParams(window.location.search)].filter(([k]) => k.startsWith('__'))
    .map(([k, v]) => encodeURIComponent(k) + '=' + encodeURIComponent(v));
  const all = [query, ...own].filter(Boolean).join('&');
  const url = window.location.pathname + (all ? '?' + all : '') + window.location.hash;
  if (url !== window.location.pathname + window.location.search + window.location.hash)
    history.replaceState(history.state, '', url);
}"""
_SPACE_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}")


def space_page() -> str:
    """The Space's page on huggingface.co when the app runs on a Space ("" elsewhere)."""
    space = get_space() or ""
    return f"https://huggingface.co/spaces/{space}" if _SPACE_ID.fullmatch(space) else ""


def copy_link_js() -> str:
    return COPY_LINK_JS.replace("SPACE_PAGE", json.dumps(space_page()))


def run_tab_js(buttons: dict[str, str]) -> str:
    """After the first Run of a page opened on a tab with its own button (tab id -> the button's elem_id): press it."""
    return f"""(tab) => {{
  const id = {json.dumps(buttons)}[tab];
  const button = id && document.querySelector('#' + id);
  if (button) button.click();
}}"""


def query_pairs(request: Any) -> list[tuple[str, str]]:
    """The page's query as (key, value) pairs, a key given twice kept twice (Starlette's multi_items)."""
    params = getattr(request, "query_params", None) if request is not None else None
    if params is None:
        return []
    if hasattr(params, "multi_items"):
        return [(str(k), str(v)) for k, v in params.multi_items()]
    return [(str(k), str(v)) for k, v in dict(params).items()]


def merged(update: Any, **props: Any) -> dict:
    """A component update (gr.update dict, or a plain value) with `props` set too."""
    return {**update, **props} if isinstance(update, dict) else gr.update(**props)


class LinkEvents:
    """The page-load and "Copy link" handlers of one page; `app` is the page's shared events (events.PageEvents)."""

    def __init__(self, app: Any):
        self.app, self.page, self.ctx = app, app.page, app.ctx
        self.status = app.status
        page: Page = self.page
        self.linked = linked_names(page.table)  # the settings a link carries
        # What restoring a link may update besides a model change's outputs: every setting a link carries, the tab
        # strip, the notice, and each tab's own.
        self.restored = [*(x for x in map(page.setting, self.linked) if x not in app.model_outputs), page.tab_strip,
                         page.inputs.link_notice, *(x for t in page.registry for x in t.restored(page.parts[t.id]))]
        self.check_model = functools.partial(checked_source, allowed_dirs=self.ctx.allowed_dirs)

    def shown_tabs(self, loaded: LoadedModel | None) -> list[str]:
        """The tabs the page shows for `loaded` (those a link may open)."""
        info = None if loaded is None else self.app.info_of(loaded)
        return [t.id for t in self.page.registry if loaded is None or t.shown_for(info)]

    # ------------------------------------------------------------------ opening a link
    @reporting
    def open_page(self, session: Any, request: gr.Request, progress: Any = gr.Progress()) -> dict:
        """Page load: describe the session's model; with a link in the page's address, restore its view first."""
        pairs = query_pairs(request)
        if not any(not k.startswith("__") for k, _ in pairs):
            updates = self.app.model_updates(session, get_model(session, self.ctx, progress), "")
            return self.one_sentence({**updates, **self.browser_language(request)})
        if self.page.lesson is not None:  # `lesson=N`: the lesson's view, under the link's own keys
            pairs = self.page.lesson.catalogue.opened(pairs)
        state, notices = parse_link(pairs, check_model=self.check_model, tabs=self.page.registry,
                                    table=self.page.table)
        loaded = None
        if state.model is not None:
            try:
                session, loaded = load_session(state.model, session.device, self.ctx, progress)
            except Exception as err:  # noqa: BLE001 - named in the notice; the page opens on its own model
                notices.append(f"model {show(state.model)} could not be loaded: {user_message(err)}")
        if loaded is None:
            loaded = get_model(session, self.ctx, progress)
        updates = self.app.model_updates(session, loaded, "")
        state, misfits = state.fitted(loaded.config.attention_kinds(), self.shown_tabs(loaded), self.page.table)
        notices += misfits
        updates.update(self.restore(state, loaded, updates))
        if state.model is not None:
            updates.update(self.own_examples(state, loaded))
        for t in self.page.registry:
            own = {k.key: state.tab_values[k.key] for k in t.link_keys if k.key in state.tab_values}
            if own:
                tab_updates, tab_notices = t.restore_link(self.page.parts[t.id], self.app, own)
                updates.update(tab_updates)
                notices += tab_notices
        if "lang" not in state.values:
            updates.update(self.browser_language(request))
        lang = updates.get(self.page.setting("lang"), state.values.get("lang"))  # the link's, else the browser's
        line = notice_line(notices, lang=language(lang))
        updates[self.page.inputs.link_notice] = "⚠️ " + escape_md(line) if line else ""
        return updates if "s2" in state.values else self.one_sentence(updates)

    def browser_language(self, request: Any) -> dict:
        """A page opened without `lang=`: in the browser's language (its Accept-Language; English if none of ours)."""
        headers = getattr(request, "headers", None) or {}
        return {self.page.setting("lang"): best_language(headers.get("accept-language"))}

    def one_sentence(self, updates: dict) -> dict:
        """The page opens on one sentence (the simplest view) unless its link names a second: the second box, which
        holds the model's second example for API callers (/analyze's default), is emptied."""
        return {**updates, self.page.setting("sentence2"): ""}

    def restore(self, state: LinkState, loaded: LoadedModel, updates: dict) -> dict:
        """The component updates that set the page to `state` (fitted to `loaded`), on top of a model change's: each
        key's settings (link.setting_keys: `restore`), keeping what the model change set of them (choices, labels);
        the layer and head choices those of the kind shown; the tab strip on the tab."""
        page, setting = self.page, self.page.setting
        kinds = loaded.config.attention_kinds()
        out: dict = {}
        for c in carried(page.table):
            if c.key.key in state.values:
                for name, value in c.key.restore(state.values[c.key.key], c.names, kinds).items():
                    component = setting(name)
                    out[component] = merged(updates[component], value=value) if component in updates else value
        kind = state.values.get("kind") or default_kind(kinds)
        n_layers, n_heads = kinds[kind]
        out[setting("kind")] = merged(updates.get(setting("kind")), choices=list(kinds), value=kind)
        out[setting("layer")] = gr.update(choices=list(range(n_layers)), value=state.values.get("layer") or 0)
        out[setting("head")] = gr.update(choices=list(range(n_heads)), value=state.values.get("head") or 0)
        if state.tab is not None:
            out[page.tab_strip] = gr.update(selected=state.tab)
        return out

    def own_examples(self, state: LinkState, loaded: LoadedModel) -> dict:
        """A link that names a model: the sentences it leaves out are not the starting model's ("t23 t23 …" from
        induction-gpt on a date). With no sentence, the model's own examples, as the page opens on that model (the second
        emptied by `one_sentence` then); with only sentence 1, no second one; with only sentence 2, the model's first
        example before it."""
        examples = [*self.app.info_of(loaded).examples[:2], "", ""]
        given = [key in state.values for key in ("s1", "s2")]
        fill = {(False, False): examples[:2], (True, False): [None, ""], (False, True): [examples[0], None]}
        return {self.page.setting(f"sentence{n}"): text for n, text in enumerate(fill.get(tuple(given), ()), 1)
                if text is not None}

    # ------------------------------------------------------------------ copying a link
    def link_inputs(self) -> list[Any]:
        """The page's values a link is made of: the session, each setting a link carries (table order), then every
        tab's own keys' components (in the tabs' order; only the shown tab's go into the link)."""
        page = self.page
        return [page.session, *map(page.setting, self.linked),
                *(getattr(page.parts[t.id], k.part) for t in page.registry for k in t.link_keys)]

    def link_form(self, values: Sequence[Any]) -> LinkForm:
        """The LinkForm of `link_inputs`' values."""
        session, rest = values[0], values[1:]
        named = dict(zip(self.linked, rest))
        keys = [(t.id, k.key) for t in self.page.registry for k in t.link_keys]
        tab = named.get("tab")
        own = {key: value for (tab_id, key), value in zip(keys, rest[len(self.linked):])
               if tab_id == tab and value is not None}
        return LinkForm(session, named, own)

    @reporting
    def link_of_page(self, form: LinkForm) -> dict:
        """The query of the page's view (the script puts the address before it), and a notice of what it leaves out."""
        query, notices = self.view_query(form)
        line = notice_line(notices, ending="link.in_link", lang=language(form.values.get("lang")))
        i = self.page.inputs
        return {i.link_query: query, i.link_url: gr.update(visible=True),
                i.link_notice: "⚠️ " + escape_md(line) if line else ""}

    def view_query(self, form: LinkForm) -> tuple[str, list[str]]:
        """The query of the page's view, and what it leaves out (a notice each)."""
        session = form.session
        loaded = get_model(session, self.ctx) if isinstance(session, Session) else None
        kinds = loaded.config.attention_kinds() if loaded is not None else {}
        state, notices = from_page(form, kinds=kinds, check_model=self.check_model, tabs=self.page.registry,
                                   table=self.page.table)
        if isinstance(session, Session) and session.build is not None:
            notices.append("a built model has no name a link can carry, so the link opens the starting model")
        state, cuts = fit_length(state, table=self.page.table)
        return state.to_query(self.page.table), notices + cuts

    @quiet_refusals
    def address(self, *values: Any) -> Any:
        """The query of the page's view for the address bar (`link_inputs`' values; what a link leaves out is said by
        Copy link, not here): gr.skip() when there is none to write."""
        try:
            return self.view_query(self.link_form(values))[0]
        except Exception:  # noqa: BLE001 - the address bar keeps its link; the page's own events report errors
            return gr.skip()

    def copy_link(self, *values: Any) -> dict:
        """"Copy link": the link of the page's values (`link_inputs`)."""
        return self.link_of_page(self.link_form(values))

    # ------------------------------------------------------------------ wiring
    def wire(self) -> None:
        """The page-load event (then its first Run, what follows a model change, and the tab's own button) and "Copy
        link". Unnamed events: wire after the named ones."""
        app, page = self.app, self.page
        i = page.inputs
        opened = page.demo.load(self.open_page, [page.session], [*app.model_outputs, *self.restored], **PRIVATE)
        ran = app.after_model(opened)
        buttons = {t.id: t.button for t in page.registry if t.button and not t.opens_computed}
        ran.then(None, [page.visible_tab], None, js=run_tab_js(buttons), **PRIVATE)
        address = i.address

        def follow(event: Any) -> None:
            event.then(self.address, self.link_inputs(), [address], **PRIVATE).then(None, [address], None,
                                                                                  js=ADDRESS_JS, **PRIVATE)

        app.follow_every_run(follow)
        for event in app.selected.values():
            follow(event)
        if page.lesson is not None:  # the lesson and its step (the panel's buttons, Leave) in the address too
            for name in ("lesson", "lesson_step"):
                follow(page.setting(name).change(None, None, None, js="() => {}", **PRIVATE))
        i.copy_link.click(self.copy_link, self.link_inputs(), [i.link_query, i.link_url, i.link_notice, self.status],
                          **PRIVATE
                          ).then(None, [i.link_query], [i.link_url], js=copy_link_js(), **PRIVATE)

"""A link that reopens the view (explorer.app.link.state) on the page: opening the page restores what its URL's
query asks for, then the page runs as on any first load; "Copy link" builds the link of what the page shows.

Opening: Gradio's page-load event gets the page's query (`gr.Request.query_params`; the page's script sends the
URL's query with each event). Without link keys the page opens as it always did. With them, the model is loaded
(the same checks as a typed name), the components are set from the link fitted to that model (each tab sets its own
keys: `Tab.restore_link`), the notice line names what could not be taken, and after the first Run a tab with its own
button is computed as if that button had been pressed. Copying: the server turns the components' values into the
query (the same parser as an opened link; a tab's own keys only while it is the tab shown), cut to a length the
app can open (`state.fit_length`), and a script in the browser puts the page's address before it and copies it.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import gradio as gr
from gradio.utils import get_space

from ...checkpoints import LoadedModel
from ..page.head_switches import switch_updates
from ..page.layout import Page
from ..run.request import page_heads
from ..run.view import default_kind
from ..serving.errors import escape_md, user_message
from ..serving.handlers import PRIVATE, reporting
from ..serving.session import Session, checked_source, get_model, load_session
from .state import LinkState, fit_length, from_page, notice_line, parse_link
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
        c, i = page.controls, page.inputs
        self.restored = [c.padding, c.causal, c.custom, c.block_token, c.window, c.sentence, c.measure,
                         *c.sampling.values, page.visible_tab, page.tab_strip, i.link_notice,
                         *(x for t in page.registry for x in t.restored(page.parts[t.id]))]
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
            return self.app.model_updates(session, get_model(session, self.ctx, progress), "")
        state, notices = parse_link(pairs, check_model=self.check_model, tabs=self.page.registry)
        loaded = None
        if state.model is not None:
            try:
                session, loaded = load_session(state.model, session.device, self.ctx, progress)
            except Exception as err:  # noqa: BLE001 - named in the notice; the page opens on its own model
                notices.append(f"model {show(state.model)} could not be loaded: {user_message(err)}")
        if loaded is None:
            loaded = get_model(session, self.ctx, progress)
        updates = self.app.model_updates(session, loaded, "")
        state, misfits = state.fitted(loaded.config.attention_kinds(), self.shown_tabs(loaded))
        notices += misfits
        updates.update(self.restore(state, loaded, updates))
        for t in self.page.registry:
            own = {k.key: state.tab_values[k.key] for k in t.link_keys if k.key in state.tab_values}
            if own:
                tab_updates, tab_notices = t.restore_link(self.page.parts[t.id], self.app, own)
                updates.update(tab_updates)
                notices += tab_notices
        line = notice_line(notices)
        updates[self.page.inputs.link_notice] = "⚠️ " + escape_md(line) if line else ""
        return updates

    def restore(self, state: LinkState, loaded: LoadedModel, updates: dict) -> dict:
        """The component updates that set the page to `state` (fitted to `loaded`), on top of a model change's."""
        page = self.page
        i, c = page.inputs, page.controls
        kinds = loaded.config.attention_kinds()
        kind = state.kind or default_kind(kinds)
        n_layers, n_heads = kinds[kind]
        out: dict = {c.kind: merged(updates.get(c.kind), choices=list(kinds), value=kind),
                     c.layer: gr.update(choices=list(range(n_layers)), value=state.layer or 0),
                     c.head: gr.update(choices=list(range(n_heads)), value=state.head or 0)}
        plain = {i.text1: state.text1, i.text2: state.text2, c.sentence: state.sentence, c.measure: state.measure,
                 c.padding: state.padding, c.causal: state.causal, c.custom: state.mask,
                 c.block_token: state.blocked, c.window: state.window}
        out.update({component: value for component, value in plain.items() if value is not None})
        for component, value in ((c.position, state.position), (c.new_tokens, state.new_tokens)):
            if value is not None:
                out[component] = merged(updates.get(component), value=value)
        sampled = (state.sample, state.temperature, state.top_k, state.top_p, state.seed)
        out.update({x: value for x, value in zip(c.sampling.values, sampled) if value is not None})
        on = state.heads_on(kinds)
        if on is not None:
            for group, update in switch_updates(c.heads, kinds, on).items():
                out[group] = merged(updates.get(group), value=update["value"])
        if state.tab is not None:
            out[page.visible_tab] = state.tab
            out[page.tab_strip] = gr.update(selected=state.tab)
        return out

    # ------------------------------------------------------------------ copying a link
    def link_inputs(self) -> list[Any]:
        page = self.page
        i, c = page.inputs, page.controls
        return [page.session, i.text1, i.text2, page.visible_tab, c.kind, c.layer, c.head, c.sentence, c.measure,
                *c.head_groups, c.padding, c.causal, c.custom, c.block_token, c.window, c.position, c.new_tokens,
                *c.sampling.values, *(getattr(page.parts[t.id], k.part) for t in page.registry for k in t.link_keys)]

    @reporting
    def link_of_page(self, session: Any, text1: Any, text2: Any, tab: Any, kind: Any, layer: Any, head: Any,
                     sentence: Any, measure: Any, encoder_heads_on: Any, decoder_heads_on: Any, cross_heads_on: Any,
                     padding: Any, causal: Any, custom: Any, blocked: Any, window: Any, position: Any,
                     new_tokens: Any, sample: Any, temperature: Any, top_k: Any, top_p: Any, seed: Any,
                     *tab_values: Any) -> dict:
        """The query of the page's view (the script puts the address before it), and a notice of what it leaves out."""
        loaded = get_model(session, self.ctx) if isinstance(session, Session) else None
        kinds = loaded.config.attention_kinds() if loaded is not None else {}
        keys = [(t.id, k.key) for t in self.page.registry for k in t.link_keys]
        own = {key: value for (tab_id, key), value in zip(keys, tab_values) if tab_id == tab and value is not None}
        state, notices = from_page(
            source=session.source if isinstance(session, Session) else None, text1=text1, text2=text2, tab=tab,
            kind=kind, layer=layer, head=head, sentence=sentence, measure=measure,
            heads_on=page_heads(kinds, encoder_heads_on, decoder_heads_on, cross_heads_on), kinds=kinds,
            padding=padding, causal=causal, mask=custom, blocked=blocked, window=window, position=position,
            new_tokens=new_tokens, check_model=self.check_model, tab_values=own, tabs=self.page.registry,
            sampling=(sample, temperature, top_k, top_p, seed))
        if isinstance(session, Session) and session.build is not None:
            notices.append("a built model has no name a link can carry, so the link opens the starting model")
        state, cuts = fit_length(state)
        line = notice_line(notices + cuts, ending="The rest is in the link.")
        i = self.page.inputs
        return {i.link_query: state.to_query(), i.link_url: gr.update(visible=True),
                i.link_notice: "⚠️ " + escape_md(line) if line else ""}

    # ------------------------------------------------------------------ wiring
    def wire(self) -> None:
        """The page-load event (then its first Run, what follows a model change, and the tab's own button) and "Copy
        link". Unnamed events: wire after the named ones."""
        app, page = self.app, self.page
        i = page.inputs
        opened = page.demo.load(self.open_page, [page.session], [*app.model_outputs, *self.restored], **PRIVATE)
        ran = app.after_model(opened)
        buttons = {t.id: t.button for t in page.registry if t.button}
        ran.then(None, [page.visible_tab], None, js=run_tab_js(buttons), **PRIVATE)
        i.copy_link.click(self.link_of_page, self.link_inputs(), [i.link_query, i.link_url, i.link_notice,
                                                                  self.status], **PRIVATE
                          ).then(None, [i.link_query], [i.link_url], js=copy_link_js(), **PRIVATE)

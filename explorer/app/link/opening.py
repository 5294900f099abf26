"""A link that reopens the view (explorer.app.link) on the page: opening the page restores what its URL's query asks
for, then the page runs as on any first load; "Copy link" builds the link of what the page shows.

Opening: Gradio's page-load event gets the page's query (`gr.Request.query_params`; the page's script sends the
URL's query with each event). Without link keys the page opens as it always did. With them, the model is loaded
(the same checks as a typed name), the components are set from the link fitted to that model, and the notice line
names what could not be taken. Copying: the server turns the components' values into the query (the same parser as
an opened link), and a script in the browser puts the page's address before it, copies it and shows it.

Second model: `model2` is parsed and checked like `model` and kept in the state; `model2_updates` is the hook that
applies it (the side-by-side comparison fills it and `model2_inputs` / `model2_of_page`, which give its value for a
copied link). Until then a link's model2 is named in the notice as not shown.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from typing import Any

import gradio as gr
from gradio.utils import get_space

from ..checkpoints import LoadedModel
from .errors import escape_md, user_message
from .handlers import PRIVATE, reporting
from .link import LinkState, default_kind, from_page, notice_line, parse_link, show
from .session import AppContext, Session, checked_source, get_model, load_session
from .ui import HEAD_GROUPS, Page

# Where the copied link points: the page's own address (origin + path: on a Space opened at *.hf.space, that one);
# on a Space, the Space's page on huggingface.co, which passes its query to the app's iframe when it opens (Hugging
# Face's "How to handle URL parameters in Spaces"; the iframe cannot read its parent's address, a cross-origin page).
COPY_LINK_JS = """async (query) => {
  const base = SPACE_PAGE || (window.location.origin + window.location.pathname);
  const url = query ? base + '?' + query : base;
  try { await navigator.clipboard.writeText(url); } catch (e) {}  // no clipboard (or not allowed): the box shows it
  return url;
}"""
# After the Run of a page opened on a tab with its own button (roles, patching, lens, importance): press it.
TAB_BUTTONS = {"roles": "roles-run", "patching": "patch-run", "lens": "lens-run", "importance": "imp-run"}
RUN_TAB_JS = f"""(tab) => {{
  const id = {json.dumps(TAB_BUTTONS)}[tab];
  const button = id && document.querySelector('#' + id);
  if (button) button.click();
}}"""
_SPACE_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}")


def space_page() -> str:
    """The Space's page on huggingface.co when the app runs on a Space ("" elsewhere)."""
    space = get_space() or ""
    return f"https://huggingface.co/spaces/{space}" if _SPACE_ID.fullmatch(space) else ""


def copy_link_js() -> str:
    return COPY_LINK_JS.replace("SPACE_PAGE", json.dumps(space_page()))


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
    """The page-load and "Copy link" handlers of one page; `model_updates` is the page's (Events.model_updates)."""

    def __init__(self, page: Page, ctx: AppContext, model_updates: Any):
        self.page, self.ctx, self.model_updates = page, ctx, model_updates
        self.status = page.inputs.status
        i, c, v = page.inputs, page.controls, page.views
        self.groups = [c.heads[k] for k, _, _ in HEAD_GROUPS]
        self.restored = [c.padding, c.causal, c.custom, c.block_token, c.window, c.sentence, c.measure, v.tab,
                         v.tab_strip, i.link_notice]  # what a link sets beyond what a model change sets
        self.check_model = functools.partial(checked_source, allowed_dirs=ctx.allowed_dirs)
        self.model2_inputs: list[Any] = []  # the comparison's second-model component(s), for a copied link

    def page_tabs(self, loaded: LoadedModel | None = None) -> list[str]:
        """The tabs the page has (those a link may open), and of them those shown for `loaded`."""
        tabs = [t for t in self.page.views.tabs if t != "api"]
        if loaded is not None and "decoder" not in loaded.config.attention_kinds():
            tabs.remove("lens")  # hidden without a decoder (events_heads)
        return tabs

    # ------------------------------------------------------------------ opening a link
    @reporting
    def open_page(self, session, request: gr.Request, progress=gr.Progress()):
        """Page load: describe the session's model; with a link in the page's address, restore its view first."""
        pairs = query_pairs(request)
        if not any(not k.startswith("__") for k, _ in pairs):
            return self.model_updates(session, get_model(session, self.ctx, progress), "")
        state, notices = parse_link(pairs, check_model=self.check_model, tabs=self.page_tabs())
        loaded = None
        if state.model is not None:
            try:
                session, loaded = load_session(state.model, session.device, self.ctx, progress)
            except Exception as err:  # noqa: BLE001 - named in the notice; the page opens on its own model
                notices.append(f"model {show(state.model)} could not be loaded: {user_message(err)}")
        if loaded is None:
            loaded = get_model(session, self.ctx, progress)
        updates = self.model_updates(session, loaded, "")
        state, misfits = state.fitted(loaded.config.attention_kinds(), self.page_tabs(loaded))
        notices += misfits
        updates.update(self.restore(state, loaded, updates))
        m2_updates, m2_notices = self.model2_updates(state.model2)
        updates.update(m2_updates)
        notices += m2_notices
        line = notice_line(notices)
        updates[self.page.inputs.link_notice] = "⚠️ " + escape_md(line) if line else ""
        return updates

    def restore(self, state: LinkState, loaded: LoadedModel, updates: dict) -> dict:
        """The component updates that set the page to `state` (fitted to `loaded`), on top of a model change's."""
        i, c, v = self.page.inputs, self.page.controls, self.page.views
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
        on = state.heads_on(kinds)
        for k, group in zip((k for k, _, _ in HEAD_GROUPS), self.groups):
            if on is not None and k in on:
                out[group] = merged(updates.get(group), value=on[k])
        if state.tab is not None:
            out[v.tab] = state.tab
            out[v.tab_strip] = gr.update(selected=state.tab)
        return out

    def model2_updates(self, model2: str | None) -> tuple[dict, list[str]]:
        """Hook for the side-by-side comparison: the updates that show `model2` (already checked like `model`) beside
        the first, and notices. Without the comparison, a link's model2 is named as not shown."""
        if model2 is None:
            return {}, []
        return {}, [f"model2 {show(model2)} is not shown: this page has no side-by-side comparison"]

    def model2_of_page(self, *values: Any) -> str | None:
        """Hook for the comparison: the second model's name from the values of `model2_inputs` (None: none)."""
        return None

    # ------------------------------------------------------------------ copying a link
    @reporting
    def link_of_page(self, session, text1, text2, tab, kind, layer, head, sentence, measure, encoder_heads_on,
                     decoder_heads_on, cross_heads_on, padding, causal, custom, blocked, window, position, new_tokens,
                     *model2_values):
        """The query of the page's view (the script puts the address before it), and a notice of what it leaves out."""
        loaded = get_model(session, self.ctx) if isinstance(session, Session) else None
        kinds = loaded.config.attention_kinds() if loaded is not None else {}
        heads = {"encoder": encoder_heads_on, "decoder": decoder_heads_on, "cross": cross_heads_on}
        state, notices = from_page(
            source=session.source if isinstance(session, Session) else None,
            model2=self.model2_of_page(*model2_values), text1=text1, text2=text2, tab=tab, kind=kind, layer=layer,
            head=head, sentence=sentence, measure=measure, heads_on={k: heads[k] or [] for k in kinds}, kinds=kinds,
            padding=padding, causal=causal, mask=custom, blocked=blocked, window=window, position=position,
            new_tokens=new_tokens, check_model=self.check_model)
        if isinstance(session, Session) and session.build is not None:
            notices.append("a built model has no name a link can carry, so the link opens the starting model")
        line = notice_line(notices).replace("The rest of the link was restored.", "The rest is in the link.")
        i = self.page.inputs
        return {i.link_query: state.to_query(), i.link_url: gr.update(visible=True),
                i.link_notice: "⚠️ " + escape_md(line) if line else ""}

    # ------------------------------------------------------------------ wiring
    def wire(self, model_outputs: Iterable[Any], then_analyze: Any, after_first_run: Any) -> None:
        """The page-load event (then its first Run, `after_first_run(run)` and the tab's own button) and "Copy
        link". Unnamed events: wire after the named ones."""
        page, i, c, v = self.page, self.page.inputs, self.page.controls, self.page.views
        opened = page.demo.load(self.open_page, [page.session], [*model_outputs, *self.restored], **PRIVATE)
        ran = then_analyze(opened)
        after_first_run(ran)
        ran.then(None, [v.tab], None, js=RUN_TAB_JS, **PRIVATE)
        link_inputs = [page.session, i.text1, i.text2, v.tab, c.kind, c.layer, c.head, c.sentence, c.measure,
                       *self.groups, c.padding, c.causal, c.custom, c.block_token, c.window, c.position,
                       c.new_tokens, *self.model2_inputs]
        i.copy_link.click(self.link_of_page, link_inputs, [i.link_query, i.link_url, i.link_notice, self.status],
                          **PRIVATE).then(None, [i.link_query], [i.link_url], js=copy_link_js(), **PRIVATE)

"""Fixes for Gradio (6.31) behaviour that grows each session's memory and has no setting, and a setting that keeps
its page from copying every component's properties at each status message (`progress_on_text`).

The leak. A handler that updates a component's properties (`gr.update(...)`) or leaves it unchanged
(`gr.skip()`, or a `{component: value}` dict without it: /analyze leaves the plots of the tabs not shown)
makes Gradio build a replacement component for that session, with a new id, and store it under the
original id (gradio/blocks.py, `Blocks.postprocess_data`: `state[block._id] = block.__class__(**kwargs)`).
When a later event gives that component a plain value, the same function looks the replacement up
(`block = state[block._id]`) and then, finding the replacement's own id unknown, stores it again under
that new id (`if block._id not in state: state[block._id] = block`) with a config entry that holds the
value sent (`state._update_value_in_config`): a Plotly figure's JSON. Nothing ever removes these entries,
so every skip-then-value of a plot (the page's tabs, the soak's varied tabs) left a component and a figure
in the session: ~30 kB per /analyze request, 43 MB over 1,500 requests in one session (docs/guarantees.md).

The fix. A replacement stands for the component it replaces, so it takes that component's id when it is
stored (`SessionState.__setitem__`); the lookup then finds the original id, updates that entry in place,
and the session keeps one entry per component, as Gradio intends. Applied once, process-wide, by `build_demo`.

The copies. Gradio also keeps, per session, a copy of every component's config with the last value the session
sent or received (`SessionState._update_value_in_config`), read only to write a deep link (`/gradio_api/deep_link`,
the `gr.DeepLinkButton`, which this app does not offer): the last Run's figures as JSON, ~1.4 MB a session at 480
words on MiniLM, kept as long as the session (up to `state_session_capacity` of them, closed or not). The app's
results are kept once, within a byte budget (explorer.app.serving.kept), so these copies keep no values.

The words. After each event Gradio's status tracker announces `i18n("common.complete")` in its screen-reader
region (`role=status`), a key its English catalogue lacks, so a screen reader said "common.complete"; `STATUS_WORDS`
(launch's `i18n`) gives it words, in each of the page's languages.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
from gradio.blocks import Block
from gradio.state_holder import SessionState

from ..i18n.words import LANGS, t

_original_setitem = SessionState.__setitem__
_original_update_value = SessionState._update_value_in_config


def _setitem(self: SessionState, key: int, value: Any) -> None:
    if isinstance(value, Block) and not value.stateful and value._id != key:
        value._id = key  # a session's replacement of component `key` (see the module docstring)
    _original_setitem(self, key, value)


def _keep_no_value(self: SessionState, key: int, value: Any) -> None:
    return None  # see "The copies" above


def keep_one_entry_per_component() -> None:
    """Install the fixes (idempotent)."""
    SessionState.__setitem__ = _setitem  # type: ignore[method-assign]
    SessionState._update_value_in_config = _keep_no_value  # type: ignore[method-assign]


def progress_on_text(demo: gr.Blocks, status: gr.Markdown) -> None:
    """Every event of `demo` that sets no `show_progress_on` shows its progress on one text: its first Markdown
    output besides `status` (a tab's summary, the model panel's), else `status` (the page's status line). Gradio's
    page keeps a loading status for every component any event showed progress on, and at each status message of any
    event (a Run sends six) copies the properties of each of them, and of every component inside a tab among them
    ($state.snapshot): after the page's first load (122 outputs, six tabs) that was 0.25-1.3 s of the browser's CPU
    per 1,024-token Run, beside the server's forward pass on the same cores (BENCHMARKS.md, app_long)."""
    for fn in demo.fns.values():
        if fn.outputs and fn.show_progress_on is None:
            texts = [c for c in fn.outputs if isinstance(c, gr.Markdown) and c is not status]
            fn.show_progress_on = texts[:1] or [status]


# The keys Gradio 6.31's status tracker reads that its catalogue lacks (see "The words" above).
# Gradio's frontend picks its catalogue by the browser's language (navigator.language), not the page's `lang`.
STATUS_WORDS = gr.I18n(**{lang: {"common.complete": t("gradio.complete", lang)} for lang in LANGS})

"""What the page does after each of its Runs (besides the address bar): ONE event per Run that calls every
follower in turn, where there was one event per follower.

A follower is a tab's step after a Run (Inside a head, Contributions, Features, Compare: most do nothing unless their
tab is shown), the results bar's "why nothing changed" (page.next_step) or the lesson panel's check
(page.lesson_events). Each gives its function, inputs and outputs (`AfterRun.add`); the function returns
`{component: update}` (gr.skip() for what it leaves). The one event's inputs are every follower's, in turn (a
component may be listed twice); its outputs each component once; an update a follower makes stands against a later
follower's gr.skip() for the same component (the status line, written by the shown tab). An exception in one follower
becomes the status line's message and the others still run.

Why one event: Gradio's page keeps a loading status for every component an event showed progress on and, at each
status message of any event (four per event), looks each of them up in its component tree (gradio_fixes): one event
for six followers cuts the browser's work per Run (docs/architecture.md has the numbers), and the page's 30 or so Run
triggers no longer carry six `then` events each (the page's dependencies: 493 -> 328).

Progress: each follower's first Markdown output besides the status line greys while the event runs (as
`gradio_fixes.progress_on_text` chose for its own event), unless it asked for none (`quiet`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr

from ..serving.errors import escape_md, user_message
from ..serving.handlers import PRIVATE


def is_skip(value: Any) -> bool:
    """Whether an update leaves its component as it is (gr.skip())."""
    return isinstance(value, dict) and value == gr.skip()


@dataclass(frozen=True)
class Follower:
    fn: Callable[..., dict]
    inputs: tuple[Any, ...]
    outputs: tuple[Any, ...]
    quiet: bool  # no progress shown while it runs


class AfterRun:
    """The followers of the page's Runs (`add`), wired as one `then` of each Run event (`then`)."""

    def __init__(self, status: Any):
        self.status = status
        self.followers: list[Follower] = []
        self.wired = False

    def add(self, fn: Callable[..., dict], inputs: Sequence[Any], outputs: Sequence[Any], quiet: bool = False) -> None:
        """`fn(*inputs)` after every Run, writing `outputs` (a dict of updates)."""
        assert not self.wired, "a follower added after the page's Runs were wired would miss them"
        self.followers.append(Follower(fn, tuple(inputs), tuple(outputs), quiet))

    @property
    def inputs(self) -> list[Any]:
        return [c for f in self.followers for c in f.inputs]

    @property
    def outputs(self) -> list[Any]:
        return list({id(c): c for f in self.followers for c in (self.status, *f.outputs)}.values())

    @property
    def progress(self) -> list[Any]:
        """Each follower's first Markdown output besides the status line (none for a quiet one)."""
        texts = (next((c for c in f.outputs if isinstance(c, gr.Markdown) and c is not self.status), None)
                 for f in self.followers if not f.quiet)
        return list({id(c): c for c in texts if c is not None}.values())

    def run(self, *values: Any) -> dict:
        """Every follower on its share of `values` (the inputs, in turn): their updates, merged."""
        updates: dict = {}
        start = 0
        for f in self.followers:
            own, start = values[start:start + len(f.inputs)], start + len(f.inputs)
            try:
                made = f.fn(*own)
            except Exception as err:  # noqa: BLE001 - every error becomes a message; the other followers still run
                made = {self.status: "⚠️ " + escape_md(user_message(err))}
            for component, update in made.items():
                if not (is_skip(update) and component in updates):
                    updates[component] = update
        return updates

    def then(self, run: Any) -> Any:
        """The followers after the Run event `run`: one event."""
        self.wired = True

        def after_run(*values: Any) -> dict:
            return self.run(*values)

        progress = self.progress
        shown = dict(show_progress="full", show_progress_on=progress) if progress else dict(show_progress="hidden")
        return run.then(after_run, self.inputs, self.outputs, **shown, **PRIVATE)

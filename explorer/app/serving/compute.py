"""Every computation of the app that runs a model, behind Hugging Face's `spaces.GPU`, so the app runs on a
ZeroGPU Space as it is.

On ZeroGPU (`SPACES_ZERO_GPU` set by the platform), `spaces.GPU` runs each call in a GPU worker process forked
from the server: its arguments go there pickled and its result (or each item a generator yields) comes back
pickled; whatever the call changes in that process stays there. So each function here takes plain arguments (a
`RunRequest`, a `Session`, texts, numbers), finds its model in the app's registry (the worker's copy: a model the
server loaded before the fork is there, a later one the worker loads itself) and returns plain results (reductions
of the runs, tables, figures); the server keeps the results (explorer.app.serving.kept) and changes the sessions' state,
never the worker. Elsewhere `spaces.GPU` returns the function unchanged: everything runs in the server's own
threads, on the device the session chose (`--device auto` picks CUDA on a GPU machine).

A forked worker computes with one torch thread: the server has already run torch's OpenMP thread pool, which does
not survive a fork (a CPU operation on more threads in the child hangs), and on a GPU worker the GPU does the work.

    Compute(ctx, figures).analyze(request, first_tab) -> yields FirstLook (a language model's attention) then Analysis
    .call(fn, session, request) -> fn(the session's model, request, max_tokens): a tab's computation
    .call_optional(fn, session | None, request) -> the same, with None for a model it cannot have
    .call_held(fn, sessions, request) -> fn(the sessions' models, request, max_tokens), the models held together
                                         (a comparison of two models)

A figure comes back as its JSON for gr.Plot (`assets.plot`): a Plotly figure made in one process and unpickled in
another is not the same figure (an empty template comes back with default trace styles).
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import spaces
import torch

from ..run.figures import RunFigures
from ..run.request import RunRequest
from ..run.result import Analysis, FirstLook, analyze_in_steps
from .session import AppContext, Session, get_model, models_held

GPU: Callable[[Callable], Callable] = spaces.GPU  # replaced by a test double that forks like ZeroGPU


def on_gpu(fn: Callable) -> Callable:
    """`fn` through `GPU`, computing with one torch thread when it runs in a process forked from this one."""
    server = os.getpid()

    def one_thread_if_forked() -> None:
        if os.getpid() != server and torch.get_num_threads() != 1:
            torch.set_num_threads(1)

    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def steps(*args: Any, **kwargs: Any) -> Iterator[Any]:
            one_thread_if_forked()
            yield from fn(*args, **kwargs)
        return GPU(steps)

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        one_thread_if_forked()
        return fn(*args, **kwargs)
    return GPU(call)


class Compute:
    """The model computations of one app (its registry and caps in `ctx`, the page's Run figures), each through
    `on_gpu`."""

    def __init__(self, ctx: AppContext, figures: RunFigures):
        self.ctx, self.figures = ctx, figures
        self.analyze = on_gpu(self._analyze)
        self.call = on_gpu(self._call)
        self.call_optional = on_gpu(self._call_optional)
        self.call_held = on_gpu(self._call_held)

    def _analyze(self, request: RunRequest, first_tab: str) -> Iterator[FirstLook | Analysis]:
        """A Run (run.result.analyze_in_steps): a language model's first look reduces `first_tab` only."""
        loaded = get_model(request.session, self.ctx)
        yield from analyze_in_steps(loaded, request.text1, request.text2, request.toggles, request.view,
                                    self.ctx.max_tokens, request.new_tokens, first_tab, figures=self.figures,
                                    sampling=request.sampling)

    def _call(self, fn: Callable[[Any, Any, int], Any], session: Session, request: Any) -> Any:
        """A tab's computation `fn(loaded, request, max_tokens)` on the session's model (`fn` a module-level function:
        on ZeroGPU it is pickled by name to the worker)."""
        return fn(get_model(session, self.ctx), request, self.ctx.max_tokens)

    def _call_optional(self, fn: Callable[[Any, Any, int], Any], session: Session | None, request: Any) -> Any:
        """`call` for a computation that can do without a model: `fn(None, ...)` when there is no session or its
        model cannot be had (the Positions tab's textbook sinusoid)."""
        loaded = None
        if session is not None:
            try:
                loaded = get_model(session, self.ctx)
            except Exception:  # noqa: BLE001 - the computation does without it
                loaded = None
        return fn(loaded, request, self.ctx.max_tokens)

    def _call_held(self, fn: Callable[[list[Any], Any, int], Any], sessions: Sequence[Session], request: Any) -> Any:
        """A computation on several sessions' models at once, `fn(models, request, max_tokens)`, the models held in
        the registry while it runs, so that they count together against the model memory (`models_held`)."""
        with models_held(list(sessions), self.ctx) as models:
            return fn(models, request, self.ctx.max_tokens)

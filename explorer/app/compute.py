"""Every computation of the app that runs a model, behind Hugging Face's `spaces.GPU`, so the app runs on a
ZeroGPU Space as it is.

On ZeroGPU (`SPACES_ZERO_GPU` set by the platform), `spaces.GPU` runs each call in a GPU worker process forked
from the server: its arguments go there pickled and its result (or each item a generator yields) comes back
pickled; whatever the call changes in that process stays there. So each function here takes plain arguments (a
`RunRequest`, a `Session`, texts, numbers), finds its model in the app's registry (the worker's copy: a model the
server loaded before the fork is there, a later one the worker loads itself) and returns plain results (reductions
of the runs, tables, figures); the server keeps the results (explorer.app.kept) and changes the sessions' state,
never the worker. Elsewhere `spaces.GPU` returns the function unchanged: everything runs in the server's own
threads, on the device the session chose (`--device auto` picks CUDA on a GPU machine).

A forked worker computes with one torch thread: the server has already run torch's OpenMP thread pool, which does
not survive a fork (a CPU operation on more threads in the child hangs), and on a GPU worker the GPU does the work.

    Compute(ctx).analyze(request, first_tab) -> yields FirstLook (a language model's attention) then Analysis
    .importance(session, text1, text2, toggles, kind) -> (figure, Markdown)
    .positional(session | None, d_model, length, base) -> PositionalView of figures
    .roles(session, text, kind, head_mask) -> RoleResult
    .patching(session, text1, text2, clean_answer, corrupted_answer) -> (figure, Markdown)
    .lens(session, text) -> (figure, Markdown)
    .compare_models(first, second) -> ModelComparison (two RunRequests, their models held together)
    .contributions(session, ContributionRequest) -> Contributions (the graphs included; drawn by the server)

A figure comes back as its JSON for gr.Plot (`assets.plot`): a Plotly figure made in one process and unpickled in
another is not the same figure (an empty template comes back with default trace styles).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
from collections.abc import Callable, Iterator
from typing import Any

import spaces
import torch

from .assets import plot
from .request import RunRequest
from .session import AppContext, Session, get_model, models_held
from .toggles import Toggles
from .views.analysis import Analysis, FirstLook, analyze_in_steps
from .views.compare_models import ModelComparison, SideSettings, compare_models
from .views.contributions import ContributionRequest, Contributions, contributions
from .views.importance import importance_view
from .views.lens import lens_view
from .views.patching import patching_view
from .views.positional import PositionalView, positional_view
from .views.roles import RoleResult, score_roles

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
    """The model computations of one app (its registry and caps in `ctx`), each through `on_gpu`."""

    def __init__(self, ctx: AppContext):
        self.ctx = ctx
        self.analyze = on_gpu(self._analyze)
        self.importance = on_gpu(self._importance)
        self.positional = on_gpu(self._positional)
        self.roles = on_gpu(self._roles)
        self.patching = on_gpu(self._patching)
        self.lens = on_gpu(self._lens)
        self.compare_models = on_gpu(self._compare_models)
        self.contributions = on_gpu(self._contributions)

    def _analyze(self, request: RunRequest, first_tab: str) -> Iterator[FirstLook | Analysis]:
        """A Run (views.analysis.analyze_in_steps): a language model's first look reduces `first_tab` only."""
        loaded = get_model(request.session, self.ctx)
        yield from analyze_in_steps(loaded, request.text1, request.text2, request.toggles, request.view,
                                    self.ctx.max_tokens, request.new_tokens, first_tab)

    def _importance(self, session: Session, text1: str, text2: str, toggles: Toggles, kind: str) -> tuple[Any, str]:
        fig, md = importance_view(get_model(session, self.ctx), text1, text2, toggles, kind, self.ctx.max_tokens)
        return plot(fig), md

    def _positional(self, session: Session | None, d_model: Any, length: Any, base: Any) -> PositionalView:
        """The positional tab; without a session (or if its model cannot be had) the sinusoid alone."""
        loaded = None
        if session is not None:
            try:
                loaded = get_model(session, self.ctx)
            except Exception:  # noqa: BLE001 - the sinusoidal views need no model
                loaded = None
        pv = positional_view(loaded, d_model, length, base)
        return dataclasses.replace(pv, heat=plot(pv.heat), curves=plot(pv.curves), similarity=plot(pv.similarity),
                                   model=[plot(f) for f in pv.model])

    def _roles(self, session: Session, text: str, kind: str, head_mask: dict | None) -> RoleResult:
        return score_roles(get_model(session, self.ctx), text, kind, head_mask, self.ctx.max_tokens)

    def _patching(self, session: Session, text1: str, text2: str, clean_answer: str, corrupted_answer: str
                  ) -> tuple[Any, str]:
        fig, md = patching_view(get_model(session, self.ctx), text1, text2, clean_answer, corrupted_answer,
                                self.ctx.max_tokens)
        return plot(fig), md

    def _lens(self, session: Session, text: str) -> tuple[Any, str]:
        fig, md = lens_view(get_model(session, self.ctx), text, self.ctx.max_tokens)
        return plot(fig), md

    def _contributions(self, session: Session, request: ContributionRequest) -> Contributions:
        """The Contributions tab's result, its contribution graphs included (drawn by the server)."""
        return contributions(get_model(session, self.ctx), request, self.ctx.max_tokens)

    def _compare_models(self, first: RunRequest, second: RunRequest) -> ModelComparison:
        """Two models on the same sentences (views.compare_models), both held in the registry while they run. The
        requests share their texts and continuation length (the first's are used)."""
        requests = (first, second)
        with models_held([r.session for r in requests], self.ctx) as models:
            sides = [SideSettings(model_name(r.session), m, r.toggles, r.view) for r, m in zip(requests, models)]
            return compare_models(sides, first.text1, first.text2, self.ctx.max_tokens, first.new_tokens)


def model_name(session: Session) -> str:
    """How a side names its model: the source as chosen, or "a built model"."""
    return session.source or f"a built {session.build.arch if session.build else ''} model".replace("  ", " ")

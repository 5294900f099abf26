"""The Gradio boundary: an endpoint's inputs as one typed form, and handlers that take it.

Gradio calls a handler with its input components' values in order and names the HTTP API's parameters after the
handler's signature. A form is a dataclass whose fields are those parameters (names, order and defaults: the
documented API, docs/http-api.md). A field named after a page setting (page.settings.SETTINGS) is that setting's
component; a field whose type is a part (`FormPart`, such as `PageView`: the sentences, masks, head switches and view
several endpoints share, or `PageText`, its sentences and masks) stands for the part's fields, in their order; any other field is the tab's own (a field of
its parts). `form_inputs` gives the components in the form's order, `endpoint` the function Gradio calls, with the
form's signature (parts flattened), from a method that takes the form. So every handler behind the boundary reads one
typed object, and a test builds the form (or the request it makes) by keywords.

    RunForm(session=s, sentence1="3 May 2024", cross_heads_on=[]).request(kinds)   # -> run.request.RunRequest
    endpoint(RunForm, PageEvents.analyze, "analyze", extra=("shown",))   # called as analyze(session, ..., seed, shown)
    form_inputs(HeadForm, page, own=parts)   # [page.session, sentence1's box, ..., parts.query, parts.lines_heads]

`RunForm` is /analyze's: the session, then every setting in table order (`run_form(table)` makes it for a table).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from .i18n.words import language
from .page.settings import REQUIRED, SETTINGS, Setting
from .run.request import RunRequest, Session, page_heads, toggles_from, whole_number
from .run.sampled import sampling_of
from .run.toggles import Toggles
from .run.view import View


class FormPart:
    """A group of form fields several forms share (a dataclass subclassing this); a form holds it as one field, the
    API sees its fields."""


@dataclass(frozen=True)
class PageText(FormPart):
    """The page's sentences and masks, as /analyze names them: the part /importance takes (every head on there)."""

    sentence1: Any
    sentence2: Any
    padding_mask: Any
    causal_mask: Any
    custom_mask: Any
    blocked_position: Any
    window: Any

    def masks(self) -> Toggles:
        """The masks alone (every head on); AppError naming a bad value."""
        return toggles_from(self.padding_mask, self.causal_mask, self.custom_mask, self.blocked_position, self.window)


@dataclass(frozen=True)
class PageView(PageText):
    """The page's sentences and masks (PageText's fields first), head switches and the head shown, as /analyze names
    them: the part /analyze, /head_computation and /compare_models share. Head switches are the labels of the heads
    on ("L0 H1")."""

    encoder_heads_on: Any
    decoder_heads_on: Any
    cross_heads_on: Any
    kind: Any
    layer: Any
    head: Any
    sentence: Any

    def heads(self, kinds: Mapping[str, Any]) -> dict[str, list[str]]:
        return page_heads(kinds, self.encoder_heads_on, self.decoder_heads_on, self.cross_heads_on)

    def toggles(self, kinds: Mapping[str, Any]) -> Toggles:
        """The masks and head switches for a model whose attention kinds are `kinds`; AppError naming a bad value."""
        return toggles_from(self.padding_mask, self.causal_mask, self.custom_mask, self.blocked_position, self.window,
                            self.heads(kinds))


@functools.cache
def parts_of(form: type) -> dict[str, type]:
    """The form's fields that are parts: field name -> the part's class."""
    hints = typing.get_type_hints(form)
    return {f.name: hints[f.name] for f in fields(form)
            if isinstance(hints.get(f.name), type) and issubclass(hints[f.name], FormPart)}


@functools.cache
def flat_fields(form: type) -> tuple[dataclasses.Field, ...]:
    """The form's fields with each part's in its place: the API's parameters, in order."""
    parts = parts_of(form)
    flat = [g for f in fields(form) for g in (fields(parts[f.name]) if f.name in parts else (f,))]
    names = [f.name for f in flat]
    if len(set(names)) != len(names):
        raise TypeError(f"{form.__name__}: a field of a part has the name of another field")
    return tuple(flat)


def form_of(form: type, *values: Any, **named: Any) -> Any:
    """The form from its API's values (positions, then names: the parts' fields flat)."""
    flat = dict(zip([f.name for f in flat_fields(form)], values))
    flat.update(named)
    parts = parts_of(form)
    given = {}
    for f in fields(form):
        if f.name in parts:
            given[f.name] = parts[f.name](**{g.name: flat.pop(g.name) for g in fields(parts[f.name]) if g.name in flat})
        elif f.name in flat:
            given[f.name] = flat.pop(f.name)
    if flat:
        raise TypeError(f"{form.__name__} has no field {', '.join(flat)}")
    return form(**given)


def flat_values(value: Any) -> dict[str, Any]:
    """A form's values by API parameter name (each part's fields in its place)."""
    parts = parts_of(type(value))
    return {g.name: getattr(getattr(value, f.name), g.name) if f.name in parts else getattr(value, f.name)
            for f in fields(value) for g in (fields(parts[f.name]) if f.name in parts else (f,))}


def replaced(value: Any, **changes: Any) -> Any:
    """`dataclasses.replace` by API parameter name: the form with those values changed, in whichever part."""
    return form_of(type(value), **{**flat_values(value), **changes})


def endpoint(form: type, method: Callable[..., Any], name: str, extra: tuple[str, ...] = ()) -> Callable[..., Any]:
    """The function Gradio calls for `method(form(...), *extra values)`: its signature is the form's fields (a part's
    flattened into its fields), then `extra` (inputs that are not API parameters, such as a gr.State), so the API's
    parameter names are the form's; a generator when `method` is one (Gradio streams its updates)."""
    flat = flat_fields(form)
    size = len(flat)

    def split(values: tuple, named: dict) -> tuple[Any, list[Any]]:
        own = {k: v for k, v in named.items() if k not in extra}
        rest = list(values[size:]) + [named[k] for k in extra if k in named]
        return form_of(form, *values[:size], **own), rest

    if inspect.isgeneratorfunction(method) or inspect.isgeneratorfunction(getattr(method, "__wrapped__", None)):
        def handler(*values: Any, **named: Any) -> Any:
            f, rest = split(values, named)
            yield from method(f, *rest)
    else:
        def handler(*values: Any, **named: Any) -> Any:
            f, rest = split(values, named)
            return method(f, *rest)
    params = [inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                default=inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default)
              for f in flat]
    params += [inspect.Parameter(k, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None) for k in extra]
    handler.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    handler.__name__ = handler.__qualname__ = name
    return handler


def form_inputs(form: type, page: Any, own: Any = None) -> list[Any]:
    """The components of the form's fields, in order: `session` is the page's session, a field of `own` (the tab's
    parts, or a mapping) the tab's own component, a setting's field its component (a part's fields are settings).
    A field that is none of these is an error when the page is built."""
    parts = parts_of(form)
    own_names = own if isinstance(own, Mapping) else vars(own) if own is not None else {}
    inputs = []
    for f in fields(form):
        if f.name == "session":
            inputs.append(page.session)
        elif f.name in parts:
            inputs += [page.setting(g.name) for g in fields(parts[f.name])]
        elif f.name in own_names:
            inputs.append(own_names[f.name])
        elif f.name in page.settings:
            inputs.append(page.settings[f.name])
        else:
            raise KeyError(f"{form.__name__}.{f.name} is neither the session, a page setting nor a part of its tab")
    return inputs


class RunFields:
    """What /analyze's form does with its values (its fields are `run_form`'s)."""

    @property
    def view(self) -> PageView:
        """The part of this Run that /head_computation and /compare_models share."""
        return PageView(**{f.name: getattr(self, f.name) for f in fields(PageView)})

    def heads(self, kinds: Mapping[str, Any]) -> dict[str, list[str]]:
        return self.view.heads(kinds)

    def request(self, session: Session, kinds: Mapping[str, Any]) -> RunRequest:
        """The typed Run of `session`'s model, whose attention kinds are `kinds`; AppError naming a value that is not
        a number."""
        s: Any = self
        view = View(str(s.kind or ""), whole_number(s.layer, 0), whole_number(s.head, 0),
                    whole_number(s.sentence, 1), whole_number(s.predict_after, -1), str(s.measure or "weights"))
        sampling = sampling_of(s.sample, s.temperature, s.top_k, s.top_p, s.seed)
        return RunRequest.of(session, s.sentence1, s.sentence2, self.view.toggles(kinds), view, s.continue_tokens,
                             sampling, language(getattr(s, "lang", None)))


@functools.cache
def run_form(table: Sequence[Setting] = SETTINGS) -> type:
    """/analyze's form for a table of settings: `session`, then each setting a Run reads (its default the API's)."""
    specs: list[Any] = [("session", Any)]
    for s in (s for s in table if s.in_run):  # the page's own (the lesson shown) are no Run's
        default = dataclasses.field() if s.default is REQUIRED else dataclasses.field(default=s.default)
        specs.append((s.name, Any, default))
    form = dataclasses.make_dataclass("RunForm", specs, bases=(RunFields,), frozen=True)
    form.__module__ = __name__
    return form


RunForm = run_form(SETTINGS)
RunForm.__doc__ = ("/analyze's parameters: the page's values of one Run, the session then every setting of the page "
                   "(page.settings.SETTINGS) in table order. Head switches are the labels of the heads on (\"L0 H1\").")

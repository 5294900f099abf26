"""The Gradio boundary: an endpoint's inputs as one typed form, and handlers that take it.

Gradio calls a handler with its input components' values in order and names the HTTP API's parameters after the
handler's signature. A form is a dataclass whose fields are those parameters (names, order and defaults: the
documented API, docs/http-api.md) and whose `inputs(...)` lists the page's components in the same order; `endpoint`
makes the function Gradio calls, with the form's signature, from a method that takes the form. So every handler
behind the boundary reads one typed object, and a test builds the form (or the request it makes) by keywords.

    RunForm(session=s, sentence1="3 May 2024", cross_heads_on=[]).request(kinds)   # -> run.request.RunRequest
    endpoint(RunForm, PageEvents.analyze, "analyze", extra=("shown",))   # called as analyze(session, ..., seed, shown)
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from .run.request import RunRequest, Session, page_heads, toggles_from, whole_number
from .run.sampled import sampling_of
from .run.view import View
from .serving.limits import DEFAULT_CONTINUATION


def endpoint(form: type, method: Callable[..., Any], name: str, extra: tuple[str, ...] = ()) -> Callable[..., Any]:
    """The function Gradio calls for `method(form(...), *extra values)`: its signature is the form's fields, then
    `extra` (inputs that are not API parameters, such as a gr.State), so the API's parameter names are the form's;
    a generator when `method` is one (Gradio streams its updates)."""
    size = len(fields(form))

    def split(values: tuple, named: dict) -> tuple[Any, list[Any]]:
        own = dict(zip([f.name for f in fields(form)], values[:size]))
        own.update({k: v for k, v in named.items() if k not in extra})
        rest = list(values[size:]) + [named[k] for k in extra if k in named]
        return form(**own), rest

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
              for f in fields(form)]
    params += [inspect.Parameter(k, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None) for k in extra]
    handler.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    handler.__name__ = handler.__qualname__ = name
    return handler


@dataclass(frozen=True)
class RunForm:
    """/analyze's parameters: the page's values of one Run. Head switches are the labels of the heads on ("L0 H1")."""

    session: Any
    sentence1: Any
    sentence2: Any
    padding_mask: Any
    causal_mask: Any
    custom_mask: Any
    blocked_position: Any
    window: Any
    encoder_heads_on: Any
    decoder_heads_on: Any
    cross_heads_on: Any
    kind: Any
    layer: Any
    head: Any
    sentence: Any
    predict_after: Any = -1
    continue_tokens: Any = DEFAULT_CONTINUATION
    tab: Any = "attention"
    measure: Any = "weights"
    sample: Any = False  # off: greedy decoding (every number as without these five)
    temperature: Any = 1.0
    top_k: Any = 0  # 0 = off
    top_p: Any = 1.0  # 1 = off
    seed: Any = 0

    SAMPLING = 5  # the last fields: how generated tokens are drawn (run.sampled)

    @staticmethod
    def inputs(page: Any) -> list[Any]:
        """The page's components, in the form's order (`page.layout.Page`)."""
        i, c = page.inputs, page.controls
        return [page.session, i.text1, i.text2, c.padding, c.causal, c.custom, c.block_token, c.window,
                *c.head_groups, c.kind, c.layer, c.head, c.sentence, c.position, c.new_tokens, page.visible_tab,
                c.measure, *c.sampling.values]

    def heads(self, kinds: Mapping[str, Any]) -> dict[str, list[str]]:
        return page_heads(kinds, self.encoder_heads_on, self.decoder_heads_on, self.cross_heads_on)

    def request(self, session: Session, kinds: Mapping[str, Any]) -> RunRequest:
        """The typed Run of `session`'s model, whose attention kinds are `kinds`; AppError naming a value that is not
        a number."""
        toggles = toggles_from(self.padding_mask, self.causal_mask, self.custom_mask, self.blocked_position,
                               self.window, self.heads(kinds))
        view = View(str(self.kind or ""), whole_number(self.layer, 0), whole_number(self.head, 0),
                    whole_number(self.sentence, 1), whole_number(self.predict_after, -1),
                    str(self.measure or "weights"))
        sampling = sampling_of(self.sample, self.temperature, self.top_k, self.top_p, self.seed)
        return RunRequest.of(session, self.sentence1, self.sentence2, toggles, view, self.continue_tokens, sampling)

"""The Circuit tab's endpoint as a typed form: /circuit's parameters in order (docs/circuit-tab.md), checked into the
plain request its computation takes (app.tabs.circuit.computation). Pure: no Gradio, no model.

    CircuitForm(session, task, pairs, method, metric, edges, held_out, generated, fresh).request() -> CircuitRequest

A task is "generated" (the shipped models' own: date-translator and date-gpt the month, induction-gpt a repeated
sequence; `generated` pairs of it) or "typed" (`pairs`: one pair a line `clean | corrupted [| answer | wrong]`, or a
CSV / JSONL file's text). `edges` 0 asks for the smallest greedy circuit keeping 0.9 of the behaviour; `held_out`
pairs are kept out of the search and checked apart. `fresh` says which half of induction-gpt's corrupted prompt is
fresh: "second" (what the last position reads changes: the query side) or "first" (the earlier copy is gone: the
previous-token head into the induction heads' keys, K-composition).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ....interpret.circuits.generated import HALVES
from ....interpret.circuits.metrics import METRICS
from ...run.request import whole_number
from ...serving.errors import AppError

TASKS = {"generated": "generated for this model", "typed": "typed or read from a file"}
METHODS = {"eap-ig": "EAP-IG (integrated gradients)", "eap": "EAP (one gradient)"}
METRIC_NAMES = {"logit_diff": "logit difference (answer − wrong)", "logprob": "answer's log-probability",
                "kl": "KL to the clean output"}
assert tuple(METRIC_NAMES) == METRICS  # the core's metrics, each named on the page
MAX_PAIRS = 64  # pairs one request takes (found and held out together): the request's time budget
MAX_TOKENS = 4096  # tokens over every pair one request takes
MAX_TEXT = 64 * 1024  # characters of typed (or read) pair text
MAX_EDGES = 100_000  # the slider's top (a model has fewer: its count is said when one asks for more)
# induction-gpt's generated task: which half of the corrupted prompt is fresh (the core's generated.HALVES)
FRESH = {"second": "the second half (the query side)", "first": "the first half (K-composition)"}
assert tuple(FRESH) == HALVES
GENERATED = (8, MAX_PAIRS, 16)  # generated pairs: least, most, default (16: the tab answers in seconds)
DEFAULT_HELD_OUT = 4


@dataclass(frozen=True)
class CircuitRequest:
    task: str  # "generated" or "typed"
    pairs: str  # the typed text ("" for a generated task)
    method: str
    metric: str
    edges: int | None  # None: the greedy circuit keeping 0.9
    held_out: int
    generated: int  # pairs of a generated task
    fresh: str = "second"  # induction-gpt's generated task: which half of the corrupted prompt is fresh


def _choice(value: Any, choices: dict[str, str], what: str, default: str) -> str:
    text = default if value is None or value == "" else str(value)
    if text not in choices:
        raise AppError(f"The {what} must be one of {', '.join(choices)}, got {text[:30]!r}.")
    return text


@dataclass(frozen=True)
class CircuitForm:
    """/circuit: the circuit of a task of prompt pairs (EAP / EAP-IG), its faithfulness and the heads it keeps."""

    session: Any
    task: Any = "generated"
    pairs: Any = ""
    method: Any = "eap-ig"
    metric: Any = "logit_diff"
    edges: Any = 0
    held_out: Any = DEFAULT_HELD_OUT
    generated: Any = GENERATED[2]
    fresh: Any = "second"
    lang: Any = "en"  # the page's language: what the tab refuses is said in it (i18n.messages)

    def request(self) -> CircuitRequest:
        """The checked request; AppError naming the value that is wrong."""
        task = _choice(self.task, TASKS, "task", "generated")
        text = "" if self.pairs is None else self.pairs
        if not isinstance(text, str):
            raise AppError(f"The pairs must be text, got {type(text).__name__}.")
        if len(text) > MAX_TEXT:
            raise AppError(f"The pairs' text has {len(text):,} characters, more than one request reads "
                           f"({MAX_TEXT:,}): use fewer or shorter pairs.")
        if task == "typed" and not text.strip():
            raise AppError("No pairs: type one pair a line (clean | corrupted | answer | wrong), read a file, or "
                           "choose the generated task.")
        edges = whole_number(self.edges, 0)
        if not 0 <= edges <= MAX_EDGES:
            raise AppError(f"The number of edges must be 0 (the smallest circuit keeping 0.9) to {MAX_EDGES:,}, "
                           f"got {edges}.")
        held = whole_number(self.held_out, DEFAULT_HELD_OUT)
        if not 0 <= held < MAX_PAIRS:
            raise AppError(f"The held-out pairs must be 0 to {MAX_PAIRS - 1}, got {held}.")
        n = whole_number(self.generated, GENERATED[2])
        if not GENERATED[0] <= n <= GENERATED[1]:
            raise AppError(f"A generated task has {GENERATED[0]} to {GENERATED[1]} pairs, got {n}.")
        return CircuitRequest(task, text if task == "typed" else "", _choice(self.method, METHODS, "method", "eap-ig"),
                              _choice(self.metric, METRIC_NAMES, "metric", "logit_diff"), edges or None, held, n,
                              _choice(self.fresh, FRESH, "fresh half", "second"))

"""The Circuit tab: which heads and MLPs, connected how, carry a behaviour over a task of prompt pairs (the core:
explorer.interpret.circuits; its computation app.tabs.circuit.computation, its words app.tabs.circuit.text, its graph
explorer.viz.circuits). Computed by its button (many forwards and backwards): the graph by layer, the faithfulness
curve, the top edges, CSV / JSON files, and "keep only this circuit", which sets the page's head switches to it and
runs the page. Named event (docs/circuit-tab.md): /circuit, its parameters the fields of `CircuitForm`.

A file of pairs is read in the browser (FILE_JS) into the pairs box, never uploaded: Gradio's upload route serves
every client and cannot be bound to one component or one size (serving.upload_guard refuses it), and the box's text
passes the same bounds as typed pairs.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from ....viz.circuits import circuit_figure, curve_figure
from ...export.download_files import DownloadFiles
from ...forms import endpoint, form_inputs
from ...link.values import choice_key, text_key, whole_key
from ...page.assets import plot
from ...page.head_switches import switch_updates
from ...serving.errors import AppError
from ...serving.handlers import PRIVATE, reporting
from ...serving.session import get_model
from ..base import LinkKey, Tab, TabEvents
from .computation import CircuitResult, circuit
from .forms import (DEFAULT_HELD_OUT, FRESH, GENERATED, MAX_EDGES, MAX_TEXT, METHODS, METRIC_NAMES, TASKS,
                    CircuitForm)
from .text import HEADERS, LINK_PAIRS, circuit_json, edge_rows, edges_csv, kept_message, link_task, summary_markdown

EDGES_SHOWN = 1000  # the edges slider's top (a bigger model's count: /circuit, or a link, takes up to MAX_EDGES)
PLACEHOLDER = ("one pair a line: clean | corrupted | answer | wrong (answer and wrong optional), e.g.\n"
               "lundi 3 mars 2025 | lundi 3 juin 2025 | 2025-03 | 2025-06")
FILE_HTML = (f'<div class="circuit-file"><label for="circuit-file-input">Or read a CSV, JSONL or text file of pairs '
             f'(read in your browser into the box above, at most {MAX_TEXT // 1024} kB): </label>'
             '<input id="circuit-file-input" type="file" accept=".csv,.jsonl,.txt,text/plain,text/csv"> '
             '<span id="circuit-file-note" role="status"></span></div>')
# The file's text goes into the pairs box as if typed (textContent for the note: a file name is never HTML).
FILE_JS = f"""(() => {{
  document.addEventListener('change', (event) => {{
    const input = event.target;
    if (!input || input.id !== 'circuit-file-input' || !input.files || !input.files[0]) return;
    const file = input.files[0], note = document.getElementById('circuit-file-note');
    const say = (text) => {{ if (note) note.textContent = text; }};
    if (file.size > {MAX_TEXT}) {{ say(file.name + ' is ' + file.size + ' bytes: at most {MAX_TEXT} are read.');
                                   input.value = ''; return; }}
    const reader = new FileReader();
    reader.onload = () => {{
      const box = document.querySelector('#circuit-pairs textarea');
      const task = document.querySelector('#circuit-task input[value="typed"]');
      if (!box) return;
      box.value = String(reader.result);
      box.dispatchEvent(new Event('input', {{bubbles: true}}));
      if (task && !task.checked) task.click();
      say(file.name + ' read: ' + box.value.split('\\n').filter((l) => l.trim()).length + ' lines.');
      input.value = '';
    }};
    reader.onerror = () => say(file.name + ' could not be read as text.');
    reader.readAsText(file);
  }});
}})();"""


@dataclass
class CircuitParts:
    task: gr.Radio
    generated: gr.Slider
    held_out: gr.Slider
    fresh: gr.Radio
    pairs: gr.Textbox
    file: gr.HTML
    method: gr.Radio
    metric: gr.Radio
    edges: gr.Slider
    run_btn: gr.Button
    summary: gr.Markdown
    keep_btn: gr.Button
    csv_file: gr.DownloadButton
    json_file: gr.DownloadButton
    graph: gr.Plot
    curve: gr.Plot
    table: gr.Dataframe
    result: gr.State  # the session's last CircuitResult: "keep only this circuit" reads it
    link_task: gr.State  # what a link carries of the task: "typed" while the pairs fit (text.link_task)
    link_pairs: gr.State  # the pairs a link carries (None: too long, or a generated task)

    def outputs(self) -> list[Any]:
        return [self.summary, self.graph, self.curve, self.table, self.csv_file, self.json_file, self.result]


def circuit_updates(parts: CircuitParts, result: CircuitResult, typed: str, files: dict[str, str]) -> dict:
    """The tab showing `result` (its files already written)."""
    score = f"{result.method.upper()} score"
    graph = circuit_figure(result.nodes, result.exact_edges, result.circuit_nodes,
                           f"The circuit: {len(result.edges):,} edges, faithfulness {result.faithfulness:.3f}",
                           score_name=score)
    curve = curve_figure(result.sizes, result.kept, result.curve, result.curve_held, len(result.edges),
                         result.faithfulness, held_value=result.held_faithfulness)
    headers, rows = edge_rows(result)
    p = parts
    return {p.summary: summary_markdown(result, typed), p.graph: plot(graph), p.curve: plot(curve),
            p.table: pd.DataFrame(rows, columns=headers),
            p.csv_file: files["csv"], p.json_file: files["json"], p.result: result}


class CircuitEvents(TabEvents):
    parts: CircuitParts

    def __init__(self, app: Any, parts: CircuitParts):
        super().__init__(app, parts)
        # the session's two files, beside the page's Download (a quarter of its budget: a circuit's CSV is small)
        self.files = DownloadFiles(max(1, self.ctx.download_disk // 4), parts.csv_file.GRADIO_CACHE)

    @reporting
    def found(self, form: CircuitForm, request: gr.Request = None) -> Iterator[dict]:
        """The circuit of the form's task: a first line while it is computed, then everything it shows."""
        r = form.request()
        what = f"{r.generated} generated pairs" if r.task == "generated" else "the typed pairs"
        yield {self.status: f"Finding the circuit of {what} ({METHODS[r.method]}): every edge scored, then the "
                            "circuit run with every other edge patched…"}
        result = self.compute.call(circuit, form.session, r)
        session = getattr(request, "session_hash", None)
        files = {kind: str(self.files.write((session, kind), f"circuit.{kind}", text))
                 for kind, text in (("csv", edges_csv(result)), ("json", circuit_json(result)))}
        self.forget_gone()
        yield {self.status: "", **circuit_updates(self.parts, result, r.pairs, files)}

    @reporting
    def keep(self, session: Any, result: Any, *heads_on: Any) -> dict:
        """The page's head switches set to the circuit: its heads on, every other head off."""
        if not isinstance(result, CircuitResult):
            raise AppError("Find a circuit first: then its heads can be kept and the others switched off.")
        kinds = get_model(session, self.ctx).config.attention_kinds()
        if {k: tuple(v) for k, v in kinds.items() if k in result.heads} != result.heads:
            raise AppError("This circuit is of another model: find the circuit of the model loaded now.")
        on = {kind: {h for h in _heads(*kinds[kind]) if h not in set(result.off.get(kind, ()))} for kind in kinds}
        return {self.status: kept_message(result), **switch_updates(self.page.heads, kinds, on, choices=False)}

    def link_of(self, task: Any, pairs: Any) -> dict:
        """What a link carries of the task now (text.link_task)."""
        carried, text = link_task(str(task or ""), pairs if isinstance(pairs, str) else "")
        return {self.parts.link_task: carried, self.parts.link_pairs: text}

    def forget_gone(self) -> None:
        """Gradio's lists of the buttons' files keep every path they were handed (for delete_cache): not the files
        this store has let go (as export.download does for the page's Download)."""
        if self.files.root is None:
            return
        root = str(self.files.root) + os.sep
        for button in (self.parts.csv_file, self.parts.json_file):
            button.temp_files.difference_update([p for p in list(button.temp_files)
                                                 if p.startswith(root) and not os.path.exists(p)])

    def session_ended(self, request: gr.Request) -> None:
        session = getattr(request, "session_hash", None)
        for kind in ("csv", "json"):
            self.files.forget((session, kind))


def with_request(fn: Callable[..., Any]) -> Callable[..., Any]:
    """An endpoint (forms.endpoint) whose last input is the event's gr.Request, which Gradio hands to a parameter
    annotated with it (not an API parameter): the method gets it after the form."""
    params = [*inspect.signature(fn).parameters.values(),
              inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                                annotation=gr.Request)]
    fn.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    fn.__annotations__ = {"request": gr.Request}
    return fn


def _heads(layers: int, heads: int) -> list[tuple[int, int]]:
    return [(la, h) for la in range(layers) for h in range(heads)]


class CircuitTab(Tab):
    id = "circuit"
    title = "Circuit"
    result = "circuit-summary"
    help = ("Which heads and MLPs, connected how, carry a behaviour over many inputs. A task is a set of prompt "
            "pairs (a clean prompt and a corrupted one of the same length, with the answer and a wrong answer); every "
            "edge between the model's parts is scored by how much patching it from the corrupted run changes the "
            "answer (EAP / EAP-IG), and the circuit keeps the strongest. Its faithfulness is what it keeps of the "
            "behaviour with every other edge patched (1 = all, 0 = none), on the pairs that found it and on held-out "
            "ones. The graph runs left to right by layer; an edge's dash and end marker say which input it feeds.")
    button = "circuit-run"
    script = FILE_JS
    link_keys = (LinkKey("ctask", "link_task", choice_key(tuple(TASKS)),
                         "the task: `generated` (the shipped models' own) or `typed` (the pairs below)"),
                 LinkKey("pairs", "link_pairs", text_key(LINK_PAIRS),
                         f"the typed pairs, one a line (written while they fit in {LINK_PAIRS:,} characters)"),
                 LinkKey("eap", "method", choice_key(tuple(METHODS)), "`eap-ig` or `eap`"),
                 LinkKey("metric", "metric", choice_key(tuple(METRIC_NAMES)), "`logit_diff`, `logprob` or `kl`"),
                 LinkKey("edges", "edges", whole_key(0, MAX_EDGES),
                         "edges in the circuit (0: the smallest keeping 0.9)"),
                 LinkKey("held", "held_out", whole_key(0, GENERATED[1] - 1), "pairs held out"),
                 LinkKey("npairs", "generated", whole_key(*GENERATED[:2]),
                         f"pairs of a generated task, {GENERATED[0]} to {GENERATED[1]}"),
                 LinkKey("fresh", "fresh", choice_key(tuple(FRESH)),
                         "induction-gpt's generated task: `second` or `first`, the half of the corrupted prompt that "
                         "is fresh"))

    def shown_for(self, info: Any) -> bool:
        return info is None or "decoder" in info.kinds  # a next-token output to read

    def layout(self, start: Any) -> CircuitParts:
        with gr.Row(equal_height=False):
            task = gr.Radio([(label, key) for key, label in TASKS.items()], value="generated", label="Task",
                            elem_id="circuit-task", min_width=260)
            generated = gr.Slider(GENERATED[0], GENERATED[1], value=GENERATED[2], step=1, label="Generated pairs",
                                  elem_id="circuit-generated", min_width=200)
            held_out = gr.Slider(0, GENERATED[1] - 1, value=DEFAULT_HELD_OUT, step=1, label="Held-out pairs",
                                 info="kept out of the search, checked apart", elem_id="circuit-held", min_width=260)
            fresh = gr.Radio([(label, key) for key, label in FRESH.items()], value="second",
                             label="induction-gpt: the corrupted prompt's fresh half", elem_id="circuit-fresh",
                             min_width=340)  # its label on one line (beside the lesson panel too)
        pairs = gr.Textbox(label="Pairs", lines=3, max_lines=12, placeholder=PLACEHOLDER, elem_id="circuit-pairs")
        file = gr.HTML(FILE_HTML, elem_id="circuit-file")
        with gr.Row(equal_height=False):
            method = gr.Radio([(label, key) for key, label in METHODS.items()], value="eap-ig", label="Method",
                              elem_id="circuit-method", min_width=200)
            metric = gr.Radio([(label, key) for key, label in METRIC_NAMES.items()], value="logit_diff",
                              label="Metric", elem_id="circuit-metric", min_width=260)
            edges = gr.Slider(0, EDGES_SHOWN, value=0, step=1, label="Edges", info="0 = the smallest keeping 0.9",
                              elem_id="circuit-edges", min_width=160)
            run_btn = gr.Button("Find the circuit", variant="primary", elem_id="circuit-run", min_width=120, scale=0)
        summary = gr.Markdown(elem_id="circuit-summary")
        with gr.Row(equal_height=True):
            keep_btn = gr.Button("Keep only this circuit", elem_id="circuit-keep", size="sm", min_width=160)
            csv_file = gr.DownloadButton("Edges (CSV)", value=None, size="sm", elem_id="circuit-csv", min_width=120)
            json_file = gr.DownloadButton("Circuit (JSON)", value=None, size="sm", elem_id="circuit-json",
                                          min_width=120)
        graph = gr.Plot(label="Circuit", show_label=False, elem_id="circuit-graph")
        curve = gr.Plot(label="Faithfulness", show_label=False, elem_id="circuit-curve")
        table = gr.Dataframe(headers=HEADERS, label="The circuit's strongest edges", interactive=False,
                             elem_id="circuit-table", max_height=360)
        return CircuitParts(task, generated, held_out, fresh, pairs, file, method, metric, edges, run_btn, summary,
                            keep_btn, csv_file, json_file, graph, curve, table, gr.State(None), gr.State("generated"),
                            gr.State(None))

    def wire(self, parts: CircuitParts, app: Any) -> Any:
        ev, page, p = CircuitEvents(app, parts), app.page, parts
        p.run_btn.click(with_request(endpoint(CircuitForm, ev.found, "circuit")), form_inputs(CircuitForm, page, own=p),
                        [app.status, *p.outputs()], api_name="circuit",
                        api_description="The circuit of a task of prompt pairs (EAP / EAP-IG): its edges, its "
                                        "faithfulness and the heads it leaves off.")
        heads = list(page.heads.values())
        app.then_analyze(p.keep_btn.click(ev.keep, [page.session, p.result, *heads], [app.status, *heads],
                                          **PRIVATE))
        for trigger in (p.task.change, p.pairs.change):
            trigger(ev.link_of, [p.task, p.pairs], [p.link_task, p.link_pairs], **PRIVATE)
        page.demo.unload(ev.session_ended)
        return ev

    def restore_link(self, parts: CircuitParts, app: Any, values: dict[str, Any]) -> tuple[dict, list[str]]:
        """A link's task and pairs go to the visible controls (the link's states follow their change)."""
        updates, notices = super().restore_link(parts, app, values)
        if "ctask" in values:
            updates[parts.task] = values["ctask"]
        if "pairs" in values:
            updates[parts.pairs] = values["pairs"]
        if "edges" in values:
            updates[parts.edges] = gr.update(value=values["edges"], maximum=max(values["edges"], EDGES_SHOWN))
        return updates, notices

    def restored(self, parts: CircuitParts) -> list[Any]:
        return [*super().restored(parts), parts.task, parts.pairs]

    def model_updates(self, parts: CircuitParts, info: Any) -> dict:
        p = parts
        return {p.summary: "", p.graph: None, p.curve: None, p.table: None, p.result: None, p.csv_file: None,
                p.json_file: None}


TAB = CircuitTab()

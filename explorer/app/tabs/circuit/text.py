"""The Circuit tab's words and files: the summary of a circuit, its top edges as a table, the CSV and JSON to
download, what "keep only this circuit" says, and whether typed pairs fit in a link. Pure: no Gradio, no model.

    summary_markdown(result) / edge_rows(result) -> (headers, rows) / edges_csv(result) / circuit_json(result)
    link_task(task, pairs) -> (the task a link carries, its pairs or None)
"""

from __future__ import annotations

import csv
import io
import json
import math
from urllib.parse import quote

from ....viz.circuits import receiver_node
from ...page.head_labels import head_label
from ...serving.errors import escape_md
from .computation import CircuitResult
from .forms import METHODS, METRIC_NAMES

TABLE_ROWS = 50  # the circuit's strongest edges in the table (the CSV holds every edge)
LINK_PAIRS = 6000  # characters of the URL-encoded pairs a link carries; longer: the generated task by name
INPUTS = {"q": "query", "k": "key", "v": "value", "in": "MLP input", "logits": "logits"}
HEADERS = ["#", "from", "into", "input", "score", "exact patch"]
TOO_LONG = ("These pairs are too long for a link: a copied link opens the generated task of this model instead (or "
            "none, for a model without one).")


def _f(value: float | None, digits: int = 3) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def link_task(task: str, pairs: str | None) -> tuple[str, str | None]:
    """What a link carries of the task: typed pairs while their URL-encoded text fits LINK_PAIRS, else the generated
    task by name (pairs None)."""
    text = pairs or ""
    if task == "typed" and text.strip() and len(quote(text, safe="")) <= LINK_PAIRS:
        return "typed", text
    return "generated", None


def summary_markdown(result: CircuitResult, typed: str = "") -> str:
    """The circuit in a few lines: task, method, its size and faithfulness (found and held out), the check of the
    scores against exact patching, the heads it leaves off, and what the graph's family does."""
    r = result
    size = (f"the {r.asked_edges:,} strongest edges asked" if r.asked_edges is not None else
            "the smallest greedy circuit keeping 0.9 of the behaviour")
    held = ("" if r.held_faithfulness is None else
            f"; on the **{r.held} held-out pairs: {_f(r.held_faithfulness)}**")
    points = (f"{r.points} integration points, the scores' sum {r.gap:.1%} from the metric's change"
              if r.method == "eap-ig" else "one gradient at the clean run")
    exact = ("" if not r.exact else
             f" The {len(r.exact)} strongest edges patched alone (each from the corrupted run, everything else clean): "
             f"rank correlation with their scores {_f(r.spearman, 2)}.")
    off = [f"{kind} {', '.join(head_label(la, h) for la, h in heads)}" for kind, heads in r.off.items() if heads]
    total = sum(la * h for la, h in r.heads.values())
    n_off = sum(len(h) for h in r.off.values())
    lines = [
        (f"**{len(r.edges):,} of {r.n_edges:,} edges** ({size}; {len(r.circuit_nodes)} nodes): faithfulness "
         f"**{_f(r.faithfulness)}** on the {r.found} pairs that found it{held}. 1 = the circuit alone (every other "
         f"edge patched from the corrupted run) gives the clean behaviour, 0 = no more than the corrupted run."),
        (f"Task: {escape_md(r.task_name)}. {METHODS[r.method]} ({points}), metric: {METRIC_NAMES[r.metric]}: "
         f"{r.clean:.3f} clean, {r.corrupted:.3f} corrupted (mean).{exact}"),
        (f"Heads in no edge of the circuit ({n_off} of {total}): {escape_md('; '.join(off)) or 'none'}. "
         "“Keep only this circuit” switches them off on the page (switched off = zeroed, which is harsher than the "
         "patching from the corrupted run that measures faithfulness)."),
    ]
    lines += [f"⚠️ {escape_md(r.notice)}"] if r.notice else []
    lines += [escape_md(note) for note in r.notes]
    if typed and link_task("typed", typed)[0] != "typed":
        lines.append(TOO_LONG)
    return "\n\n".join(lines)


def edge_rows(result: CircuitResult, limit: int = TABLE_ROWS) -> tuple[list[str], list[list]]:
    """The circuit's strongest edges: rank, upstream node, receiver, which input, score, exact patch."""
    rows = []
    for i, (up, receiver, score, exact) in enumerate(result.exact_edges[:limit], 1):
        rows.append([i, up, receiver, INPUTS[receiver_node(receiver)[1]], round(score, 5),
                     "" if exact is None else round(exact, 5)])
    return HEADERS, rows


def edges_csv(result: CircuitResult) -> str:
    """Every edge of the graph with its score, whether the circuit keeps it, and its exact patch when measured."""
    kept = {(u, r) for u, r, _ in result.edges}
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["rank", "upstream", "receiver", "input", "score", "in_circuit", "exact_patch"])
    for i, (up, receiver, score) in enumerate(result.all_edges, 1):
        exact = result.exact.get((up, receiver))
        w.writerow([i, up, receiver, INPUTS[receiver_node(receiver)[1]], repr(score), int((up, receiver) in kept),
                    "" if exact is None else repr(exact)])
    return out.getvalue()


def circuit_json(result: CircuitResult) -> str:
    """The circuit as JSON: the task, method and metric, its faithfulness, edges, nodes, heads off and the curve."""
    def number(value: float | None) -> float | None:
        return None if value is None or math.isnan(value) else value

    r = result
    data = dict(task=r.task_name, pairs_found=r.found, pairs_held_out=r.held, method=r.method, metric=r.metric,
                points=r.points, completeness_gap=r.gap, metric_clean=r.clean, metric_corrupted=r.corrupted,
                select=r.select, edges_asked=r.asked_edges, graph_edges=r.n_edges,
                faithfulness=number(r.faithfulness), held_out_faithfulness=number(r.held_faithfulness),
                spearman_exact=number(r.spearman),
                edges=[dict(upstream=u, receiver=d, score=s, exact_patch=x) for u, d, s, x in r.exact_edges],
                nodes=list(r.circuit_nodes),
                heads_off={kind: [head_label(la, h) for la, h in heads] for kind, heads in r.off.items()},
                curve=dict(edges=list(r.sizes), kept=list(r.kept), faithfulness=list(r.curve),
                           held_out=None if r.curve_held is None else list(r.curve_held)),
                notes=list(r.notes), notice=r.notice)
    return json.dumps(data, indent=1, allow_nan=False, default=str)


def kept_message(result: CircuitResult) -> str:
    """The status after "keep only this circuit"."""
    n = sum(len(h) for h in result.off.values())
    return (f"Kept only the circuit's heads: {n} head{'s' if n != 1 else ''} outside it switched off (the state line "
            "above says which); the output shows the baseline beside the circuit.")

"""What the Contributions tab shows of a `result.Contributions`: the DLA map and the token-attribution
strip, the contribution graph, the summary and completeness lines, one head's promoted and suppressed tokens, the
attribution table. Drawing only: nothing here runs the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from .... import viz
from ...page.head_labels import head_label
from ...run.view import KIND_SHORT, KIND_TITLES
from ...serving.errors import AppError, escape_md
from .result import RUN_NAMES, Contributions
from .token_attribution import METHOD_NAMES


def graph_figure(result: Contributions) -> go.Figure:
    """The contribution graph of the prediction: the baseline's, beside the toggled run's when a head is off (a route
    that disappears is the point). Edge midpoints carry [kind, layer, head, attention, share] (a click opens the
    head)."""
    baseline, toggled = result.graphs
    labels, source = result.graph_labels
    if toggled is None:
        return viz.flow_figure(baseline, labels, source, title=f"Contribution graph of {viz.escape(result.target_text)}"
                               f" (threshold {baseline.threshold:g})")
    return viz.flow_pair_figure(baseline, toggled, labels, source, titles=RUN_NAMES)


# ----------------------------------------------------------------------------------------------- drawing
def kind_title(kind: str) -> str:
    return {"decoder": "decoder self-attention heads", "encoder": "encoder self-attention heads",
            "cross": "cross-attention heads"}.get(kind, kind)


def dla_runs(result: Contributions) -> list[viz.DLARun]:
    runs = [result.baseline] if result.toggled is None else [result.baseline, result.toggled]
    names = [""] if result.toggled is None else list(RUN_NAMES)
    return [viz.DLARun(name, run.heads, run.mlps, run.embeddings, run.rest, run.logit, run.off)
            for name, run in zip(names, runs)]


def contribution_figures(result: Contributions) -> tuple[go.Figure, go.Figure]:
    """The DLA map (baseline | toggled) and the token-attribution strip."""
    dla = viz.dla_map(dla_runs(result), {k: kind_title(k) for k in result.kinds},
                      title=f"Direct logit attribution of {viz.escape(result.target_text)} "
                            f"{viz.escape(result.position_text)}")
    a = result.attribution
    strip = viz.attribution_strip(
        a.sequences, title=f"Token attribution of {viz.escape(result.target_text)} ({METHOD_NAMES[a.method]}"
                           f"{'' if a.steps == 1 else f', {a.steps} steps'}"
                           f"{', with the toggles' if a.toggled else ''})")
    return dla, strip


def summary_markdown(result: Contributions) -> str:
    b = result.baseline
    where = result.position_text[0].upper() + result.position_text[1:]
    # what was clicked, a paragraph of its own: i18n.messages reads each paragraph back
    lines = [f"**Why {escape_md(result.asked)}?**"] if result.asked else []
    lines += [f"{escape_md(where)} the model's top token is **{escape_md(result.label(b.top))}**; "
             f"attributed: **{escape_md(result.target_text)} = {b.logit:.3f}**, the sum of every part: "
             f"heads {sum(float(v.sum()) for v in b.heads.values()):+.3f}, MLPs {float(b.mlps.sum()):+.3f}, "
             f"embeddings {b.embeddings:+.3f}, biases and norms {b.rest:+.3f} (sum {b.total:.3f})."]
    if result.toggled is not None:
        t = result.toggled
        top = "" if t.top == b.top else f"; its top token is now **{escape_md(result.label(t.top))}**"
        lines.append(f"With the toggles: **{t.logit:.3f}** (heads {sum(float(v.sum()) for v in t.heads.values()):+.3f}"
                     f", MLPs {float(t.mlps.sum()):+.3f}){top}.")
    lines += [f"⚠️ {escape_md(n)}" for n in result.notices]
    return "\n\n".join(lines)


def attribution_markdown(result: Contributions) -> str:
    """The completeness line: how far the attributions' sum is from f(x) − f(baseline)."""
    a = result.attribution
    total = sum(float(v.sum()) for _, _, v in a.sequences)
    baseline = "the padding token's embedding" if a.baseline == "pad" else "the zero embedding"
    ok = "" if a.relative_delta <= 0.05 else " — more than 5%: raise the steps before trusting single numbers"
    points = "" if a.method != "integrated_gradients" else (
        f" with {a.steps} integration points" + (" (chosen until within 2%)" if a.adaptive else ""))
    return (f"Completeness{points}: the attributions add up to **{total:+.3f}**; f(input) − f(baseline) = "
            f"{a.logit:.3f} − {a.baseline_logit:.3f} = {a.logit - a.baseline_logit:+.3f} (baseline: {baseline}); "
            f"delta **{a.delta:+.4f}** ({100 * a.relative_delta:.1f}% of the change){ok}.")


@dataclass(frozen=True)
class HeadCell:
    """A head clicked in the map or the graph: the page script writes "kind|layer|head|stamp" (the tab's SCRIPT)."""

    kind: str
    layer: int
    head: int

    @classmethod
    def parse(cls, text: str) -> "HeadCell":
        """ValueError for anything else (an MLP cell, a message the script does not write)."""
        parts = text.split("|")
        if len(parts) not in (3, 4) or parts[0] not in KIND_TITLES or not (parts[1].isdigit() and parts[2].isdigit()):
            raise ValueError(f"not a clicked head: {text[:40]!r}")
        return cls(parts[0], int(parts[1]), int(parts[2]))


def is_click(choice: str | None) -> bool:
    """Whether a head choice is a clicked cell's message (`HeadCell`) rather than a head picker value."""
    return "|" in (choice or "")


def parse_head(result: Contributions, choice: str | None) -> tuple[str, int, int] | None:
    """A head picker value ("L1 H0", "cross L1 H0") or a clicked cell's message (`HeadCell`) -> (kind, layer, head);
    None for anything else (an MLP cell)."""
    text = (choice or "").strip()
    if is_click(text):
        try:
            cell = HeadCell.parse(text)
        except ValueError:
            return None
        kind, layer, head = cell.kind, cell.layer, cell.head
    else:
        kind = "cross" if text.startswith("cross ") else result.kinds[0]
        words = text.removeprefix("cross ").split()
        if len(words) != 2 or not (words[0][1:].isdigit() and words[1][1:].isdigit()):
            return None
        layer, head = int(words[0][1:]), int(words[1][1:])
    if kind not in result.kinds:
        return None
    L, H = result.baseline.heads[kind].shape
    return (kind, layer, head) if 0 <= layer < L and 0 <= head < H else None


HEAD_HEADERS = ["run", "rank", "promotes", "its logit share", "suppresses", "its logit share (−)"]  # unique names


def head_table(result: Contributions, choice: str | None) -> tuple[str, list[str], list[list[Any]], str]:
    """(the head's picker value, headers, rows, a one-line Markdown) for a head: its k most promoted and suppressed
    tokens at the position (tokens as text), per run."""
    head = parse_head(result, choice)
    if head is None:
        raise AppError(f"{str(choice)[:30]!r} is not a head of this model (e.g. 'L1 H0', or 'cross L1 H0').")
    kind, layer, h = head
    name = ("cross " if kind == "cross" else "") + head_label(layer, h)
    runs = [("baseline", result.baseline)] + ([("toggled", result.toggled)] if result.toggled is not None else [])
    rows: list[list[Any]] = []
    off = False
    for run_name, run in runs:
        if run.off is not None and bool(run.off[kind][layer, h]):
            off = True
            continue
        (pid, pv), (sid, sv) = run.promoted[kind], run.suppressed[kind]
        for r in range(pid.shape[-1]):
            rows.append([run_name, r + 1, result.label(pid[layer, h, r]), round(float(pv[layer, h, r]), 4),
                         result.label(sid[layer, h, r]), round(float(sv[layer, h, r]), 4)])
    share = float(result.baseline.heads[kind][layer, h])
    md = (f"**{KIND_SHORT[kind]} {head_label(layer, h)}** writes {share:+.3f} of {escape_md(result.target_text)} "
          f"(baseline). The tokens its output raises and lowers most at this position:")
    if off:
        md += " (switched off in the toggled run: it writes nothing there)"
    return name, HEAD_HEADERS, rows, md


def attribution_table(result: Contributions) -> tuple[list[str], list[list[Any]]]:
    """(headers, rows): each attributed token, its attribution and its signed share of the total |attribution|."""
    a = result.attribution
    scale = sum(float(np.abs(v).sum()) for _, _, v in a.sequences) or 1.0
    several = len(a.sequences) > 1
    headers = (["sequence"] if several else []) + ["position", "token", "attribution", "share"]
    rows = []
    for name, labels, values in a.sequences:
        for t, (label, v) in enumerate(zip(labels, values.tolist())):
            rows.append(([name] if several else []) + [t, label, round(v, 4), f"{100 * v / scale:+.1f}%"])
    return headers, rows

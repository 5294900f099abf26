"""A figure's text alternative, made from the figure's own data: what it shows, its strongest cells (or bars,
or points) in words, and its numbers as tables (for a screen reader, and for anyone who wants the numbers).

    alt = describe(fig)     # Alt(text, tables): plain text, never HTML (token text stays as typed)
    alt.as_dict()           # what the page script puts beside the plot (explorer.app.page.figure_alt)

One entry per kind of trace the figures draw (`DESCRIBERS`: heatmap, bar, scatter), dispatched from the figure's
data, so every figure of `explorer.viz` (the attention heatmaps and the overview grid, positions, the mask, the
output bars, lens, contributions, patching, importance, features, circuit, compare, rollout, roles, inside a head)
gets one without code per tab. Shapes: a heatmap's z (R, C) on y (R,) and x (C,) names; a bar's or scatter's
x, y (N,). Values come back from `encode`'s forms: exact float32, or integer percent codes of the trace's
`meta["unit"]`. A signed value is written with its sign (+ / −), so the sign never rests on colour alone.

The figures' names are escaped for Plotly's pseudo-HTML (common.escape); here they are unescaped back to the
token's own text, which the page inserts as text (textContent), never as HTML.

English sentences are made here and only here, through plain string formatting; a page in another language says
each part (`Alt.parts`) through the catalogue's English texts of them (explorer/app/i18n/<lang>.figures.toml and
<lang>.alt.toml). A point figure's points are named from the data its traces carry (describe_points: never from a
hover text), a count takes the singular for one ("1 point", describe_points.counted), and a table says which headers
are words and which columns numbers (`Table.said`, `Table.numeric`: explorer.app.page.figure_alt.alt_tables_in).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .describe_points import counted, point_words

TOP = 3  # strongest cells, bars or points named in the text
TABLE_CELLS = 32 * 32  # a heatmap this small is tabled whole; a larger one as its TOP_ROWS strongest cells
TOP_ROWS = 20
MAX_ROWS = 100  # rows of a bar or scatter table
MAX_TRACES = 4  # traces of one figure described (subplots: a panel each)
MINUS = "\u2212"
_TAG = re.compile(r"<[^>]*>")
GAP = "\u200b"  # a name starting with a zero-width space is a gap between tiles (viz.overview), not a cell


@dataclass(frozen=True)
class Table:
    """Numbers of one part of a figure: a caption, column names, rows of text (the first cell heads its row).
    `said`: per column, whether its header is words (said in the page's language; else a token, as it is);
    `numeric`: per column, whether its cells are numbers (written the language's way)."""

    caption: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""
    said: list[bool] = field(default_factory=list)
    numeric: list[bool] = field(default_factory=list)


@dataclass(frozen=True)
class Alt:
    """A figure's text alternative: `text` (a few sentences) and its `tables`."""

    text: str
    tables: list[Table] = field(default_factory=list)
    # the text's parts, so that a page in another language says each on its own (app.i18n.result_words): the
    # title, each described trace's sentence, the notes
    parts: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        # "switch": the word on the page script's switch that opens the tables (page.figure_alt)
        return {"text": self.text, "tables": [asdict(t) for t in self.tables], "parts": self.parts, "switch": "Table"}


def plain(text: Any) -> str:
    """Plotly pseudo-HTML -> the text it shows: tags dropped, entities back to characters."""
    return html.unescape(_TAG.sub(" ", str(text if text is not None else ""))).replace("\u00a0", " ").strip()


def number(v: float, signed: bool = False) -> str:
    """A value in 3 significant digits; with + or − when `signed` (Unicode minus, as the figures write it)."""
    if not np.isfinite(v):
        return "none"
    text = f"{v:+.3g}" if signed else f"{v:.3g}"
    return text.replace("-", MINUS)


def _title(obj: Any) -> str:
    if isinstance(obj, dict):
        obj = obj.get("text")
    return plain(obj)


def _title_drawn(obj: Any) -> Any:
    return (obj.get("text") if isinstance(obj, dict) else obj) or ""


def _axis_title(layout: dict[str, Any], ref: str | None, letter: str) -> str:
    """The title of the trace's x or y axis ("x2" -> layout["xaxis2"])."""
    key = f"{letter}axis" + (ref[1:] if ref and len(ref) > 1 else "")
    return _title((layout.get(key) or {}).get("title"))


def _names(values: Any, n: int) -> list[str]:
    if values is None:
        return [str(i) for i in range(n)]
    return [plain(v) if isinstance(v, str) else str(v) for v in list(values)[:n]]


def _cut(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _quote(name: str) -> str:
    return f"\u2018{name}\u2019"


def heatmap_values(trace: dict[str, Any]) -> np.ndarray:
    """A heatmap trace's values (R, C) as float32: customdata when it holds the raw values of z's shape (a map
    scaled for its colours), z's percent codes times `meta["unit"]` / 100, or z itself."""
    if trace.get("z") is None:
        return np.zeros((0, 0), dtype=np.float32)
    z = np.asarray(trace["z"])
    custom = np.asarray(trace["customdata"]) if trace.get("customdata") is not None else None
    if custom is not None and custom.shape == z.shape and np.issubdtype(custom.dtype, np.number):
        return custom.astype(np.float32)
    values = np.asarray(z, dtype=np.float32)
    unit = trace["meta"].get("unit") if isinstance(trace.get("meta"), dict) else None
    if unit is not None and np.issubdtype(z.dtype, np.integer):
        values = values * np.float32(float(unit) / 100.0)
    return values


def _bar_title(trace: dict[str, Any]) -> str:
    """The title of a trace's colour bar (its own, or its marker's: a trace that carries only the bar)."""
    for bar in (trace.get("colorbar"), (trace.get("marker") or {}).get("colorbar")):
        if isinstance(bar, dict) and bar.get("title"):
            return _title(bar["title"])
    return ""


def _strongest(v: np.ndarray, ok: np.ndarray, signed: bool, ys: list[str], xs: list[str]
               ) -> list[tuple[str, str, float]]:
    """The TOP_ROWS largest cells (by size when signed), largest first, as (row name, column name, value). Only cells
    at least the TOP_ROWS-th largest row maximum can be among them: argpartition over every cell was slow on ties
    (a masked head's zeros), 16 ms at 1,024 x 1,024."""
    size = np.where(ok, np.abs(v) if signed else v, np.float32(-np.inf))
    row_max = size.max(axis=1)
    k = min(TOP_ROWS, row_max.size)
    floor = np.partition(row_max, -k)[-k]
    ii, jj = np.nonzero(size >= floor)
    order = np.argsort(-size[ii, jj], kind="stable")[:TOP_ROWS]
    return [(ys[i], xs[j], float(v[i, j])) for i, j in zip(ii[order], jj[order]) if ok[i, j]]


def _heatmap(trace: dict[str, Any], layout: dict[str, Any]) -> tuple[str, Table]:
    v = heatmap_values(trace)
    if v.ndim != 2 or not v.size:
        return "", Table("", [], [])
    ys, xs = _names(trace.get("y"), v.shape[0]), _names(trace.get("x"), v.shape[1])
    rows = np.array([not y.startswith(GAP) for y in ys])
    cols = np.array([not x.startswith(GAP) for x in xs])
    if not (rows.all() and cols.all()):
        v = np.where(rows[:, None] & cols[None, :], v, np.float32(np.nan))  # gaps between tiles hold no value
    ok = np.isfinite(v)
    n_ok = int(ok.sum())
    if not n_ok:
        return "", Table("", [], [])
    lo, hi = float(np.nanmin(v)), float(np.nanmax(v))
    signed = lo < 0
    y_title, x_title = _axis_title(layout, trace.get("yaxis"), "y"), _axis_title(layout, trace.get("xaxis"), "x")
    name = plain(_bar_title(trace) or layout.get("_bar_title") or trace.get("name") or "value")
    # a mask: 0 and 1 only (which cells are 1 says more than a list of equal "strongest" ones)
    binary = lo in (0.0, 1.0) and hi in (0.0, 1.0) and not np.count_nonzero((v > 0) & (v < 1))
    cells = [] if binary else _strongest(v, ok, signed, ys, xs)
    if binary:
        said = [f"Cells that are 1: {int(np.nansum(v))} of {n_ok}; the others are 0"]  # no verb to agree with a count
    elif "key" in x_title.lower() and name != "mask":
        said = [f"{_quote(y)} attends most to {_quote(x)}, {number(val, signed)}" for y, x, val in cells[:TOP]]
    else:
        said = [f"{_quote(y)} at {_quote(x)}, {number(val, signed)}" for y, x, val in cells[:TOP]]
    n_rows, n_cols = int(rows.sum()), int(cols.sum())
    text = (f"{name}: {counted(n_rows, 'row')}{f' ({y_title})' if y_title else ''} by {counted(n_cols, 'column')}"
            f"{f' ({x_title})' if x_title else ''}, from {number(lo, signed)} to {number(hi, signed)}. "
            + ("" if binary else "Largest in size: " if signed else "Strongest: ") + "; ".join(said) + ".")
    if v.size <= TABLE_CELLS and rows.all() and cols.all():
        table = Table(f"{name}, every cell (rows: {y_title or 'rows'}; columns: {x_title or 'columns'})",
                      [y_title or "row", *xs], [[y, *(number(float(x), signed) for x in r)] for y, r in zip(ys, v)],
                      said=[True] + [False] * len(xs), numeric=[False] + [True] * len(xs))
    elif binary:  # a large mask: how many cells of each row are 1
        counts = [[y, str(int(n))] for y, n, keep in zip(ys, np.nansum(v, axis=1), rows) if keep]
        first = f"the first {MAX_ROWS} of {len(counts):,} rows" if len(counts) > MAX_ROWS else ""
        table = Table(f"{name}: cells that are 1, per row", [y_title or "row", "cells that are 1"],
                      counts[:MAX_ROWS], first, [True, True], [False, True])
    else:
        table = Table(f"{name}: the {len(cells)} strongest cells", [y_title or "row", x_title or "column", name],
                      [[y, x, number(val, signed)] for y, x, val in cells],
                      f"{n_rows * n_cols:,} cells in all; the figure's hover names each one", [True] * 3,
                      [False, False, True])
    return text, table


def _bar(trace: dict[str, Any], layout: dict[str, Any]) -> tuple[str, Table]:
    horizontal = trace.get("orientation") == "h"
    values = np.asarray(trace.get("x" if horizontal else "y"), dtype=np.float64).reshape(-1)
    labels = _names(trace.get("y" if horizontal else "x"), values.size)
    if not values.size:
        return "", Table("", [], [])
    signed = bool(np.nanmin(values) < 0)
    label_title = _axis_title(layout, trace.get("yaxis" if horizontal else "xaxis"), "y" if horizontal else "x")
    value_title = _axis_title(layout, trace.get("xaxis" if horizontal else "yaxis"), "x" if horizontal else "y")
    name = plain(trace.get("name") or value_title or "value")
    size = np.where(np.isfinite(values), np.abs(values) if signed else values, -np.inf)
    order = np.argsort(-size, kind="stable")
    top = [f"{_quote(labels[i])} {number(values[i], signed)}" for i in order[:TOP] if np.isfinite(values[i])]
    text = f"{name}: {counted(values.size, 'bar')} ({label_title or 'labels'})"
    text += f"; largest: {'; '.join(top)}." if top else "."
    rows = [[labels[i], number(values[i], signed)] for i in range(min(values.size, MAX_ROWS))]
    note = f"the first {MAX_ROWS} of {values.size:,} bars" if values.size > MAX_ROWS else ""
    return text, Table(name, [label_title or "label", value_title or name], rows, note, [True, True], [False, True])


def _cell(v: Any) -> str:
    return number(float(v)) if isinstance(v, (int, float, np.number)) else plain(v)


def _scatter(trace: dict[str, Any], layout: dict[str, Any]) -> tuple[str, Table]:
    x, y = (list(trace.get(k)) if trace.get(k) is not None else [] for k in ("x", "y"))
    points = [(a, b, i) for i, (a, b) in enumerate(zip(x, y)) if a is not None and b is not None]
    if not points:
        return "", Table("", [], [])
    named = point_words(trace, plain)  # words made from the trace's data (its meta), never from its hover text
    texts = trace.get("text") if named is None else None
    texts = [_cut(plain(t)) for t in texts] if isinstance(texts, (list, tuple, np.ndarray)) else []
    name = plain(trace.get("name") or "points")
    x_title, y_title = _axis_title(layout, trace.get("xaxis"), "x"), _axis_title(layout, trace.get("yaxis"), "y")
    numeric = all(isinstance(b, (int, float, np.number)) for _, b, _ in points)
    many = counted(len(points), "point")
    note = f"the first {MAX_ROWS} of {len(points):,} points" if len(points) > MAX_ROWS else ""
    if named is not None:
        said = "; ".join(words for _, words in named[:TOP * 2])
        text = f"{name}: {many}" + (f", among them {said}." if said else ".")
        by = trace["meta"].get("points_by")
        if by:  # the points named by their words, the largest first, with the value they are ranked by
            rows = [[words, number(float(trace["meta"]["points"][i][by]))] for i, words in named[:MAX_ROWS]]
            return text, Table(name, ["what", by], rows, note, [True, True], [False, True])
        texts = [words for _, words in sorted(named)]
    elif texts:
        said = ", ".join(texts[i] for _, _, i in points[:TOP * 2] if i < len(texts))
        text = f"{name}: {many}" + (f", among them {said}." if said else ".")
    elif numeric:
        ys = np.array([float(b) for _, b, _ in points])
        hi, lo = int(np.nanargmax(ys)), int(np.nanargmin(ys))
        signed = bool(np.nanmin(ys) < 0)
        text = (f"{name}: {many} along {x_title or 'x'}; highest {number(ys[hi], signed)} at "
                f"{plain(points[hi][0])}, lowest {number(ys[lo], signed)} at {plain(points[lo][0])}.")
    else:
        text = f"{name}: {many}."
    rows = [[_cell(a), _cell(b), *([texts[i]] if texts and i < len(texts) else ([""] if texts else []))]
            for a, b, i in points[:MAX_ROWS]]
    kinds = [all(isinstance(p[k], (int, float, np.number)) for p in points) for k in (0, 1)]
    return text, Table(name, [x_title or "x", y_title or "y", *(["what"] if texts else [])], rows, note,
                       [True] * (3 if texts else 2), [*kinds, *([False] if texts else [])])


DESCRIBERS: dict[str, Callable[[dict[str, Any], dict[str, Any]], tuple[str, Table]]] = {
    "heatmap": _heatmap,
    "bar": _bar,
    "scatter": _scatter,
    "scattergl": _scatter,
}


def _traces(fig: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    if isinstance(fig, dict):
        return list(fig.get("data") or []), dict(fig.get("layout") or {})
    return list(fig._data), dict(fig._layout)  # the figure's own dicts: no validation, no copy


def describe(fig: Any) -> Alt:
    """The text alternative of a Plotly figure (a go.Figure or its dict): its title, each described trace's
    sentence (at most MAX_TRACES), its notes (annotations), and a table per described trace."""
    data, layout = _traces(fig)
    bars = [_bar_title(t) for t in data] + [_bar_title(layout.get("coloraxis") or {})]
    layout["_bar_title"] = next((b for b in bars if b), "")  # a copy of the layout's top level: fig is unchanged
    title = _title(layout.get("title"))
    sentences: list[str] = []
    tables: list[Table] = []
    for trace in data:
        describer = DESCRIBERS.get(trace.get("type", "scatter"))
        if describer is None or trace.get("hoverinfo") == "skip" or len(tables) >= MAX_TRACES:
            continue  # covers, colour-bar carriers and marks drawn over the data say nothing of their own
        text, table = describer(trace, layout)
        if text:
            sentences.append(text)
            tables.append(table)
    drawn = [str(a.get("text")) for a in layout.get("annotations") or () if isinstance(a, dict)]
    drawn = [n for n in drawn if len(plain(n)) > 3][:4]
    notes = [plain(n) for n in drawn]
    # the title and notes as drawn (their <br>s: the catalogue's English), said in words after translation
    said = {"title": str(_title_drawn(layout.get("title"))), "sentences": sentences, "notes": drawn}
    if not sentences and notes:  # a message figure: why there is nothing to show
        return Alt(" ".join(filter(None, [title, *notes])), parts=said)
    parts = [f"{title}." if title and not title.endswith(".") else title, *sentences]
    if notes:
        parts.append("Notes: " + "; ".join(notes).rstrip(".") + ".")  # a note's own full stop ends the list
    return Alt(" ".join(p for p in parts if p), tables, said)

"""A view to keep: the shown tab as one self-contained interactive HTML file (no network needed to open it).

The file holds plotly.js once (the installed plotly's bundle, `plotly.offline.get_plotlyjs`), then each figure as
JSON in a `<script type="application/json">` (HTML-safe: "<" and ">" escaped, explorer.viz.serialize.html_safe)
drawn by one small script, the settings as escaped text (model, sentences, the state line, the output), the tab's
tables and the link that reopens the view in the app. Nothing typed by the person reaches the file as HTML: every
text and table cell goes through `html.escape`, every figure through JSON. Pure: no Gradio, no model
(explorer.app.export.download gathers the view).
"""

from __future__ import annotations

import functools
import html
import json
import re
from dataclasses import dataclass, field

from ...viz.serialize import html_safe
from ..i18n import words

PAGE_CSS = """body{font-family:system-ui,sans-serif;margin:1.5rem;color:#111}h1{font-size:1.3rem;margin:0 0 .5rem}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem .8rem;margin:0 0 1rem}dt{font-weight:600}
dd{margin:0;white-space:pre-wrap;word-break:break-word}.text{white-space:pre-wrap;margin:.5rem 0}
.figure{width:100%;min-height:320px;margin:.5rem 0 1.5rem}code{word-break:break-all}
table{border-collapse:collapse;margin:.5rem 0 1.5rem;font-size:.9rem}caption{text-align:left;font-weight:600}
th,td{border:1px solid #ccc;padding:.15rem .4rem;text-align:left}.fig-alt{margin:-1rem 0 1.5rem;font-size:.9rem}"""
DRAW_JS = """document.querySelectorAll('script.figure-data').forEach(function (s) {
  var f = JSON.parse(s.textContent);
  Plotly.newPlot(s.previousElementSibling, f.data, f.layout, Object.assign({responsive: true}, f.config || {}));
});"""


@dataclass(frozen=True)
class Table:
    """A table the tab shows: its title, its column headers and its rows (each cell written as text)."""

    title: str
    headers: list[str]
    rows: list[list[object]]


@dataclass(frozen=True)
class ViewExport:
    """What the file shows: the tab's title, its figures (each figure's JSON: {"data", "layout"[, "config"]}), the
    settings as (name, plain text) pairs, the tab's own texts (plain text, shown as it is), the link and its
    tables."""

    tab_title: str
    figures: list[str]
    settings: list[tuple[str, str]]
    link: str
    texts: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    lang: str = "en"  # the language of the file's own words (the page's Run's: its `lang`)


def table_html(table: Table) -> str:
    """One table, every header and cell escaped (token text never becomes markup)."""
    e = html.escape
    head = "".join(f"<th>{e(str(h))}</th>" for h in table.headers)
    body = "".join("<tr>" + "".join(f"<td>{e('' if c is None else str(c))}</td>" for c in row) + "</tr>"
                   for row in table.rows)
    return f"<table><caption>{e(table.title)}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


@functools.cache
def plotly_js() -> str:
    """The installed plotly's plotly.js bundle (minified; read once)."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def figure_text(figure_json: str) -> str:
    """A figure's JSON, checked and made HTML-safe (a plot's JSON from the page is parsed again: never raw HTML)."""
    spec = json.loads(figure_json)
    if not isinstance(spec, dict) or not isinstance(spec.get("data"), list):
        raise ValueError("a figure's JSON must be an object with a 'data' list")
    return html_safe(json.dumps(spec, separators=(",", ":"), ensure_ascii=False))


def alt_html(figure_json: str) -> str:
    """A figure's words and tables (its layout's meta.alt: explorer.viz.describe) as escaped HTML: a <details>
    whose summary says what the figure shows, opening its numbers; "" for a figure without them."""
    meta = json.loads(figure_json).get("layout", {}).get("meta")
    alt = meta.get("alt") if isinstance(meta, dict) else None
    if not isinstance(alt, dict) or not alt.get("text"):
        return ""
    tables = "".join(table_html(Table(t["caption"], t["columns"], t["rows"])) for t in alt.get("tables") or ())
    return f'<details class="fig-alt"><summary>{html.escape(str(alt["text"]))}</summary>{tables}</details>'


def view_html(view: ViewExport, script: str | None = None) -> str:
    """The whole file. `script`: plotly.js (default: the installed plotly's bundle, inlined once)."""
    e = html.escape
    rows = "".join(f"<dt>{e(name)}</dt><dd>{e(value)}</dd>" for name, value in view.settings)
    link = e(view.link)
    texts = "".join(f'<div class="text">{e(t)}</div>' for t in view.texts if t.strip())
    tables = "".join(table_html(t) for t in view.tables if t.rows)
    figures = "".join(f'<div class="figure" id="figure-{n}"></div>'
                      f'<script type="application/json" class="figure-data">{figure_text(f)}</script>{alt_html(f)}'
                      for n, f in enumerate(view.figures))
    js = (script if script is not None else plotly_js()).replace("</script", "<\\/script")
    return (f'<!DOCTYPE html>\n<html lang="{e(view.lang)}"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>Transformer Explorer: {e(view.tab_title)}</title><style>{PAGE_CSS}</style>"
            f"<script>{js}</script></head><body>"
            f"<h1>Transformer Explorer: {e(view.tab_title)}</h1>"
            f'<dl id="settings">{rows}<dt>{e(words.t("download.link", view.lang))}</dt><dd><a id="view-link" href="{link}">{link}</a></dd></dl>'
            f'<section id="texts">{texts}</section><section id="tables">{tables}</section>'
            f'<section id="figures">{figures}</section>'
            f"<script>{DRAW_JS}</script></body></html>\n")


def file_name(tab_id: str, stamp: str) -> str:
    """A safe file name from a tab id and a time stamp (letters, digits and dashes only; no text typed by anyone)."""
    clean = re.sub(r"[^a-z0-9]+", "-", f"transformer-explorer-{tab_id}-{stamp}".lower()).strip("-")
    return clean[:100] + ".html"

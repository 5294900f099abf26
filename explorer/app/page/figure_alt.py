"""Figures a screen reader can read, and the page's announcements.

Every figure the page gets through `assets.plot` carries its text alternative (explorer.viz.describe) in its layout's
meta ("alt": text and tables). The page script here puts it under the plot as one <details>: its <summary> (a
keyboard stop, read by a screen reader) says in words what the figure shows and its strongest cells; opening it (the
"table" switch: Enter or a click) shows the numbers as tables, built then. Everything is inserted as text
(textContent), never as HTML, so a token such as "<b>" reads as typed. The plot itself points at the words
(aria-describedby). In another language, `alt_tables_in` says a table's header words, its numbers (decimal comma)
and its points' words (i18n.result_words calls it with the figure's other words).

The status line, the state line and the notices are live regions (role=status, polite): a screen reader says their
new text after a Run or a link. The Run's timer, Gradio's progress tracker inside the status line, is kept out of the
region (aria-hidden), or each tick would be read.
"""

from __future__ import annotations

import functools
from typing import Any

from ..i18n.messages import message_in
from ..i18n.words import ENGLISH, catalogue, decimal_point, language, t

ALT_CLASS = "fig-alt"
LIVE_IDS = ("status", "state-line", "link-notice", "why-same")  # the page's lines that change after a Run or a link

FIGURE_ALT_JS = """
const ALT = 'ALT_CLASS';
let altCount = 0;
const altKey = (alt) => alt.text + '|' + (alt.tables || []).map(t => t.rows.length).join(',');
const cell = (tag, text, scope) => {
  const el = document.createElement(tag);
  el.textContent = text;
  if (scope) el.scope = scope;
  return el;
};
const altTable = (t) => {
  const wrap = document.createElement('div');
  wrap.className = ALT + '-wrap';
  // it scrolls (a wide or long table): a keyboard stop of its own, named by its caption
  wrap.tabIndex = 0;
  wrap.setAttribute('role', 'region');
  wrap.setAttribute('aria-label', t.caption);
  const table = document.createElement('table');
  table.append(cell('caption', t.caption));
  const head = document.createElement('tr');
  t.columns.forEach((c) => head.append(cell('th', c, 'col')));
  table.append(document.createElement('thead'));
  table.tHead.append(head);
  const body = document.createElement('tbody');
  for (const row of t.rows) {
    const tr = document.createElement('tr');
    row.forEach((c, i) => tr.append(cell(i === 0 ? 'th' : 'td', c, i === 0 ? 'row' : '')));
    body.append(tr);
  }
  table.append(body);
  wrap.append(table);
  if (t.note) wrap.append(cell('p', t.note));
  return wrap;
};
const altFill = (gd) => {
  const alt = gd.layout && gd.layout.meta && gd.layout.meta.alt;
  const block = gd.closest('.block') || gd.parentElement;
  if (!block) return;
  let box = block.querySelector(':scope > .' + ALT);
  const key = alt ? altKey(alt) : null;
  if (box && box.__altKey === key) return;
  if (box) box.remove();
  if (!alt) return;
  // With numbers: a <details> whose <summary> (a keyboard stop) says the words and opens the tables. Without (a
  // figure that only says why it is empty): the words in a paragraph.
  const tables = alt.tables || [];
  box = document.createElement(tables.length ? 'details' : 'p');
  box.className = ALT;
  box.__altKey = key;
  const words = tables.length ? document.createElement('summary') : box;
  words.id = 'fig-alt-' + (++altCount);
  if (tables.length) {
    const table = cell('span', alt.switch || 'Table', '');  // its word in the page's language (i18n.result_words)
    table.className = ALT + '-switch';
    const body = document.createElement('div');
    // the tables are built when first opened: a closed <details> shows nothing, and a page's figures hold thousands
    // of cells (about 8,000 elements over every tab) that every change of the page would otherwise carry
    box.addEventListener('toggle', () => {
      if (box.open && !body.childElementCount) body.append(...tables.map(altTable));
    });
    box.append(words, body);
    words.append(table, ' ');
  }
  words.append(alt.text);
  block.append(box);
  gd.setAttribute('aria-describedby', words.id);
};
const altLive = () => {
  for (const id of LIVE_IDS) {
    const el = document.getElementById(id);
    if (el && el.getAttribute('role') !== 'status') {
      el.setAttribute('role', 'status');
      el.setAttribute('aria-live', 'polite');
    }
    if (el) el.querySelectorAll('[data-testid="status-tracker"]:not([aria-hidden])')
      .forEach((t) => t.setAttribute('aria-hidden', 'true'));
  }
};
let altQueued = false;
const altAll = () => {
  altQueued = false;
  document.querySelectorAll('.js-plotly-plot').forEach(altFill);
  altLive();
};
// Gradio draws a new figure into the same plot element: every change of the page is checked, once a frame.
new MutationObserver(() => {
  if (!altQueued) { altQueued = true; requestAnimationFrame(altAll); }
}).observe(document.body, {childList: true, subtree: true});
altAll();
"""

FIGURE_ALT_CSS = """
details.fig-alt, p.fig-alt {margin: 4px 0 0 0; font-size: 12px; color: #333; line-height: 1.4}
details.fig-alt > summary {cursor: pointer; padding: 2px 4px}
details.fig-alt > summary:focus-visible {outline: 2px solid #1d4ed8; outline-offset: 1px}
.fig-alt-switch {display: inline-block; border: 1px solid #555; border-radius: 3px; padding: 0 4px; font-weight: 600}
.fig-alt-wrap {overflow-x: auto; max-height: 420px; overflow-y: auto; margin: 4px 0}
.fig-alt-wrap table {border-collapse: collapse; font-size: 12px}
.fig-alt-wrap caption {text-align: left; font-weight: 600; padding: 2px 0}
.fig-alt-wrap th, .fig-alt-wrap td {border: 1px solid #bbb; padding: 1px 4px; text-align: right; white-space: pre}
.fig-alt-wrap th[scope="row"], .fig-alt-wrap thead th {text-align: left; background: #f3f4f6}
.fig-alt-wrap p {margin: 2px 0; color: #333}
"""


def figure_alt_js() -> str:
    """The page script's part for the figures' words and the live regions (assets.page_js)."""
    import json

    return (FIGURE_ALT_JS.replace("'ALT_CLASS'", json.dumps(ALT_CLASS))
            .replace("LIVE_IDS", json.dumps(list(LIVE_IDS))))


def alt_of(fig: Any) -> dict[str, Any]:
    """A figure's text alternative as the page script reads it (explorer.viz.describe)."""
    from ...viz.describe import describe

    return describe(fig).as_dict()


@functools.cache
def _header_keys() -> dict[str, str]:
    """A table's English header that is no axis's title ("row", "what", [alt_table]; "share", [column]) -> its key."""
    return {text: key for key, text in catalogue(ENGLISH).items() if key.startswith(("alt_table.", "column."))}


def header_in(header: str, lang: str) -> str:
    """A text alternative's table header in `lang`: a fallback word or a table's word by its key, an axis title read
    back as the figure's other words are."""
    key = _header_keys().get(header)
    return t(key, lang) if key else message_in(header, lang)


def alt_tables_in(tables: list[Any], lang: Any) -> list[Any]:
    """A text alternative's tables (viz.describe.Table as JSON) in `lang`: the headers that are words (`said`), the
    numbers of its `numeric` columns with the language's decimal sign, a point's words ("what") read back; tokens and
    a row's name as they are. Its caption and note are read back with the figure's words (result_words.words_in)."""
    lang = language(lang)
    if lang == ENGLISH:
        return tables
    said_tables = []
    for table in tables:
        if not isinstance(table, dict) or not table.get("said"):  # an older figure's: as it is
            said_tables.append(table)
            continue
        columns, said, numeric = table["columns"], table["said"], table.get("numeric") or []
        what = [c == "what" for c in columns]  # the column of a point's words
        table = {**table, "columns": [header_in(c, lang) if s else c for c, s in zip(columns, said)],
                 "rows": [[decimal_point(x, lang) if i < len(numeric) and numeric[i] else
                           message_in(x, lang) if i < len(what) and what[i] else x for i, x in enumerate(row)]
                          for row in table["rows"]]}
        said_tables.append(table)
    return said_tables

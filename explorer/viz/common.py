"""Shared helpers for the Plotly figures: arrays, token labels, ticks, colour scales, layout.

Every figure module in `explorer.viz` goes through these so that label handling (HTML escaping,
unique names for repeated tokens), tick thinning and sizes are the same everywhere.

Label scheme (one, used in every figure: explorer.labels.unique_labels): the first occurrence of a token keeps
its text, later occurrences get a middle-dot suffix with their occurrence count: ["the", "cat", "the", "the"] ->
["the", "cat", "the·2", "the·3"]. Plotly category axes merge equal labels, so names must be unique.

Figures are built from plain dicts by `figure` without Plotly's runtime validation (validating a
128-token heatmap figure cost ~9 ms of ~10 ms; the app builds nine per click). The tests validate
every figure kind instead: `go.Figure(fig.to_dict())` must accept it and give the same JSON.

Token text is shown through Plotly's pseudo-HTML renderer (ticks, hover, titles), so it is escaped
like `html.escape(quote=True)` ("<b>" shows as "<b>", not bold; "<br>" does not break lines). "$" is escaped
too, because text wrapped in "$...$" is typeset as LaTeX when MathJax is on the page.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.colors as pc
import plotly.graph_objects as go

from explorer.labels import unique_labels

# Colour scales readable with the common colour-vision deficiencies, as explicit [position, colour]
# lists (what Plotly's validator would expand a name to; figures are not validated at run time).
WEIGHT_SCALE = [[p, col] for p, col in pc.get_colorscale("Viridis")]  # sequential: attention weights 0..1
ROLLOUT_SCALE = [[p, col] for p, col in pc.get_colorscale("Cividis")]  # sequential, for colour-blind readers
# Diverging, ColorBrewer RdBu reversed: blue < 0 < red, white at 0.
DIVERGING_SCALE = [[i / (len(pc.diverging.RdBu) - 1), c] for i, c in enumerate(reversed(pc.diverging.RdBu))]
MASKED_COLOR = "#bdbdbd"  # neutral grey, outside Viridis' hue range
ALLOWED_COLOR = "#2166ac"  # mask view: dark blue vs light grey (differs in lightness too)
BLOCKED_COLOR = MASKED_COLOR  # mask view: blocked = the grey of a masked cell, one colour for "may not attend"
OFF_COLOR = "#7f7f7f"

FONT_SIZE = 12
TICK_FONT_SIZE = 11
TICK_SPACING_PX = 14  # minimum vertical/horizontal room for one tick label
MAX_TICK_CHARS = 16  # tick labels longer than this are cut with "…" (hover keeps the full text)
DEFAULT_WIDTH = 820  # assumed figure width when the caller does not give one (gr.Plot fills its container)
COLORBAR_PX = 70  # room a vertical colour bar takes right of the plot


def figure(traces: Sequence[dict[str, Any]], layout: dict[str, Any]) -> go.Figure:
    """A Figure from plain trace dicts (each with its "type") and a layout dict, not validated.

    Property names and values must already be what Plotly's validators would produce (the tests
    check every figure kind against a validated copy); numpy arrays are kept as they are.
    """
    return go.Figure(data=list(traces), layout=layout, _validate=False)


MESSAGE_LINE = 56  # characters per line of a message figure: fits a half-width plot (Plotly never wraps text)


def message_figure(text: str, height: int = 260) -> go.Figure:
    """An empty figure whose only content is `text` (escaped, wrapped at MESSAGE_LINE characters), e.g. why there is
    nothing to show."""
    lines = textwrap.wrap(text, MESSAGE_LINE, break_long_words=False) or [""]
    return figure([], dict(
        height=height, template={}, paper_bgcolor="white", plot_bgcolor="white",
        xaxis=dict(visible=False), yaxis=dict(visible=False), margin=dict(l=20, r=20, t=30, b=20),
        annotations=[dict(text="<br>".join(escape(line) for line in lines), x=0.5, y=0.5, xref="paper",
                          yref="paper", showarrow=False, font=dict(size=14, color="#555"))]))


def message_text(fig: go.Figure) -> str:
    """The text a `message_figure` shows, on one line (still escaped); "" for a figure without a message."""
    annotations = fig.layout.annotations
    return annotations[0].text.replace("<br>", " ") if annotations else ""


def to_numpy(x: Any, dtype: Any | None = None) -> np.ndarray:
    """Array from a numpy array, a torch tensor (any device, with or without grad) or a list."""
    if hasattr(x, "detach"):  # torch tensor, without importing torch here
        t = x.detach().cpu()
        if t.is_floating_point():
            t = t.float()  # bfloat16/float16 have no (or a lossy) numpy view
        x = t.numpy()
    arr = np.asarray(x)
    return arr.astype(dtype, copy=False) if dtype is not None else arr


def check_shape(name: str, arr: np.ndarray, expected: Sequence[int | None], meaning: str) -> None:
    """Raise a clear ValueError if `arr` does not have `expected` shape (None = any size)."""
    ok = arr.ndim == len(expected) and all(e is None or e == s for e, s in zip(expected, arr.shape))
    if not ok:
        want = "(" + ", ".join("?" if e is None else str(e) for e in expected) + ")"
        raise ValueError(f"{name} must have shape {meaning} = {want}; got {tuple(arr.shape)}")


# html.escape(quote=True) plus "$", in one pass (escape runs for every token of every figure).
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;", "$": "&#36;"})


def escape(text: Any) -> str:
    """Text safe for Plotly's pseudo-HTML: tags and entities show literally, no LaTeX."""
    return str(text).translate(_ESCAPES)


def display_labels(tokens: Sequence[Any]) -> list[str]:
    """Unique and HTML-escaped names, ready for category axes and hover text."""
    return [escape(t) for t in unique_labels(tokens)]


def short(text: str, limit: int = MAX_TICK_CHARS) -> str:
    """Cut an (unescaped) label for a tick; hover shows the full one."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tick_step(n: int, room_px: float, spacing_px: float = TICK_SPACING_PX) -> int:
    """Show every k-th of n labels so that labels are at least spacing_px apart."""
    if n <= 0:
        return 1
    fits = max(1, int(room_px // spacing_px))
    return max(1, math.ceil(n / fits))


EVERY_TICK_UP_TO = 64  # a token heatmap labels every token of a side this long or shorter (axes.TokenAxes)
MIN_TICK_FONT_SIZE = 7  # how small a tick label may get so that every one of them fits


def category_ticks(names: Sequence[str], tokens: Sequence[str], room_px: float, every_up_to: int = 0
                   ) -> dict[str, Any]:
    """Axis settings for a category axis whose categories are `names` (unique, escaped).

    `tokens` are the unescaped unique labels used for the (possibly cut) tick text. With many
    tokens only every k-th one gets a tick; the hover still names every cell. Up to `every_up_to`
    names every one gets its tick, the font made smaller (to MIN_TICK_FONT_SIZE) where they are close.
    """
    every = 0 < len(names) <= every_up_to
    step = 1 if every else tick_step(len(names), room_px)
    idx = list(range(0, len(names), step))
    size = TICK_FONT_SIZE
    if every:  # each label gets room_px / n: below TICK_SPACING_PX the font shrinks with it
        size = max(MIN_TICK_FONT_SIZE, min(TICK_FONT_SIZE, int(room_px / len(names) * TICK_FONT_SIZE
                                                             / TICK_SPACING_PX)))
    return dict(
        type="category",  # tokens such as "1" or "2024" must not turn the axis numeric
        tickmode="array",
        tickvals=[names[i] for i in idx],
        ticktext=[escape(short(tokens[i])) for i in idx],
        tickfont=dict(size=size),
        automargin=True,
    )


def clamp(value: float, low: float, high: float) -> int:
    return int(max(low, min(high, value)))


def label_margin(tokens: Sequence[str], per_char_px: float = 6.5, base: float = 30) -> int:
    """Margin that fits the longest (cut) tick label."""
    longest = max((len(short(t)) for t in tokens), default=1)
    return clamp(base + per_char_px * longest, 50, 200)


def cell_figure_height(n_rows: int, top: int, bottom: int, px_per_row: float = 22,
                       low: int = 360, high: int = 900) -> int:
    """Height for a token x token heatmap: grows with rows, within sane bounds, but never below one
    pixel per row (plotly drops or fades rows thinner than a pixel)."""
    return max(clamp(top + bottom + px_per_row * n_rows, low, high), top + bottom + n_rows)


def base_layout(title: str, height: int, width: int | None = None, **margins: int) -> dict[str, Any]:
    """Layout defaults shared by all figures (title, font, white background, explicit size)."""
    m = dict(l=80, r=30, t=70, b=70)
    m.update(margins)
    layout: dict[str, Any] = dict(
        title=dict(text=title, x=0.01, xanchor="left", font=dict(size=15)),
        font=dict(size=FONT_SIZE),
        height=height,
        margin=m,
        template={},  # no template: plotly's default costs 7 kB of JSON per figure; style set here
        paper_bgcolor="white",
        plot_bgcolor="white",  # the overview's gaps (categories without cells) read as background
        hoverlabel=dict(font=dict(size=12)),
    )
    if width is not None:
        layout["width"] = width
    return layout


WEIGHT = "weight"  # what an attention heatmap shows by default: the softmax weight, on a fixed 0..1 scale
VALUE_WEIGHTED = "weight × |value written|"  # Kobayashi et al.'s norm-based attention: its own 0..max scale


def value_range(values: np.ndarray, name: str) -> float:
    """The top of an attention heatmap's colour scale: 1 for weights, else the values' largest (1 if all are 0)."""
    if name == WEIGHT:
        return 1.0
    top = float(np.max(values)) if np.size(values) else 0.0
    return top if top > 0 else 1.0


def caption(text: str, x: float = 0.0, xanchor: str = "left") -> dict[str, Any]:
    """A small caption line just above the plot area (an annotation)."""
    return dict(text=text, x=x, xanchor=xanchor, y=1.0, yanchor="bottom", xref="paper", yref="paper",
                showarrow=False, font=dict(size=11, color="#444"))


def axis_ref(letter: str, k: int) -> str:
    """How a trace names its k-th x or y axis (k from 1): "x", "x2", ..."""
    return letter if k == 1 else f"{letter}{k}"


def axis_key(letter: str, k: int) -> str:
    """How the layout names the k-th x or y axis: "xaxis", "xaxis2", ..."""
    return f"{letter}axis" if k == 1 else f"{letter}axis{k}"

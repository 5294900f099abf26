"""Figures of an SAE's latents on one sentence (the Features tab): drawing only, from arrays the caller computed
(explorer.interpret.sae); nothing here runs a model.

Shapes: T tokens of the sequence the SAE reads, n latents shown, B histogram bins, W tokens of an example's window.

    latent_heatmap(labels (T,), latents (n,), values (T, n), chosen)   tokens x the sentence's strongest latents; a
                                          column is "latent i" (the page script reads the number off a clicked cell)
    latent_strip(labels (T,), activations (T,), latent)                 one latent along the sentence, a bar per token
    latent_histogram(edges (B + 1,), counts (B,), density, tokens, ...)  its non-zero activations over an example set
    examples_html([LatentExampleRow])                                   top examples as text, each token shaded by the
                                          latent's activation (tokens escaped: never HTML from a token)

Activations are >= 0 (every SAE architecture ends with a ReLU), so one sequential scale from white (0: the latent is
off) to dark orange serves every figure.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.colors as pc
import plotly.graph_objects as go

from explorer.viz import common as c
from explorer.viz.encode import encode

ACTIVATION_SCALE = [[i / (len(pc.sequential.Oranges) - 1), col] for i, col in enumerate(pc.sequential.Oranges)]
BAR_COLOR = "#d94801"  # the scale's dark end
SENTENCE_COLOR = "#0072B2"  # this sentence's largest activation, over the example set's histogram
SHADE = (217, 72, 1)  # an example token's background, its alpha the activation's share of the largest
# Inline styles (the HTML goes into a gr.HTML as it is): tokens in a monospace font, spaces kept.
BOX_STYLE = "font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 13px; line-height: 2;"
# Black text: 4.88:1 on the shade's darkest (SHADE at alpha 1 over white), more on every lighter one; the theme's
# grey-800 text was 3.4:1 there (WCAG AA asks 4.5:1; axe color-contrast on induction-gpt's examples).
TOKEN_TEXT = "#000000"
TOKEN_STYLE = f"white-space: pre; padding: 1px 1px; border-radius: 2px; color: {TOKEN_TEXT};"
VALUE_STYLE = "display: inline-block; min-width: 3.2em; font-weight: 600;"
WHERE_STYLE = "color: #666; font-size: 12px; margin-right: 0.4em;"  # 5.7:1 on white; no text below 12 px


def latent_name(latent: int) -> str:
    """A heatmap column's category: "latent 12" (explorer.app.tabs.features' page script parses it)."""
    return f"latent {int(latent)}"


def latent_heatmap(labels: Sequence[Any], latents: Any, values: Any, *, chosen: int | None = None,
                   title: str = "The strongest latents at each token (click a cell for its dashboard)",
                   width: int | None = None) -> go.Figure:
    """Rows are the tokens, columns the latents (values (T, n) >= 0, exact in the hover); the chosen latent's column
    is outlined. Title used as given (escape token text in it)."""
    ids = [int(i) for i in c.to_numpy(latents).reshape(-1)]
    v = c.to_numpy(values, np.float32)
    c.check_shape("values", v, (len(labels), len(ids)), "(T, n) = (len(labels), len(latents))")
    if not ids:
        return c.message_figure("No latent fires on this sentence.")
    names = c.display_labels(labels)
    columns = [latent_name(i) for i in ids]
    top = float(v.max()) if v.max() > 0 else 1.0
    enc = encode(v, 0.0, top, exact=True, name="activations")
    trace = enc.trace(columns, names, ACTIVATION_SCALE, "activation", "%{y} · %{x}: {value}", xgap=1, ygap=0)
    top, bottom = 130, 30  # the latents' names (angled) sit above the cells, under the title
    height = c.cell_figure_height(len(names), top, bottom, px_per_row=18, low=300)
    room = height - top - bottom
    layout = dict(**c.base_layout(title, height, width, l=c.label_margin(labels), r=90, t=top, b=bottom),
                  xaxis=dict(type="category", tickangle=-50, tickfont=dict(size=c.TICK_FONT_SIZE), side="top"),
                  yaxis=dict(**c.category_ticks(names, c.unique_labels(labels), room), autorange="reversed",
                             title=dict(text="token")))
    if chosen is not None and int(chosen) in ids:
        at = ids.index(int(chosen))
        layout["shapes"] = [dict(type="rect", xref="x", yref="paper", x0=at - 0.5, x1=at + 0.5, y0=0, y1=1,
                                 line=dict(color=SENTENCE_COLOR, width=2), fillcolor="rgba(0,0,0,0)")]
    return c.figure([trace], layout)


def latent_strip(labels: Sequence[Any], activations: Any, latent: int, *, title: str | None = None,
                 width: int | None = None) -> go.Figure:
    """Latent `latent`'s activation at every token (T,), a bar per token."""
    a = c.to_numpy(activations, np.float64).reshape(-1)
    if a.shape != (len(labels),):
        raise ValueError(f"activations must have one value per label ({len(labels)}); got shape {a.shape}")
    names = c.display_labels(labels)
    ticks = list(range(0, len(names), c.tick_step(len(names), (width or c.DEFAULT_WIDTH) - 120)))
    text = title or f"Latent {int(latent)} along the sentence"
    trace = dict(type="bar", x=names, y=a, marker=dict(color=BAR_COLOR),
                 hovertemplate="%{x}: %{y:.3f}<extra></extra>")
    return c.figure([trace], dict(
        **c.base_layout(text, 280, width, b=90, t=60),
        xaxis=dict(type="category", tickmode="array", tickvals=[names[i] for i in ticks],
                   ticktext=[c.escape(c.short(str(labels[i]))) for i in ticks], tickangle=-45,
                   tickfont=dict(size=c.TICK_FONT_SIZE)),
        yaxis=dict(title=dict(text="activation"), rangemode="tozero"), bargap=0.15))


def latent_histogram(edges: Any, counts: Any, *, density: float, tokens: int, sentence_max: float | None = None,
                     title: str = "Activations over the example set", width: int | None = None) -> go.Figure:
    """Counts (B,) of a latent's non-zero activations in the bins edges (B + 1,); `density` is the share of the
    example set's `tokens` it fires on; `sentence_max`: this sentence's largest activation, drawn as a line."""
    e = c.to_numpy(edges, np.float64).reshape(-1)
    n = c.to_numpy(counts, np.float64).reshape(-1)
    if e.shape != (len(n) + 1,):
        raise ValueError(f"edges must have one more value than counts ({len(n) + 1}); got shape {e.shape}")
    log = f"log₁₀ density {np.log10(density):.2f}" if density > 0 else "never fires"
    caption = f"fires on {density:.2%} of {tokens:,} tokens ({log})"
    if not n.sum():
        return c.message_figure(f"{title}: this latent never fires on them ({tokens:,} tokens).", height=280)
    centres, widths = (e[:-1] + e[1:]) / 2, np.diff(e)
    traces = [dict(type="bar", x=centres, y=n, width=widths, marker=dict(color=BAR_COLOR),
                   customdata=np.stack([e[:-1], e[1:]], 1),
                   hovertemplate="%{customdata[0]:.3f} to %{customdata[1]:.3f}: %{y:,} tokens<extra></extra>")]
    layout = dict(**c.base_layout(f"{c.escape(title)}<br><sup>{c.escape(caption)}</sup>", 280, width, t=70, b=60),
                  xaxis=dict(title=dict(text="activation (where it fires)"), rangemode="tozero"),
                  yaxis=dict(title=dict(text="tokens")), bargap=0.05)
    if sentence_max is not None and sentence_max > 0:
        layout["shapes"] = [dict(type="line", xref="x", yref="paper", x0=sentence_max, x1=sentence_max, y0=0, y1=1,
                                 line=dict(color=SENTENCE_COLOR, width=2, dash="dash"))]
        layout["annotations"] = [dict(text="this sentence's largest", x=sentence_max, xref="x", y=1, yref="paper",
                                      yanchor="bottom", showarrow=False, font=dict(size=11, color=SENTENCE_COLOR))]
    return c.figure(traces, layout)


@dataclass(frozen=True)
class LatentExampleRow:
    """One top example: the tokens of its window, the latent's activation at each, which one it is about."""

    labels: list[str]  # (W,) the tokens, unescaped
    activations: list[float]  # (W,)
    at: int  # the example's token, an index into labels
    value: float  # the activation there
    text: int  # which text of the example set
    position: int  # the example's token in that text


def examples_html(rows: Sequence[LatentExampleRow], *, empty: str = "No example: this latent never fires on the "
                                                                      "example set.") -> str:
    """The top examples as HTML: one line each, its activation first, every token shaded by its share of the largest
    activation shown (its value in the tooltip), the example's own token outlined. Every label is escaped."""
    if not rows:
        return f'<div class="latent-examples" style="{BOX_STYLE}"><p>{html.escape(empty)}</p></div>'
    top = max((max(r.activations, default=0.0) for r in rows), default=0.0) or 1.0
    lines = []
    for r in rows:
        if len(r.labels) != len(r.activations) or not 0 <= r.at < len(r.labels):
            raise ValueError("an example needs one activation per token and its own token among them")
        spans = []
        for i, (label, value) in enumerate(zip(r.labels, r.activations)):
            alpha = max(0.0, min(1.0, value / top))
            style = f"{TOKEN_STYLE} background: rgba({SHADE[0]}, {SHADE[1]}, {SHADE[2]}, {alpha:.2f});"
            if i == r.at:
                style += " outline: 2px solid #0072B2;"
            spans.append(f'<span class="tok" style="{style}" title="{value:.3f}">{html.escape(label)}</span>')
        where = f'<span style="{WHERE_STYLE}" title="text {r.text}, token {r.position}">#{r.text}</span>'
        lines.append(f'<div class="latent-example"><span style="{VALUE_STYLE}">{r.value:.2f}</span>{where}'
                     f'{"".join(spans)}</div>')
    return f'<div class="latent-examples" style="{BOX_STYLE}">' + "".join(lines) + "</div>"

"""How the page is drawn, two page-wide settings (page.settings: `size`, `mode`; link keys `size=projector`,
`mode=class`) that change nothing a Run computes, only what the browser shows:

- size: `normal`, or `projector`: text and every figure (of every tab, as drawn) large enough to read at the back of a
  class. The page's text grows through the theme's text sizes (display_css.DISPLAY_CSS); each Plotly figure's fonts
  and height are scaled in the browser after it is drawn (`SCALE_JS`), so no Run is needed and the figures' numbers
  (and the HTTP API's figure JSON) stay as they are.
- mode: `full`, or `class`: the sentence, Run, the output, one head's heatmap with its layer / head picker beside it
  and the head switches; the other tabs and controls behind "More" (which switches back to `full`).

Both set an attribute on the page's root element (`data-size`, `data-mode`) that display_css.DISPLAY_CSS reads; that
CSS goes in through the page's script, so its selectors can start at the root (Gradio prefixes the page's own CSS with
its container).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gradio as gr

from ..i18n.words import ENGLISH, LANGS, NAMES
from .display_css import DISPLAY_CSS

if TYPE_CHECKING:
    from .model_panel import Start

SIZES = {"normal": "Normal size", "projector": "Projector size"}
MODES = {"full": "every tab and control", "class": "a class's first view: sentence, Run, output, one head, switches"}
PLAIN_SIZE, PLAIN_MODE = "normal", "full"  # how the page opens (a copied link leaves these out)
PROJECTOR_SCALE = 1.5  # a projector figure's fonts, times this
PROJECTOR_HEIGHT = 1.3  # its height, times this (the plot area grows with its labels)


@dataclass
class Display:
    """The buttons that switch the layout (the settings themselves are `size` and `mode`)."""

    more: gr.Button  # in a class's view: every tab and control
    class_view: gr.Button  # in the full view: a class's first view


def size_choice(start: Start) -> gr.Dropdown:
    return gr.Dropdown([(label, size) for size, label in SIZES.items()], value=PLAIN_SIZE, show_label=False,
                       container=False, scale=0, min_width=165, elem_id="page-size", interactive=True,
                       label="Size of text and figures")


def language_menu(start: Start) -> gr.Dropdown:
    """The page's language (explorer.app.i18n), each named in its own words; the browser's on load (link.opening)."""
    return gr.Dropdown([(NAMES[lang], lang) for lang in LANGS], value=ENGLISH, show_label=False, container=False,
                       scale=0, min_width=110, elem_id="page-lang", interactive=True, label="Language")


def mode_box(start: Start) -> gr.Radio:
    # Written by the More / Class view buttons (in the browser) and by a link; "hidden": in the page, so its change
    # event runs. A Radio: the HTTP API names its two values and refuses any other.
    return gr.Radio(list(MODES), value=PLAIN_MODE, visible="hidden", elem_id="page-mode", label="layout")


def class_view_button() -> gr.Button:
    return gr.Button("Class view", size="sm", scale=0, min_width=90, elem_id="class-view")


def more_button() -> gr.Button:
    return gr.Button("More: every tab and control", size="sm", elem_id="more")


# Every Plotly figure of the page at the size the page asks for: its fonts (each `font` / `tickfont` the figure sets,
# and the figure-wide one every other inherits) and its height, scaled from what the server drew; the factor applied
# is kept in the figure's layout (meta.explorerScale), so a redraw is scaled once and going back to normal divides.
SCALE_JS = """
const explorerScale = (gd) => {
  if (!gd.layout || !window.Plotly) return;
  const want = document.documentElement.dataset.size === 'projector' ? FONT : 1;
  const have = (gd.layout.meta && gd.layout.meta.explorerScale) || 1;
  if (want === have) return;
  const r = want / have, heightR = want === 1 ? 1 / HEIGHT : HEIGHT;
  const update = {'meta.explorerScale': want, 'font.size': Math.round((gd._fullLayout.font.size || 12) * r)};
  const walk = (obj, path) => {
    if (!obj || typeof obj !== 'object') return;
    for (const [key, value] of Object.entries(obj)) {
      if (key === 'meta' || key === 'template') continue;
      const at = Array.isArray(obj) ? `${path}[${key}]` : (path ? `${path}.${key}` : key);
      if (/font$/.test(key) && value && typeof value.size === 'number') update[`${at}.size`] = value.size * r;
      else walk(value, at);
    }
  };
  walk(gd.layout, '');
  const height = typeof gd.layout.height === 'number' ? gd.layout.height : gd._fullLayout.height;
  if (height) update.height = Math.round(height * heightR);
  window.Plotly.relayout(gd, update);
};
const explorerScaleAll = () => document.querySelectorAll('.js-plotly-plot').forEach(explorerScale);
window.explorerScaleAll = explorerScaleAll;
const explorerBindScale = () => {
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    if (!gd.on || gd.__explorerScale) continue;
    gd.__explorerScale = true;
    gd.on('plotly_afterplot', () => explorerScale(gd));
    explorerScale(gd);
  }
};
new MutationObserver(explorerBindScale).observe(document.body, {childList: true, subtree: true});
explorerBindScale();
const explorerStyle = document.createElement('style');
explorerStyle.id = 'explorer-display';
explorerStyle.textContent = CSS;
document.head.appendChild(explorerStyle);
"""


def display_js() -> str:
    """The page script's part for the display (assets.page_js): the display CSS, the figures' scaling."""
    return (SCALE_JS.replace("FONT", json.dumps(PROJECTOR_SCALE)).replace("HEIGHT", json.dumps(PROJECTOR_HEIGHT))
            .replace("CSS", json.dumps(DISPLAY_CSS)))


# A setting's new value (a choice, a button, a link) on the page's root; the figures drawn already rescaled.
APPLY_SIZE_JS = """(size) => { document.documentElement.dataset.size = size || 'normal';
  if (window.explorerScaleAll) window.explorerScaleAll(); }"""
APPLY_MODE_JS = """(mode) => { document.documentElement.dataset.mode = mode || 'full';
  window.dispatchEvent(new Event('resize')); }"""  # the heatmap takes the width the hidden mask figure leaves
FLIP_MODE_JS = "(mode) => (mode === 'class' ? 'full' : 'class')"


def wire_display(size: Any, mode: Any, display: Display) -> None:
    """In the browser only (no server event): each setting's value on the page's root; More and Class view flip the
    layout (the mode's change then applies it, and a copied link carries it)."""
    private: dict[str, Any] = dict(queue=False, api_visibility="private")
    size.change(None, [size], None, js=APPLY_SIZE_JS, **private)
    mode.change(None, [mode], None, js=APPLY_MODE_JS, **private)
    for button in (display.more, display.class_view):
        button.click(None, [mode], [mode], js=FLIP_MODE_JS, **private)

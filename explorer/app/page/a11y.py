"""What makes the page pass axe-core and work from the keyboard (WCAG 2.2 AA, docs/accessibility.md): the theme with
AA contrast, the skip link, the visible focus, and fixes for what Gradio (6.31) marks up wrong.

- THEME: Gradio's Soft theme with its indigo darkened where text or a control sits on it: white on indigo-500
  (#6366f1) is 4.46:1, on indigo-600 6.29:1; indigo-500 labels on indigo-100 3.62:1, indigo-700 6.41:1; grey-400
  notes on white 2.5:1, grey-600 7.6:1 (AA asks 4.5:1 for text, 3:1 for large text and a control's parts).
- skip_link(): "Skip to results", the page's first focusable element; it moves the focus to the results bar (the state
  line and the output tokens), so a keyboard user passes the title row, the model panel and the sentences.
- CSS: a 3 px indigo-700 outline (7.9:1 on white) on whatever has the keyboard's focus; no text below 12 px; a closed
  sidebar's controls out of the Tab order (Gradio only slides it off screen); a status line that never scrolls (a box
  that scrolls is a Tab stop in Chromium: the focus was lost when it stopped); targets of 24 px (WCAG 2.2).
- JS: Gradio 6 puts `aria-label` on an empty figure's placeholder div, which has no role (axe: aria-prohibited-attr):
  it becomes role="img", which may carry one; a box that scrolls its content (a tab's summary, which German's longer
  words overflow; a step list; code) takes the focus (tabindex 0), so a keyboard user can scroll it (axe:
  scrollable-region-focusable); in a Dataframe that scrolls, its first header cell takes it (its viewport's
  role="none" may not); the document's language (`<html lang>`) follows the page's language menu (WCAG 3.1.1); a tab
  list is one Tab stop whose arrow keys, Home and End move from tab to tab (the ARIA tabs pattern; Gradio makes each
  tab a stop and has no arrow keys).
"""

from __future__ import annotations

import json

import gradio as gr

from ..i18n.words import NAMES

FOCUS = "#4338ca"  # indigo-700: the focus outline, 7.9:1 on white, 6.4:1 on the labels' indigo-100

THEME = gr.themes.Soft().set(
    button_primary_background_fill="*primary_600",  # white text 6.29:1 (indigo-500: 4.46:1)
    button_primary_background_fill_hover="*primary_700",
    button_primary_border_color="*primary_600",
    button_primary_border_color_hover="*primary_700",
    checkbox_label_background_fill_selected="*primary_600",  # a switched-on head's white label
    checkbox_background_color_selected="*primary_600",
    block_label_text_color="*primary_700",  # labels on indigo-100: 6.41:1 (indigo-500: 3.62:1)
    block_title_text_color="*primary_700",
    color_accent="*primary_600",  # a table's header, a slider's thumb, a link
    body_text_color_subdued="*neutral_600",  # notes under a control, the footer: 7.6:1 (grey-400: 2.5:1)
    input_placeholder_color="*neutral_500",  # 4.8:1
)

SKIP = "skip-to-results"
LANG_CODES = json.dumps({name: code for code, name in NAMES.items()})  # the language menu's words -> <html lang>

CSS = f"""
#{SKIP} {{position: absolute !important; top: 0; left: 0; width: 1px; height: 1px; overflow: visible !important;
         padding: 0 !important; min-height: 0 !important; border: none !important}}  /* out of the flow */
#{SKIP} a {{position: absolute; left: 8px; top: -48px; z-index: 2000; padding: 6px 12px; background: #fff;
           white-space: nowrap; transition: none;  /* shown at once when focused (Gradio's links ease 0.2 s) */
           color: {FOCUS}; font-weight: 600; border-radius: 4px; text-decoration: underline}}
#{SKIP} a:focus {{top: 8px}}
#results-bar:focus {{outline: 3px solid {FOCUS} !important; outline-offset: 2px}}
/* whatever the keyboard focuses shows it: Gradio draws its own focus only on some inputs, as a faint shadow */
:focus-visible {{outline: 3px solid {FOCUS} !important; outline-offset: 2px !important}}
.heads label:has(input:focus-visible) {{outline: 3px solid {FOCUS} !important; outline-offset: 1px}}
/* the API tab's code (Prism's colours: strings #690 3.1:1, comments and punctuation 2.6-3.9:1 on grey-100) */
.token.string, .token.selector, .token.attr-value, .token.builtin, .token.inserted {{color: #3f6212 !important}}
.token.comment, .token.prolog, .token.punctuation {{color: #4b5563 !important}}
.token.operator, .token.entity, .token.url {{color: #7c4a03 !important}}
.token.function, .token.class-name {{color: #b0223f !important}}
.token.keyword, .token.atrule {{color: #00587a !important}}
.token.regex, .token.important, .token.variable {{color: #8a4b00 !important}}
/* The status line never scrolls: Gradio's blocks are `overflow: auto`, Chromium makes a box that scrolls a Tab stop, and
   a follow-up event's timer overflowed the line for a moment: Tab from Run landed there and the focus was lost (to the
   body) when it shrank back */
#status {{overflow: visible !important}}
/* Gradio's closed Sidebar slides off screen but keeps its controls in the Tab order: the focus would go out of sight */
.sidebar:not(.open) > .sidebar-content {{visibility: hidden}}
/* WCAG 2.2 target size (axe target-size, induction-gpt at 1280 px): the Download button was 16 px tall, 6 px from the
   output tokens, whose clickable token is 16 px tall too: 24 px tall now, and 14 px from them */
#download-view {{min-height: 24px !important; margin-left: 8px !important}}
/* Plotly's modebar buttons are about 20 px: WCAG 2.2's target size asks 24 px (axe target-size, seen on a phone) */
.js-plotly-plot .modebar-btn {{min-width: 24px; min-height: 24px; box-sizing: border-box}}
/* no text below 12 px (the head switches were 11 px) */
.heads label, .heads label span {{font-size: 12px !important}}
"""

JS = f"""
(() => {{
  const link = document.querySelector('#{SKIP} a');
  if (link) link.addEventListener('click', (event) => {{
    event.preventDefault();
    const target = document.querySelector('#results-bar');
    if (!target) return;
    target.setAttribute('tabindex', '-1');
    target.focus();
    target.scrollIntoView({{block: 'nearest'}});
  }});
  // WCAG 3.1.1: the document says the page's language (Gradio writes <html lang="en">), so a screen reader reads the
  // German page with a German voice; the menu shows the chosen language's own name
  const codes = {LANG_CODES};
  const fix = () => {{
    const chosen = document.querySelector('#page-lang input');
    const code = chosen && codes[chosen.value];
    if (code && document.documentElement.lang !== code) document.documentElement.lang = code;
    for (const box of document.querySelectorAll('div.empty[aria-label]:not([role])')) box.setAttribute('role', 'img');
    for (const box of document.querySelectorAll('[id$="-summary"], .head-steps > div, pre')) {{
      if (box.hasAttribute('tabindex')) continue;
      const style = getComputedStyle(box);
      if (!/(auto|scroll)/.test(style.overflowX + style.overflowY)) continue;
      if (box.scrollWidth > box.clientWidth || box.scrollHeight > box.clientHeight) box.setAttribute('tabindex', '0');
    }}
    // a Dataframe's scrolling viewport has role="none" (it may not take the focus): its first header cell does, as
    // the ARIA grid pattern's entry cell; Gradio's arrow keys then move cell to cell and scroll the viewport
    for (const view of document.querySelectorAll('.virtual-table-viewport')) {{
      if (view.scrollWidth <= view.clientWidth && view.scrollHeight <= view.clientHeight) continue;
      const cell = view.querySelector('[role=columnheader], [role=gridcell]');
      if (cell && !view.querySelector('[tabindex="0"]')) cell.setAttribute('tabindex', '0');
    }}
    // a tab list is one Tab stop (the ARIA tabs pattern): the chosen tab, or the one the arrow keys moved to
    for (const list of document.querySelectorAll('[role=tablist]')) {{
      const tabs = [...list.querySelectorAll('[role=tab]')];
      const stop = tabs.includes(document.activeElement) ? document.activeElement
        : tabs.find(tab => tab.getAttribute('aria-selected') === 'true') || tabs[0];
      for (const tab of tabs) {{
        const index = tab === stop ? '0' : '-1';
        if (tab.getAttribute('tabindex') !== index) tab.setAttribute('tabindex', index);
      }}
    }}
  }};
  // in a tab list the arrow keys, Home and End move the focus from tab to tab; Enter or Space opens the focused tab
  // (Gradio 6.31 makes every tab a Tab stop and has no arrow keys: 15 Tab presses to pass the list)
  document.addEventListener('keydown', (event) => {{
    const tab = event.target.closest ? event.target.closest('[role=tab]') : null;
    const list = tab && tab.closest('[role=tablist]');
    if (!list || event.altKey || event.ctrlKey || event.metaKey) return;
    const tabs = [...list.querySelectorAll('[role=tab]')].filter(t => !t.disabled && t.getClientRects().length);
    const at = tabs.indexOf(tab);
    const to = {{ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tabs.length - 1}}[event.key];
    if (to === undefined || at < 0) return;
    event.preventDefault();
    const next = tabs[(to + tabs.length) % tabs.length];
    tab.setAttribute('tabindex', '-1');
    next.setAttribute('tabindex', '0');
    next.focus();
  }});
  document.addEventListener('focusout', (event) => {{
    if (event.target.closest && event.target.closest('[role=tablist]')) later();  // the stop goes back to the chosen tab
  }});
  let pending = false;
  const later = () => {{
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {{ pending = false; fix(); }});
  }};
  new MutationObserver(later).observe(document.body, {{childList: true, subtree: true, attributes: true,
                                                  attributeFilter: ['aria-selected']}});
  window.addEventListener('resize', later);  // a box may start (or stop) scrolling when the window narrows
  fix();
}})();
"""


def skip_link() -> gr.HTML:
    """The page's first element: a link shown while it has the focus, moving the focus to the results bar."""
    return gr.HTML('<a href="#results-bar">Skip to results</a>', elem_id=SKIP, container=False, padding=False)

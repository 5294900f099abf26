"""The CSS of the page's display settings (page.display): a class's view (`data-mode="class"` on the page's root) and
the projector size (`data-size="projector"`). The page's script puts it in a style element of its own, so selectors
start at the root element (the page's own CSS, assets.CSS, is prefixed by Gradio with its container); `html:root`
outweighs that prefix where both set a property."""

# What a class's view hides: the second sentence, the other tabs (their strip), the controls other than the layer /
# head picker, the causal mask and the head switches, and the Attention tab's figures and tables below its heatmap
# (the mask figure only while the causal mask is on).
CLASS_HIDDEN = (".intro", "#sentence2-col", "#class-view", "#download-view", "#views .tab-wrapper",
                "#kind", "#measure", "#sentence", "#lm-controls", "#padding", "#custom-mask", "#blocked", "#window",
                "#mask-plot", "#surprisal-plot", "#output-summary", "#output-table", "#sampling-plot",
                "#baseline-plot", "#diff-plot", "#tokens")

# The theme's text sizes (Gradio declares them on the root element, and the sizes made of them there too) and the
# page's own fixed sizes, for a projector: about 1.5 times.
PROJECTOR_TEXT = {"--text-xxs": 14, "--text-xs": 16, "--text-sm": 19, "--text-md": 22, "--text-lg": 25,
                  "--text-xl": 32, "--text-xxl": 40}
PROJECTOR_FIXED = {"#title-text h1": 34, "#headline p": 18, ".intro p": 19, "#state-line p": 22,
                   "#state-line p + p": 18, "#output-tokens .token": 24, ".tab-text p": 20, ".heads label": 17,
                   ".heads label span": 17,
                   "#download-view": 17}


def _class_css() -> str:
    hidden = ",\n".join(f'html:root[data-mode="class"] {s}' for s in CLASS_HIDDEN)
    return (f"{hidden} {{display: none !important}}\n"
            'html:root:not([data-mode="class"]) #more {display: none !important}\n'
            # the mask figure comes back once the one mask shown is switched off (a lesson on masks needs it)
            'html:root[data-mode="class"]:has(#causal input:not(:checked)) #mask-plot {display: block !important}\n'
            '#more {align-self: flex-start; width: auto !important}\n'
            # on a phone the picker comes right above its heatmap (assets.CSS orders the flattened page)
            '@media (max-width: 640px) {html:root[data-mode="class"] #view-group {order: 5 !important}}\n')


PROJECTOR = 'html:root[data-size="projector"]'


def _projector_css() -> str:
    root = "; ".join(f"{name}: {px}px" for name, px in PROJECTOR_TEXT.items())
    fixed = "\n".join(f"{PROJECTOR} {s} {{font-size: {px}px !important; line-height: 1.3 !important}}"
                      for s, px in PROJECTOR_FIXED.items())
    return (f"{PROJECTOR} {{{root}}}\n{fixed}\n"
            f"{PROJECTOR} .gradio-container {{max-width: none !important}}\n"
            # a wider controls column: four switches of 17 px text a row, as many as a layer of the shipped models
            f"{PROJECTOR} #controls {{min-width: 420px !important}}\n"
            f"{PROJECTOR} .heads .wrap {{grid-template-columns: repeat(auto-fill, minmax(88px, 1fr)) !important}}\n"
            f"{PROJECTOR} #page-size {{min-width: 220px !important}}\n"
            f"{PROJECTOR} #title button {{white-space: nowrap}}\n"
            f"{PROJECTOR} .heads label input {{width: 18px !important; height: 18px !important}}\n")


# Gradio's container hides what overflows it by being a scroll container, which would stop the results bar staying in
# view (position: sticky, assets.CSS) at the container's top; `clip` hides the same without being one.
PAGE_CSS = ".gradio-container {overflow: clip !important}\n"

DISPLAY_CSS = PAGE_CSS + _class_css() + _projector_css()

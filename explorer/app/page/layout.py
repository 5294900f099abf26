"""The page's layout: which components there are and where they sit (no behaviour: explorer.app.events and each tab's
`wire`). Every component the events read or write is a field of a typed dataclass (`Page`, `ModelPanel`, `Inputs`,
`Controls`, and each tab's own parts), so a renamed component fails where it is named, not at run time.

At 1280 x 800 the sentence boxes, Run and the chosen head's heatmap are on the first screen: the model panel is a
collapsible sidebar, the view, mask and head controls a narrow column left of the figures. On a phone (narrower than
640 px) the page's CSS (assets.CSS) puts the figures right after the first sentence and Run, then the second
sentence and the controls; the layout here is the same for both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gradio as gr

from ...model import PRESETS
from ..run.toggles import CUSTOM_MASKS
from ..run.view import default_kind
from ..serving.kept import Shown
from ..serving.limits import DEFAULT_CONTINUATION, DELETE_CACHE, MAX_BUILD_PARAMETERS, MAX_NEW_TOKENS
from .head_labels import head_labels
from .head_switches import heads_classes
from .lessons import lessons_menu
from .model_panel import ModelInfo
from .results_bar import Results, results_bar
from .sampling_controls import SamplingControls, sampling_controls

INTRO = ("Type a sentence and press **Run**, then switch heads off and change masks to see what changes. Other "
         "models: the panel behind **›** at the top left.")
HEAD_GROUPS = (("encoder", "Encoder self-attention", "enc-heads"), ("decoder", "Decoder self-attention", "dec-heads"),
               ("cross", "Cross-attention", "cross-heads"))


@dataclass(frozen=True)
class Start:
    """What the page opens with: the starting model's info (None if it failed to load) and the choices."""

    info: ModelInfo | None
    source: str
    sources: list[tuple[str, str]]  # (label, name) for the model dropdowns
    devices: list[str]
    device: str
    can_load_folders: bool
    second: str = ""  # the second model the Compare models tab starts with
    second_kinds: dict[str, tuple[int, int]] | None = None  # its attention kinds -> (layers, heads); None: unknown

    @property
    def kinds(self) -> dict[str, tuple[int, int]]:
        return self.info.kinds if self.info else {}


@dataclass
class ModelPanel:
    """The sidebar: load a shipped, Hub or allowed-folder model, or build a fresh one; what is loaded."""

    sidebar: gr.Sidebar
    source: gr.Dropdown
    custom_source: gr.Textbox
    device_in: gr.Dropdown
    load_btn: gr.Button
    preset: gr.Dropdown
    arch: gr.Dropdown
    norm: gr.Radio
    positional: gr.Dropdown
    n_layers: gr.Number
    n_heads: gr.Number
    seed: gr.Number
    d_model: gr.Number
    d_ff: gr.Number
    build_device: gr.Dropdown
    build_btn: gr.Button
    model_md: gr.Markdown

    def build_form(self) -> list[Any]:
        """/build_model's inputs, in the API's order."""
        return [self.preset, self.arch, self.n_layers, self.n_heads, self.d_model, self.d_ff, self.norm,
                self.positional, self.seed, self.build_device]


@dataclass
class Inputs:
    """The sentences, Run, the status line and the link's components."""

    text1: gr.Textbox
    ex1: gr.Dropdown
    text2: gr.Textbox
    ex2: gr.Dropdown
    run_btn: gr.Button
    api_run: gr.Button  # /analyze for API clients: the whole result in one answer (the page's Run streams it)
    api_tab: gr.Button  # /show_tab for API clients: another tab of the last /analyze
    status: gr.Markdown
    copy_link: gr.Button
    link_url: gr.Textbox  # the link, shown once made (the clipboard may be unavailable)
    link_notice: gr.Markdown  # what an opened (or copied) link could not take
    link_query: gr.Textbox  # the query the server built from the page


@dataclass
class Controls:
    """The view, mask and head controls left of the figures."""

    kind: gr.Dropdown
    layer: gr.Dropdown
    head: gr.Dropdown
    sentence: gr.Dropdown
    measure: gr.Radio
    lm_controls: gr.Accordion
    position: gr.Number
    new_tokens: gr.Slider
    sampling: SamplingControls  # Sample (off: greedy), temperature, top-k, top-p, seed
    padding: gr.Checkbox
    causal: gr.Checkbox
    custom: gr.Radio
    block_token: gr.Number
    window: gr.Slider
    all_on: gr.Button
    only_this: gr.Button
    heads: dict[str, gr.CheckboxGroup]  # kind -> its head switches (labels "L0 H1" of the heads on)

    @property
    def head_groups(self) -> list[gr.CheckboxGroup]:
        """The head switches in HEAD_GROUPS order (encoder, decoder, cross): the API's order."""
        return [self.heads[k] for k, _, _ in HEAD_GROUPS]


@dataclass
class Page:
    """Every component the events read or write."""

    demo: gr.Blocks
    session: gr.State
    kept: gr.State  # kept.Shown: a key to the last Run's result, its request, the tab opened last
    headline: gr.Markdown
    model: ModelPanel
    inputs: Inputs
    controls: Controls
    results: Results
    tab_strip: gr.Tabs
    visible_tab: gr.Textbox  # which tab is shown: an input of /analyze (only that tab's figures are drawn and sent)
    tabs: dict[str, gr.Tab]  # tab id -> its gr.Tab
    parts: dict[str, Any]  # tab id -> its parts (Tab.layout)
    registry: tuple[Any, ...]  # the tabs (tabs.base.Tab), in the page's order (explorer.app.tabs.TABS)

    def plots(self) -> dict[str, gr.Plot]:
        """The plot of every Run figure of the page, by figure name."""
        return {name: plot for tab in self.registry for name, plot in tab.plots(self.parts[tab.id]).items()}


def model_panel(start: Start) -> ModelPanel:
    with gr.Sidebar(label="Model", open=False, width=380, elem_id="model-sidebar") as sidebar:
        gr.Markdown("### Model")
        with gr.Tabs():
            with gr.Tab("Load"):
                source = gr.Dropdown(start.sources, value=start.source, label="Shipped checkpoint or known model",
                                     info="Hub models load from the Hugging Face cache, or download once online",
                                     allow_custom_value=True, elem_id="source")
                custom_source = gr.Textbox(label="…or a Hugging Face Hub id" + (" / local folder" if
                                           start.can_load_folders else ""), placeholder="owner/name", max_lines=1)
                device_in = gr.Dropdown(start.devices, value=start.device, label="Device")
                load_btn = gr.Button("Load model", variant="primary")
            with gr.Tab("Build"):
                preset = gr.Dropdown(["custom", *PRESETS], value="custom", label="Preset")
                arch = gr.Dropdown(["encoder-decoder", "decoder", "encoder"], value="encoder-decoder",
                                   label="Architecture")
                with gr.Row():
                    norm = gr.Radio(["pre-norm", "post-norm"], value="pre-norm", label="LayerNorm")
                    positional = gr.Dropdown(["sinusoidal", "learned", "none"], value="sinusoidal", label="Positions")
                with gr.Row():
                    n_layers = gr.Number(2, label="Layers", precision=0, minimum=1, maximum=24, min_width=60)
                    n_heads = gr.Number(4, label="Heads", precision=0, minimum=1, maximum=32, min_width=60)
                    seed = gr.Number(0, label="Seed", precision=0, min_width=60)
                with gr.Row():
                    d_model = gr.Number(64, label="d_model", precision=0, minimum=1, maximum=2048, min_width=60)
                    d_ff = gr.Number(256, label="d_ff", precision=0, minimum=1, maximum=8192, min_width=60)
                build_device = gr.Dropdown(start.devices, value=start.device, label="Device")
                build_btn = gr.Button("Build model", variant="primary")
                gr.Markdown(f"Random weights and the date character tokenizer; at most {MAX_BUILD_PARAMETERS:,} "
                            "parameters.")
        model_md = gr.Markdown(start.info.markdown if start.info else "Loading the model …", elem_id="model-info")
    return ModelPanel(sidebar, source, custom_source, device_in, load_btn, preset, arch, norm, positional, n_layers,
                      n_heads, seed, d_model, d_ff, build_device, build_btn, model_md)


def example_choices(examples: list[str], which: str) -> list[tuple[str, str]]:
    """Dropdown choices whose first entry says what the list is (so it never looks empty)."""
    first = f"{len(examples)} examples for {which} …" if examples else "no examples"
    return [(first, ""), *((e, e) for e in examples)]


def input_rows(start: Start, copy_link: gr.Button) -> Inputs:
    examples = start.info.examples if start.info else []
    with gr.Row(equal_height=False, elem_id="inputs"):
        with gr.Column(scale=5, min_width=200, elem_id="sentence1-col"):
            text1 = gr.Textbox(examples[0] if examples else "", label="Sentence", lines=1, max_lines=4,
                               elem_id="text1")
            ex1 = gr.Dropdown(example_choices(examples, "sentence 1"), value="", show_label=False, container=False,
                              elem_id="ex1", elem_classes="examples")
        with gr.Column(scale=5, min_width=200, elem_id="sentence2-col"):
            text2 = gr.Textbox(examples[1] if len(examples) > 1 else "", lines=1, max_lines=4, elem_id="text2",
                               label="Second sentence (optional)", placeholder="batched with the first: the shorter "
                               "one is padded, so the padding mask matters")
            ex2 = gr.Dropdown(example_choices(examples, "sentence 2"), value="", show_label=False, container=False,
                              elem_id="ex2", elem_classes="examples")
        run_btn = gr.Button("Run", variant="primary", scale=1, min_width=90, elem_id="run")
        api_run, api_tab = gr.Button(visible=False), gr.Button(visible=False)
    status = gr.Markdown(elem_id="status")
    link_url = gr.Textbox(label="Link to this view", visible=False, max_lines=1, buttons=["copy"], elem_id="link-url")
    link_notice = gr.Markdown(elem_id="link-notice")
    link_query = gr.Textbox(visible=False, elem_id="link-query", label="link query")
    return Inputs(text1, ex1, text2, ex2, run_btn, api_run, api_tab, status, copy_link, link_url, link_notice,
                  link_query)


def controls(start: Start) -> Controls:
    kinds = start.kinds
    first = next(iter(kinds.values()), (1, 1))
    with gr.Column(scale=1, min_width=270, elem_id="controls"):
        kind = gr.Dropdown(list(kinds), value=default_kind(kinds) if kinds else None, label="Attention shown",
                           elem_id="kind", allow_custom_value=True)
        with gr.Row():
            layer = gr.Dropdown(list(range(first[0])), value=0, label="Layer", elem_id="layer",
                                allow_custom_value=True, min_width=70)
            head = gr.Dropdown(list(range(first[1])), value=0, label="Head", elem_id="head", allow_custom_value=True,
                               min_width=70)
            sentence = gr.Dropdown([1, 2], value=1, label="Sentence", min_width=70, elem_id="sentence")
        # What the head and all-heads maps show (run.view.MEASURES; the value is /analyze's `measure`).
        measure = gr.Radio([("weights", "weights"), ("weight × |value written|", "values")], value="weights",
                           label="Heatmaps show", elem_id="measure",
                           info="how much each key is attended to, or that times the length of what it writes")
        language = start.info is not None and start.info.language_model
        generates = start.info is not None and start.info.generates
        with gr.Accordion("Language model" if language or not generates else "Generated output", open=True,
                          visible=generates, elem_id="lm-controls") as lm_controls:
            with gr.Row():
                position = gr.Number(-1, label="Predict after position", info="−1 = the last token", precision=0,
                                     min_width=80, elem_id="position", visible=language)
                new_tokens = gr.Slider(0, MAX_NEW_TOKENS, value=DEFAULT_CONTINUATION, step=1, min_width=80,
                                       label="Continue (tokens)", elem_id="new-tokens",
                                       visible=start.info is not None and start.info.answer_length is not None)
            sampling = sampling_controls()
        with gr.Accordion("Masks", open=True):
            padding = gr.Checkbox(True, label="Padding mask (ignore the shorter sentence's [PAD])",
                                  elem_id="padding")
            causal = gr.Checkbox(True, label="Causal mask (decoder: no looking ahead)", elem_id="causal")
            custom = gr.Radio(list(CUSTOM_MASKS), value="none", label="Custom mask, first stack", elem_id="custom-mask")
            with gr.Row():
                block_token = gr.Number(0, label="Blocked position", precision=0, minimum=0, min_width=80)
                window = gr.Slider(0, 16, value=2, step=1, label="Window k", min_width=80)
        with gr.Accordion("Heads (checked = on)", open=True):
            with gr.Row():
                all_on = gr.Button("All on", size="sm", min_width=60)
                only_this = gr.Button("Only this head", size="sm", min_width=60)
            heads = {}
            for k, label, eid in HEAD_GROUPS:
                labels = head_labels(*kinds[k]) if k in kinds else []
                heads[k] = gr.CheckboxGroup(labels, value=labels, label=label, visible=bool(labels) or not kinds,
                                            elem_id=eid, elem_classes=heads_classes(kinds[k][1] if k in kinds else 0))
    return Controls(kind, layer, head, sentence, measure, lm_controls, position, new_tokens, sampling, padding, causal,
                    custom, block_token, window, all_on, only_this, heads)


def layout(start: Start, session_value: Any, tabs: Sequence[Any]) -> Page:
    """The page with `tabs` (tabs.TABS: each lays out its own components inside its gr.Tab)."""
    with gr.Blocks(title="Transformer Explorer", delete_cache=DELETE_CACHE) as demo:
        session = gr.State(session_value)
        # A key to the last Run's result in the app's store of kept results, its request, the tab opened last
        # (explorer.app.serving.kept.Shown): small, so no time to live; the store bounds the results by bytes.
        kept = gr.State(Shown())
        model = model_panel(start)
        with gr.Row(elem_id="title", equal_height=True):
            gr.Markdown("## Transformer Explorer", elem_id="title-text")
            headline = gr.Markdown(start.info.headline if start.info else "", elem_id="headline")
            lessons_menu()  # choosing a lesson opens its link (in the browser only)
            copy_link = gr.Button("Copy link", size="sm", scale=0, min_width=90, elem_id="copy-link")
        gr.Markdown(INTRO, elem_classes="intro")
        inputs = input_rows(start, copy_link)
        with gr.Row(equal_height=False, elem_id="workspace"):  # on a phone: figures first (assets.CSS)
            ctl = controls(start)
            with gr.Column(scale=4, elem_id="views-col"):
                results = results_bar()
                with gr.Tabs(elem_id="views", overflow_behavior="wrap") as tab_strip:  # every tab one click away
                    shown, parts = {}, {}
                    for tab in tabs:
                        with gr.Tab(tab.title, id=tab.id, visible=tab.shown_for(start.info)) as shown[tab.id]:
                            if tab.help:
                                gr.Markdown(tab.help, elem_classes="tab-text")
                            parts[tab.id] = tab.layout(start)
                visible_tab = gr.Textbox("attention", visible=False, elem_id="visible-tab", label="tab")
    return Page(demo, session, kept, headline, model, inputs, ctl, results, tab_strip, visible_tab, shown, parts,
                tuple(tabs))

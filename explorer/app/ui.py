"""The page's layout: which components there are and where they sit (no behaviour; see `events`).

At 1280 x 800 the sentence boxes, Run and the chosen head's heatmap are on the first screen: the model panel
is a collapsible sidebar, the view, mask and head controls a narrow column left of the figures. On a phone (narrower
than 640 px) the page's CSS (assets.CSS) puts the figures right after the first sentence and Run, then the second
sentence and the controls; the layout here is the same for both.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from types import SimpleNamespace
from typing import Any

import gradio as gr

from ..model import PRESETS
from .assets import CSS, PAGE_JS
from .idle_timers import page_middleware
from .head_labels import head_labels
from .limits import DEFAULT_CONTINUATION, MAX_BUILD_PARAMETERS, MAX_NEW_TOKENS, POSITIONAL_D_MODEL, POSITIONAL_LENGTH
from .texts import API_TEXT, INTRO, TAB_TEXT
from .toggles import CUSTOM_MASKS
from .ui_compare import compare_tab
from .ui_contrib import contribution_tab
from .ui_heads import head_tabs
from .kept import Shown
from .model_panel import ModelInfo

SESSION_CAPACITY = 1000  # sessions whose state Gradio keeps (least recently used dropped first; see launch_kwargs)
HEAD_GROUPS = (("encoder", "Encoder self-attention", "enc-heads"), ("decoder", "Decoder self-attention", "dec-heads"),
               ("cross", "Cross-attention", "cross-heads"))


@dataclass(frozen=True)
class Start:
    """What the page opens with: the starting model's info (None if it failed to load) and the choices."""

    info: ModelInfo | None
    source: str
    sources: list[tuple[str, str]]  # (label, name) for the model dropdown
    devices: list[str]
    device: str
    can_load_folders: bool
    second: str = ""  # the second model the Compare models tab starts with
    second_kinds: dict[str, tuple[int, int]] | None = None  # its attention kinds -> (layers, heads); None: unknown


def named(scope: dict[str, Any], **extra: Any) -> SimpleNamespace:
    """The components a layout function created, under their variable names (how `events` refers to them)."""
    return SimpleNamespace(**{k: v for k, v in scope.items() if isinstance(v, gr.components.Component)}, **extra)


def plot(elem_id: str, label: str, visible: bool = True) -> gr.Plot:
    return gr.Plot(label=label, show_label=False, elem_id=elem_id, visible=visible)


def model_sidebar(start: Start) -> SimpleNamespace:
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
                    pos = gr.Dropdown(["sinusoidal", "learned", "none"], value="sinusoidal", label="Positions")
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
    return named(locals(), sidebar=sidebar)


def example_choices(examples: list[str], which: str) -> list[tuple[str, str]]:
    """Dropdown choices whose first entry says what the list is (so it never looks empty)."""
    first = f"{len(examples)} examples for {which} …" if examples else "no examples"
    return [(first, ""), *((e, e) for e in examples)]


def input_rows(start: Start) -> SimpleNamespace:
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
        # /analyze for API clients: the whole result in one answer (the page's Run streams it, explorer.app.events)
        api_run = gr.Button(visible=False)
        api_tab = gr.Button(visible=False)  # /show_tab for API clients: another tab of the last /analyze
    status = gr.Markdown(elem_id="status")
    return named(locals())


def controls(start: Start) -> SimpleNamespace:
    kinds = start.info.kinds if start.info else {}
    first = next(iter(kinds.values()), (1, 1))
    with gr.Column(scale=1, min_width=270, elem_id="controls"):
        kind = gr.Dropdown(list(kinds), value="cross" if "cross" in kinds else next(iter(kinds), None),
                           label="Attention shown", elem_id="kind", allow_custom_value=True)
        with gr.Row():
            layer = gr.Dropdown(list(range(first[0])), value=0, label="Layer", elem_id="layer",
                                allow_custom_value=True, min_width=70)
            head = gr.Dropdown(list(range(first[1])), value=0, label="Head", elem_id="head", allow_custom_value=True,
                               min_width=70)
            sentence = gr.Dropdown([1, 2], value=1, label="Sentence", min_width=70, elem_id="sentence")
        # What the head and all-heads maps show (explorer.app.views.MEASURES; the value is /analyze's `measure`).
        measure = gr.Radio([("weights", "weights"), ("weight × |value written|", "values")], value="weights",
                           label="Heatmaps show", elem_id="measure",
                           info="how much each key is attended to, or that times the length of what it writes")
        language = start.info is not None and start.info.language_model
        with gr.Accordion("Language model", open=True, visible=language, elem_id="lm-controls") as lm_controls:
            with gr.Row():
                position = gr.Number(-1, label="Predict after position", info="−1 = the last token", precision=0,
                                     min_width=80, elem_id="position")
                new_tokens = gr.Slider(0, MAX_NEW_TOKENS, value=DEFAULT_CONTINUATION, step=1, min_width=80,
                                       label="Continue (tokens)", elem_id="new-tokens")
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
            groups = {}
            for k, label, eid in HEAD_GROUPS:
                labels = head_labels(*kinds[k]) if k in kinds else []
                groups[k] = gr.CheckboxGroup(labels, value=labels, label=label, visible=bool(labels) or not kinds,
                                             elem_id=eid, elem_classes="heads")
    return named(locals(), heads=groups, lm_controls=lm_controls)


def tab_text(name: str) -> None:
    gr.Markdown(TAB_TEXT[name], elem_classes="tab-text")


def view_tabs(language: bool, decoder: bool, cross: bool = True, start: Start | None = None) -> SimpleNamespace:
    with gr.Column(scale=4, elem_id="views-col"):
        with gr.Tabs(elem_id="views", overflow_behavior="wrap") as tab_strip:  # every tab one click away
            with gr.Tab("Attention & output", id="attention") as tab_attention:
                tab_text("attention")
                with gr.Row():
                    head_plot = plot("head-plot", "Attention with the toggles")
                    mask_plot = plot("mask-plot", "Mask")
                surprisal_plot = gr.Plot(label="Surprisal of each token", show_label=False, elem_id="surprisal-plot",
                                         visible=language)
                output_md = gr.Markdown(elem_id="output-summary")
                output_df = gr.Dataframe(label="Output: baseline vs toggled", interactive=False, wrap=True,
                                         elem_id="output-table")
                with gr.Row():
                    baseline_plot = plot("baseline-plot", "Attention without toggles")
                    diff_plot = plot("diff-plot", "Difference")
                tokens_df = gr.Dataframe(label="Tokens and ids", interactive=False, elem_id="tokens", max_height=300)
            with gr.Tab("All heads", id="overview") as tab_overview:
                tab_text("overview")
                overview_plot = plot("overview-plot", "All layers × heads")
                tile_click = gr.Textbox(visible="hidden", elem_id="overview-click", label="clicked tile")
                large_plot = plot("large-plot", "The chosen head")
            heads = head_tabs(decoder)  # Roles, Patching, Lens: next to the overview they label
            contrib = contribution_tab()  # where one prediction comes from
            with gr.Tab("Generation", id="generation") as tab_generation:
                tab_text("generation")
                with gr.Row():
                    gen_self = plot("gen-self", "Decoder self-attention per generated token")
                    # Shown for models with cross-attention only: the self-attention plot then has the whole row
                    # (a half-width plot cannot label a 1,000-token prompt's keys).
                    gen_cross = plot("gen-cross", "Cross-attention per generated token", visible=cross)
            with gr.Tab("Positions", id="positional") as tab_positional:
                tab_text("positional")
                with gr.Row():
                    pe_d = gr.Number(64, label="d_model", precision=0, minimum=POSITIONAL_D_MODEL[0],
                                     maximum=POSITIONAL_D_MODEL[1])
                    pe_len = gr.Number(64, label="positions", precision=0, minimum=POSITIONAL_LENGTH[0],
                                       maximum=POSITIONAL_LENGTH[1])
                    pe_base = gr.Number(10000, label="base", minimum=1.01)
                    pe_btn = gr.Button("Show", variant="primary")
                pe_scheme = gr.Markdown(elem_id="pe-scheme")  # which scheme the loaded model uses
                with gr.Row():
                    pe_model = plot("pe-model", "The loaded model's positions")
                    pe_model2 = plot("pe-model2", "The loaded model's positions (2)")
                with gr.Row():
                    pe_model3 = plot("pe-model3", "The loaded model's positions (3)")
                    pe_model4 = plot("pe-model4", "The loaded model's positions (4)")
                tab_text("sinusoid")
                with gr.Row():
                    pe_heat = plot("pe-heat", "Encoding")
                    pe_sim = plot("pe-sim", "Similarity of positions")
                pe_curves = plot("pe-curves", "Some dimensions over position")
            with gr.Tab("Importance", id="importance") as tab_importance:
                tab_text("importance")
                imp_btn = gr.Button("Rank the heads for the current sentences", variant="primary", elem_id="imp-run")
                imp_md = gr.Markdown()
                imp_plot = plot("importance-plot", "Head importance")
            with gr.Tab("Rollout", id="rollout") as tab_rollout:
                tab_text("rollout")
                rollout_plot = plot("rollout-plot", "Attention rollout")
            compare = compare_tab(start.sources if start else [], start.second if start else "",
                                  (start.second_kinds or {}) if start else {})
            with gr.Tab("API", id="api") as tab_api:
                gr.Markdown(API_TEXT)
        # Which tab is shown: an input of /analyze (only that tab's figures are drawn and sent; "all" for every tab).
        tab = gr.Textbox("attention", visible=False, elem_id="visible-tab", label="tab")
    tabs = dict(attention=tab_attention, overview=tab_overview, generation=tab_generation,
                positional=tab_positional, importance=tab_importance, rollout=tab_rollout, **heads.tabs,
                **contrib.tabs, compare=compare.tab_compare, api=tab_api)
    extra = {k: v for part in (heads, contrib) for k, v in vars(part).items() if k != "tabs"}
    return named(locals(), tabs=tabs, tab_strip=tab_strip, compare=compare, **extra)


@dataclass
class Page:
    """Every component the events read or write, by name."""

    demo: gr.Blocks
    session: gr.State
    kept: gr.State
    headline: gr.Markdown
    model: SimpleNamespace  # the sidebar
    inputs: SimpleNamespace
    controls: SimpleNamespace
    views: SimpleNamespace

    def all(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def layout(start: Start, session_value: Any) -> Page:
    with gr.Blocks(title="Transformer Explorer") as demo:
        session = gr.State(session_value)
        # A key to the last Run's result in the app's store of kept results, its request, the tab opened last
        # (explorer.app.kept.Shown): small, so no time to live; the store bounds the results by bytes.
        kept = gr.State(Shown())
        model = model_sidebar(start)
        with gr.Row(elem_id="title", equal_height=True):
            gr.Markdown("## Transformer Explorer", elem_id="title-text")
            headline = gr.Markdown(start.info.headline if start.info else "", elem_id="headline")
            copy_link = gr.Button("Copy link", size="sm", scale=0, min_width=90, elem_id="copy-link")
        gr.Markdown(INTRO, elem_classes="intro")
        inputs = input_rows(start)
        # A link that reopens this view (explorer.app.link): shown once made (the clipboard may be unavailable), and
        # a notice of what an opened link could not restore. link_query: the query the server built from the page.
        link_url = gr.Textbox(label="Link to this view", visible=False, max_lines=1, buttons=["copy"],
                              elem_id="link-url")
        link_notice = gr.Markdown(elem_id="link-notice")
        link_query = gr.Textbox(visible=False, elem_id="link-query", label="link query")
        inputs.copy_link, inputs.link_url, inputs.link_notice, inputs.link_query = (copy_link, link_url, link_notice,
                                                                                    link_query)
        with gr.Row(equal_height=False, elem_id="workspace"):  # on a phone: figures first (assets.CSS)
            ctl = controls(start)
            views = view_tabs(start.info is not None and start.info.language_model,
                              start.info is None or "decoder" in start.info.kinds,
                              start.info is None or "cross" in start.info.kinds, start)
    return Page(demo, session, kept, headline, model, inputs, ctl, views)


def launch_kwargs() -> dict[str, Any]:
    # run_history=False: Gradio 6 would otherwise keep every run's inputs and outputs (megabytes of plot
    # JSON) in the browser's localStorage, re-serialising the whole history after each click; that was
    # ~25% of the time from a click to the redrawn plots at 128 tokens (benchmarks/app_bench.py).
    # enable_monitoring=False: no /monitoring dashboard of the queue's event records (see demo.QUEUE_ENV).
    # state_session_capacity: Gradio keeps every session (browser tab or API client) until it is among the least
    # recently used beyond this many, closed or not: ~0.4 MB each here (a copy of the page's config, ~0.2 MB, the
    # components updated for its model, the kept result of its last Run: ~0.16 MB on the date models, up to ~10 MB at
    # 500 tokens for an hour). Gradio's default, 10,000, allows ~4 GB beside the models; 1,000 allows ~0.4 GB.
    # app_kwargs: the page's HTML starts with a script that stops Gradio's leaked timer loops (idle_timers).
    return dict(css=CSS, theme=gr.themes.Soft(), js=PAGE_JS, run_history=False, enable_monitoring=False,
                state_session_capacity=SESSION_CAPACITY, app_kwargs=dict(middleware=page_middleware()))

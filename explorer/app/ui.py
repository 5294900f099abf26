"""The Gradio layout and event wiring. All work happens in `handlers` (plain, testable functions);
this module turns component values into handler arguments and handler results into component
updates, and turns errors into a message in the page (never a traceback).

Per-session state (which model, on which device) is a gr.State dict; models are shared through
one `ModelRegistry` per app and only read.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import gradio as gr
import pandas as pd
import plotly.graph_objects as go
from gradio.components.plot import PlotData

from .. import viz
from ..checkpoints import CheckpointError
from ..model import PRESETS
from . import handlers as H
from .registry import ModelRegistry

log = logging.getLogger(__name__)

PLOT_CONFIG = {  # Plotly modebar: the camera button saves a PNG of the figure
    "displaylogo": False,
    "displayModeBar": True,
    "toImageButtonOptions": {"format": "png", "scale": 2},
    "modeBarButtonsToRemove": ["select2d", "lasso2d"],
}
# Clicking a tile of the overview opens that head: gr.Plot has no click event, so this page script
# listens to plotly_click on the overview and writes "layer,head,time" into a hidden textbox, whose
# change event runs on the server (explorer.app.handlers.clicked_tile; a script-set value fires no
# input event in Gradio 6, and the time stamp makes a second click on the same tile a change). Category names carry the
# numbers ("layer 2 · query …", "head 5 · key …"); gaps start with a zero-width space and are ignored.
TILE_CLICK_JS = """
() => {
  const bind = () => {
    const plot = document.querySelector('#overview-plot .js-plotly-plot');
    if (!plot || !plot.on || plot.__explorerTileClick) return;
    plot.__explorerTileClick = true;
    plot.on('plotly_click', (event) => {
      const point = event && event.points && event.points[0];
      if (!point) return;
      const layer = /^layer (\\d+) /.exec(String(point.y));
      const head = /^head (\\d+) /.exec(String(point.x));
      const box = document.querySelector('#overview-click textarea, #overview-click input');
      if (!layer || !head || !box) return;
      box.value = layer[1] + ',' + head[1] + ',' + Date.now();
      box.dispatchEvent(new Event('input', {bubbles: true}));
    });
  };
  new MutationObserver(bind).observe(document.body, {childList: true, subtree: true});
  bind();
}
"""
CSS = """
.gradio-container {max-width: 1400px !important}
#status {min-height: 1.5em}
.intro p {margin: 0.2em 0}
.heads label {padding: 2px 6px !important; font-size: 12px !important; min-height: 0 !important}
.heads .wrap {gap: 4px !important}
"""

INTRO = ("Type a sentence, switch attention heads off and change the masks, and compare the model's output and "
         "attention with and without your changes. Start with the shipped date translator: it reads a date written "
         "in one of seven languages and writes it as YYYY-MM-DD, one character at a time.")
TAB_TEXT = {
    "attention": ("**Left:** the mask (dark = may attend, light = blocked) of the attention kind chosen under *Heads*. "
                  "**Right:** what the chosen head attends to with your toggles; below it the same head without any "
                  "toggle, and the difference (red = more attention with the toggles). Switch a head off and watch "
                  "a later layer's difference map and the output table."),
    "overview": ("Every head of every layer at once: rows are layers, columns are heads, each tile is one head's "
                 "query × key attention. Switched-off heads are faded and marked *off*. Click a tile (or pick a "
                 "layer and head under *Heads*) to open that head large below."),
    "generation": ("How the answer was written, one token at a time (with your toggles). Each row is one generated "
                   "token; it shows which earlier tokens (left) and which source characters (right) the chosen head "
                   "read when producing it. Try the causal-mask toggle: without it the decoder can peek ahead."),
    "positional": ("The sinusoidal positional encoding of *Attention Is All You Need*: each position gets a vector of "
                   "sines and cosines at geometrically spaced frequencies. Change d_model, the number of positions and "
                   "the base; the similarity map shows that nearby positions get similar vectors. If the loaded model "
                   "learned its own position table, it is shown last."),
    "importance": ("How much the model's output moves when each head is switched off, one head at a time (exact), "
                   "next to a one-pass gradient estimate (Michel et al., 2019). Heads at the top of the ranking are "
                   "good ones to switch off in the *Attention* tab."),
    "rollout": ("Attention rollout (Abnar & Zuidema, 2020) multiplies the head-averaged attention of successive "
                "layers, with the residual connection, to estimate which input tokens each position draws on by the "
                "last layer. Switched-off heads are left out; use the slider to move through the layers."),
}


# ---------------------------------------------------------------------------------------- helpers
def plot(fig: go.Figure | None) -> PlotData | None:
    """A figure for gr.Plot with the modebar config (PNG download) attached."""
    if fig is None:
        return None
    return PlotData(type="plotly", plot=viz.figure_json(fig, PLOT_CONFIG))  # one walk, no copy of the figure


def frame(headers: list[str], rows: list[list[Any]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=headers)


def user_message(err: BaseException) -> str:
    """A short message for the page; unexpected errors are logged with their traceback."""
    if isinstance(err, (H.AppError, CheckpointError)):
        return str(err)
    log.exception("unexpected error in an app handler")
    return f"Something went wrong ({type(err).__name__}). The details are in the server log."


def failure(err: BaseException, n_outputs: int) -> tuple:
    msg = user_message(err)
    gr.Warning(msg)
    return ("⚠️ " + H.escape_md(msg),) + tuple(gr.skip() for _ in range(n_outputs - 1))


def settings_from(padding: bool, causal: bool, custom: str, block_token: Any, window: Any,
                  enc: Sequence[str] | None, dec: Sequence[str] | None, cross: Sequence[str] | None) -> H.Settings:
    try:
        block, win = int(block_token or 0), int(window or 0)
    except (TypeError, ValueError) as err:
        raise H.AppError(f"mask settings must be whole numbers: {err}") from err
    return H.Settings(padding=bool(padding), causal=bool(causal), custom=custom or "none", block_token=block,
                      window=win, heads={"encoder": list(enc or []), "decoder": list(dec or []),
                                         "cross": list(cross or [])})


# ---------------------------------------------------------------------------------------- the app
def build_demo(*, allowed_dirs: Sequence[str] = (), device: str = "auto", checkpoint: str | None = None,
               registry: ModelRegistry | None = None) -> gr.Blocks:
    """The whole app. `checkpoint`: the model sessions start with (default: date-translator)."""
    registry = registry or ModelRegistry(capacity=3)
    allowed = [str(d) for d in allowed_dirs]
    start = checkpoint or H.default_source()
    try:
        from ..loading import shipped_names
        shipped = shipped_names()
    except Exception:  # pragma: no cover
        shipped = []
    sources = list(dict.fromkeys([*shipped, H.MINILM] + ([start] if start not in shipped else [])))
    devices = H.device_choices()
    if device not in devices:
        log.warning("device %r is not available here (%s); using auto", device, H.device_note())
        device = "auto"

    # The head checkboxes start with the first model's heads, so API clients can call /analyze at once.
    try:
        session0 = H.new_session(start, device)
        first = H.model_info(session0, H.get_bundle(session0, registry, allowed))
    except Exception as err:  # noqa: BLE001 - the page still opens and shows the problem on load
        log.warning("could not load the starting model %s: %s", start, err)
        first = None
    heads0 = first.heads if first else {}

    with gr.Blocks(title="Transformer Explorer") as demo:
        session = gr.State(H.new_session(start, device))
        gr.Markdown("# Transformer Explorer")
        gr.Markdown(INTRO, elem_classes="intro")

        # ---------------------------------------------------------------- model
        with gr.Accordion("Model", open=True), gr.Row():
            with gr.Column(scale=3), gr.Tabs():
                with gr.Tab("Load a model"):
                    with gr.Row():
                        source = gr.Dropdown(sources, value=start, label="Shipped checkpoint or known model",
                                             scale=2, allow_custom_value=True)
                        custom_source = gr.Textbox(
                            label="…or a Hugging Face Hub id" + (" / local folder" if allowed else ""),
                            placeholder="owner/name, e.g. " + H.MINILM, scale=3, max_lines=1)
                    with gr.Row():
                        device_in = gr.Dropdown(devices, value=device, label="Device",
                                                info=H.device_note(), scale=2)
                        load_btn = gr.Button("Load model", variant="primary", scale=1)
                with gr.Tab("Build a fresh model"):
                    with gr.Row():
                        preset = gr.Dropdown(["custom", *PRESETS], value="custom", label="Preset")
                        arch = gr.Dropdown(["encoder-decoder", "decoder", "encoder"], value="encoder-decoder",
                                           label="Architecture")
                        norm = gr.Radio(["pre-norm", "post-norm"], value="pre-norm", label="LayerNorm")
                        pos = gr.Dropdown(["sinusoidal", "learned", "none"], value="sinusoidal",
                                          label="Positional encoding")
                    with gr.Row():
                        n_layers = gr.Number(2, label="Layers", precision=0, minimum=1, maximum=24)
                        n_heads = gr.Number(4, label="Heads", precision=0, minimum=1, maximum=32)
                        d_model = gr.Number(64, label="d_model", precision=0, minimum=1, maximum=2048)
                        d_ff = gr.Number(256, label="d_ff", precision=0, minimum=1, maximum=8192)
                        seed = gr.Number(0, label="Seed", precision=0)
                    with gr.Row():
                        build_device = gr.Dropdown(devices, value=device, label="Device", info=H.device_note())
                        build_btn = gr.Button("Build model", variant="primary")
                    gr.Markdown("A built model has random weights and the date character tokenizer; its "
                                f"size is limited to {H.MAX_BUILD_PARAMETERS:,} parameters.")
            with gr.Column(scale=2):
                model_md = gr.Markdown(first.markdown if first else "Loading the model …", elem_id="model-info")

        # ---------------------------------------------------------------- input and masks
        with gr.Row():
            with gr.Column(scale=3):
                ex0 = first.examples if first else []
                text1 = gr.Textbox(ex0[0] if ex0 else "", label="Sentence", lines=1, max_lines=4, elem_id="text1")
                text2 = gr.Textbox(label="Second sentence (optional): batched with the first, so the shorter one "
                                         "is padded and the padding mask matters", value=ex0[1] if len(ex0) > 1 else "",
                                   lines=1, max_lines=4, elem_id="text2")
                with gr.Row():
                    ex1 = gr.Dropdown(ex0, label="Example for sentence 1", value=None, allow_custom_value=True)
                    ex2 = gr.Dropdown(ex0, label="Example for sentence 2", value=None, allow_custom_value=True)
                analyze_btn = gr.Button("Run", variant="primary", elem_id="run")
                status = gr.Markdown(elem_id="status", label="status")
            with gr.Column(scale=2):
                gr.Markdown("**Masks** (what each token may attend to)")
                padding = gr.Checkbox(True, label="Padding mask (ignore [PAD] tokens)", elem_id="padding")
                causal = gr.Checkbox(True, label="Causal mask in decoder self-attention (no looking ahead)",
                                     elem_id="causal")
                custom = gr.Radio(list(H.CUSTOM_MASKS), value="none", label="Custom mask on the first stack's "
                                  "self-attention", elem_id="custom-mask")
                with gr.Row():
                    block_token = gr.Number(0, label="Blocked position", precision=0, minimum=0)
                    window = gr.Slider(0, 16, value=2, step=1, label="Window k")

        # ---------------------------------------------------------------- heads
        with gr.Accordion("Heads (checked = on)", open=True):
            with gr.Row():
                kinds0 = first.kinds if first else []
                kind = gr.Dropdown(kinds0, value="cross" if "cross" in kinds0 else (kinds0 or [None])[0],
                                   label="Attention shown", scale=2, elem_id="kind", allow_custom_value=True)
                layer = gr.Dropdown(list(range(first.n_layers if first else 1)), value=0, label="Layer", scale=1,
                                    elem_id="layer", allow_custom_value=True)
                head = gr.Dropdown(list(range(first.n_heads if first else 1)), value=0, label="Head", scale=1,
                                   elem_id="head", allow_custom_value=True)
                sentence = gr.Radio([1, 2], value=1, label="Sentence shown", scale=1)
                all_on = gr.Button("All heads on", scale=1)
                only_this = gr.Button("Only this head", scale=1)
            groups = {}
            for k, label, eid in (("encoder", "Encoder self-attention heads", "enc-heads"),
                                  ("decoder", "Decoder self-attention heads", "dec-heads"),
                                  ("cross", "Cross-attention heads", "cross-heads")):
                labels = heads0.get(k, [])
                groups[k] = gr.CheckboxGroup(labels, value=labels, label=label, visible=bool(labels) or not heads0,
                                             elem_id=eid, elem_classes="heads")
            enc_heads, dec_heads, cross_heads = groups["encoder"], groups["decoder"], groups["cross"]

        # ---------------------------------------------------------------- views
        with gr.Tabs():
            with gr.Tab("Attention & output", id="attention"):
                gr.Markdown(TAB_TEXT["attention"])
                output_md = gr.Markdown(elem_id="output-summary", label="output summary")
                output_df = gr.Dataframe(label="Output: baseline vs toggled", interactive=False, wrap=True,
                                         elem_id="output-table")
                with gr.Row():
                    mask_plot = gr.Plot(label="Mask", show_label=False, elem_id="mask-plot")
                    head_plot = gr.Plot(label="Attention with the toggles", show_label=False, elem_id="head-plot")
                with gr.Row():
                    baseline_plot = gr.Plot(label="Attention without toggles", show_label=False,
                                            elem_id="baseline-plot")
                    diff_plot = gr.Plot(label="Difference", show_label=False, elem_id="diff-plot")
                tokens_df = gr.Dataframe(label="Tokens and ids", interactive=False, elem_id="tokens", max_height=300)
            with gr.Tab("All heads", id="overview"):
                gr.Markdown(TAB_TEXT["overview"])
                overview_plot = gr.Plot(label="All layers × heads", show_label=False, elem_id="overview-plot")
                tile_click = gr.Textbox(visible="hidden", elem_id="overview-click", label="clicked tile")
                large_plot = gr.Plot(label="The chosen head", show_label=False, elem_id="large-plot")
            with gr.Tab("Generation", id="generation"):
                gr.Markdown(TAB_TEXT["generation"])
                with gr.Row():
                    gen_self = gr.Plot(label="Decoder self-attention per generated token", show_label=False,
                                       elem_id="gen-self")
                    gen_cross = gr.Plot(label="Cross-attention per generated token", show_label=False,
                                        elem_id="gen-cross")
            with gr.Tab("Positional encodings", id="positional"):
                gr.Markdown(TAB_TEXT["positional"])
                with gr.Row():
                    pe_d = gr.Number(64, label="d_model", precision=0, minimum=2, maximum=H.POSITIONAL_MAX["d_model"])
                    pe_len = gr.Number(64, label="positions", precision=0, minimum=2,
                                       maximum=H.POSITIONAL_MAX["length"])
                    pe_base = gr.Number(10000, label="base", minimum=1.01)
                    pe_btn = gr.Button("Show", variant="primary")
                with gr.Row():
                    pe_heat = gr.Plot(label="Encoding", show_label=False, elem_id="pe-heat")
                    pe_sim = gr.Plot(label="Similarity of positions", show_label=False, elem_id="pe-sim")
                with gr.Row():
                    pe_curves = gr.Plot(label="Some dimensions over position", show_label=False, elem_id="pe-curves")
                    pe_model = gr.Plot(label="The loaded model's position table", show_label=False, elem_id="pe-model")
            with gr.Tab("Head importance", id="importance"):
                gr.Markdown(TAB_TEXT["importance"])
                imp_btn = gr.Button("Rank the heads for the current sentences", variant="primary")
                imp_md = gr.Markdown(label="importance summary")
                imp_plot = gr.Plot(label="Head importance", show_label=False, elem_id="importance-plot")
            with gr.Tab("Rollout", id="rollout"):
                gr.Markdown(TAB_TEXT["rollout"])
                rollout_plot = gr.Plot(label="Attention rollout", show_label=False, elem_id="rollout-plot")
            with gr.Tab("API", id="api"):
                gr.Markdown(API_TEXT)

        # ---------------------------------------------------------------- events
        model_outputs = [status, session, model_md, ex1, ex2, text1, text2, enc_heads, dec_heads, cross_heads,
                         kind, layer, head]

        def info_updates(info: H.ModelInfo, message: str) -> tuple:
            ex = info.examples
            groups = []
            for k in ("encoder", "decoder", "cross"):
                labels = info.heads.get(k, [])
                groups.append(gr.update(choices=labels, value=labels, visible=bool(labels)))
            first = info.examples[0] if ex else ""
            second = info.examples[1] if len(ex) > 1 else ""
            return (message, info.session, info.markdown,
                    gr.update(choices=ex, value=None), gr.update(choices=ex, value=None),
                    first, second, *groups,
                    gr.update(choices=info.kinds, value="cross" if "cross" in info.kinds else info.kinds[0]),
                    gr.update(choices=list(range(info.n_layers)), value=0),
                    gr.update(choices=list(range(info.n_heads)), value=0))

        def do_load(source: str, hub_id_or_folder: str, device: str, progress=gr.Progress()):
            try:
                src = (hub_id_or_folder or "").strip() or source
                info = H.load_model(src, device, registry, allowed_dirs=allowed,
                                    progress=lambda f, d="": progress(f, desc=d))
                return info_updates(info, f"Loaded {H.escape_md(src)}.")
            except Exception as err:  # noqa: BLE001 - every error becomes a message
                return failure(err, len(model_outputs))

        def do_build(preset, arch, n_layers, n_heads, d_model, d_ff, norm, positional, seed, device,
                     progress=gr.Progress()):
            try:
                settings = dict(preset=preset, arch=arch, n_layers=n_layers, n_heads=n_heads, d_model=d_model,
                                d_ff=d_ff, norm=norm, positional=positional, seed=seed if seed is not None else 0)
                if any(settings[k] is None for k in ("n_layers", "n_heads", "d_model", "d_ff")):
                    raise H.AppError("Fill in layers, heads, d_model and d_ff.")
                info = H.build_model(settings, device, registry, progress=lambda f, d="": progress(f, desc=d))
                return info_updates(info, "Built a fresh model with random weights.")
            except Exception as err:  # noqa: BLE001
                return failure(err, len(model_outputs))

        def do_init(sess: dict, progress=gr.Progress()):
            """Page load: describe the session's model (loading it if needed)."""
            try:
                bundle = H.get_bundle(sess, registry, allowed, progress=lambda f, d="": progress(f, desc=d))
                return info_updates(H.model_info(sess, bundle), "")
            except Exception as err:  # noqa: BLE001
                return failure(err, len(model_outputs))

        analysis_outputs = [status, tokens_df, output_md, output_df, mask_plot, head_plot, baseline_plot, diff_plot,
                            overview_plot, large_plot, gen_self, gen_cross, rollout_plot]

        def do_analyze(sess, sentence1, sentence2, padding_mask, causal_mask, custom_mask, blocked_position, window,
                       encoder_heads_on, decoder_heads_on, cross_heads_on, kind, layer, head, sentence):
            try:
                bundle = H.get_bundle(sess, registry, allowed)
                settings = settings_from(padding_mask, causal_mask, custom_mask, blocked_position, window,
                                         encoder_heads_on, decoder_heads_on, cross_heads_on)
                view = H.View(kind or "", int(layer or 0), int(head or 0), int(sentence or 1))
                a = H.analyze(bundle, sentence1, sentence2, settings, view)
                return (a.status, frame(*a.tokens), a.output_summary, frame(*a.output), plot(a.mask_fig),
                        plot(a.head_fig), plot(a.baseline_fig), plot(a.diff_fig), plot(a.overview_fig),
                        plot(a.head_fig), plot(a.gen_self_fig), plot(a.gen_cross_fig), plot(a.rollout_fig))
            except Exception as err:  # noqa: BLE001
                return failure(err, len(analysis_outputs))

        def do_positional(sess, d_model, positions, base):
            try:
                try:
                    bundle = H.get_bundle(sess, registry, allowed)
                except Exception:  # noqa: BLE001 - the sinusoidal views need no model
                    bundle = None
                figs = H.positional(bundle, d_model, positions, base)
                return ("",) + tuple(plot(f) for f in figs)
            except Exception as err:  # noqa: BLE001
                return failure(err, 5)

        def do_importance(sess, sentence1, sentence2, padding_mask, causal_mask, custom_mask, blocked_position,
                          window, kind):
            try:
                bundle = H.get_bundle(sess, registry, allowed)
                settings = settings_from(padding_mask, causal_mask, custom_mask, blocked_position, window,
                                         None, None, None)
                fig, md = H.importance(bundle, sentence1, sentence2, settings, kind or "")
                return "", md, plot(fig)
            except Exception as err:  # noqa: BLE001
                return failure(err, 3)

        analysis_inputs = [session, text1, text2, padding, causal, custom, block_token, window, enc_heads, dec_heads,
                           cross_heads, kind, layer, head, sentence]
        build_inputs = [preset, arch, n_layers, n_heads, d_model, d_ff, norm, pos, seed, build_device]
        pe_inputs = [session, pe_d, pe_len, pe_base]
        pe_outputs = [status, pe_heat, pe_curves, pe_sim, pe_model]
        private = dict(api_visibility="private")

        load_btn.click(do_load, [source, custom_source, device_in], model_outputs, api_name="load_model").then(
            do_analyze, analysis_inputs, analysis_outputs, **private).then(
            do_positional, pe_inputs, pe_outputs, **private)
        build_btn.click(do_build, build_inputs, model_outputs, api_name="build_model").then(
            do_analyze, analysis_inputs, analysis_outputs, **private).then(
            do_positional, pe_inputs, pe_outputs, **private)
        demo.load(do_init, [session], model_outputs, **private).then(
            do_analyze, analysis_inputs, analysis_outputs, **private).then(
            do_positional, pe_inputs, pe_outputs, **private)

        analyze_btn.click(do_analyze, analysis_inputs, analysis_outputs, api_name="analyze")
        for trigger in (text1.submit, text2.submit, padding.input, causal.input, custom.input, block_token.submit,
                        window.release, enc_heads.input, dec_heads.input, cross_heads.input, kind.input, layer.input,
                        head.input, sentence.input):
            trigger(do_analyze, analysis_inputs, analysis_outputs, trigger_mode="always_last", **private)
        ex1.input(lambda v: v or gr.skip(), [ex1], [text1], **private).then(
            do_analyze, analysis_inputs, analysis_outputs, **private)
        ex2.input(lambda v: v or gr.skip(), [ex2], [text2], **private).then(
            do_analyze, analysis_inputs, analysis_outputs, **private)

        def set_heads(mode: str, sess, kind_v, layer_v, head_v):
            try:
                bundle = H.get_bundle(sess, registry, allowed)
                kinds = bundle.config.attention_kinds()
                out = []
                for k in ("encoder", "decoder", "cross"):
                    labels = H.head_labels(*kinds[k]) if k in kinds else []
                    if mode == "only" and k == (kind_v or next(iter(kinds))):
                        out.append([f"L{int(layer_v or 0)} H{int(head_v or 0)}"])
                    else:
                        out.append(labels)
                return ("", *out)
            except Exception as err:  # noqa: BLE001
                return failure(err, 4)

        head_outputs = [status, enc_heads, dec_heads, cross_heads]
        all_on.click(lambda *a: set_heads("all", *a), [session, kind, layer, head], head_outputs, **private).then(
            do_analyze, analysis_inputs, analysis_outputs, **private)
        only_this.click(lambda *a: set_heads("only", *a), [session, kind, layer, head], head_outputs,
                        **private).then(do_analyze, analysis_inputs, analysis_outputs, **private)

        def fill_preset(name: str):
            if name not in PRESETS:
                return (gr.skip(),) * 7
            p = H.preset_settings(name)
            return p["arch"], p["n_layers"], p["n_heads"], p["d_model"], p["d_ff"], p["norm"], p["positional"]

        def choose_tile(message: str):
            tile = H.clicked_tile(message)
            return (gr.skip(), gr.skip()) if tile is None else tile

        tile_click.change(choose_tile, [tile_click], [layer, head], **private).then(
            do_analyze, analysis_inputs, analysis_outputs, **private)

        preset.input(fill_preset, [preset], [arch, n_layers, n_heads, d_model, d_ff, norm, pos], **private)
        pe_btn.click(do_positional, pe_inputs, pe_outputs, api_name="positional")
        imp_btn.click(do_importance, [session, text1, text2, padding, causal, custom, block_token, window, kind],
                      [status, imp_md, imp_plot], api_name="importance")
    return demo


API_TEXT = """
Every main action is a named endpoint (`/load_model`, `/build_model`, `/analyze`, `/positional`, `/importance`).
From Python, with `pip install gradio_client`:

```python
from gradio_client import Client

client = Client("http://127.0.0.1:7860/")          # or "owner/space-name" for a Space
client.predict("date-translator", "", "auto", api_name="/load_model")
heads = [f"L{l} H{h}" for l in range(2) for h in range(4)]
result = client.predict(
    "samedi 21 novembre 2026", "21. November 2026",  # sentence 1, sentence 2
    True, True, "none", 0, 2,      # padding mask, causal mask, custom mask, blocked position, window k
    heads, heads, [],              # heads ON: encoder, decoder, cross (every cross-attention head off)
    "cross", 1, 0, 1,              # view: attention kind, layer, head, sentence
    api_name="/analyze")
print(result[3]["data"])           # baseline vs toggled answers with per-token probabilities
```

`/analyze` returns the status, the token table, the output summary and table, then the figures as Plotly JSON.
Each client keeps its own session, so the model chosen with `/load_model` is the one `/analyze` uses.
Save any figure as PNG with the camera button of its toolbar.
"""


def queue_and_return(demo: gr.Blocks, concurrency: int = 4, max_size: int = 64) -> gr.Blocks:
    return demo.queue(default_concurrency_limit=concurrency, max_size=max_size)


def launch_kwargs() -> dict[str, Any]:
    # run_history=False: Gradio 6 would otherwise keep every run's inputs and outputs (megabytes of plot
    # JSON) in the browser's localStorage, re-serialising the whole history after each click; that was
    # ~25% of the time from a click to the redrawn plots at 128 tokens (benchmarks/app_bench.py).
    return dict(css=CSS, theme=gr.themes.Soft(), js=TILE_CLICK_JS, run_history=False)

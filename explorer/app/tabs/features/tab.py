"""The Features tab: sentence 1 read through a sparse autoencoder (SAE) at one point of the residual stream: the
strongest latents at every token, the reconstruction on this sentence, and a latent's dashboard (a click on the
heatmap); latents switched off, clamped or added like heads (baseline vs switched output); and steering from a
contrast (ActAdd), which needs no SAE. explorer.app.tabs.features.result computes, explorer.app.tabs.features.text
draws, the SAEs come from explorer.app.tabs.features.sae_store (the shipped SAEs of the loaded model, or a typed name
through the allow-list).

Named events (the HTTP API, docs/features.md): /features, /switch_latents, /steer; their parameters are the fields of
`FeatureForm`, `SwitchForm`, `SteerForm`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from ....interpret.sae import LatentSwitches
from ...forms import endpoint, form_inputs
from ...i18n.result_words import updates_in
from ...link.values import show
from ...page.assets import plot
from ...serving.errors import AppError
from ...serving.handlers import PRIVATE, reporting
from ...serving.session import get_model
from ..base import LinkKey, Tab, TabEvents
from .click import SCRIPT
from .dashboards import cached
from .forms import (DEFAULT_COEFFICIENT, NO_SAE, FeatureForm, LatentClick, SteerForm, SwitchForm, coefficient_key,
                    latent_key, layer_key, read_key, sae_key, sae_source, switches_key, text_key, whole_or_none)
from .result import (FeatureRequest, SwitchRequest, feature_bytes, features, most_tokens, outputs_bytes, steer,
                     switch_latents)
from .sae_store import SAESource, sae_choice, saes_for, shared_sae
from .switch_state import NONE, switches_line, with_switch
from .text import (TOKEN_HEADERS, latent_figures, latent_markdown, output_markdown, output_table, reading_heatmap,
                   reading_markdown, token_rows)


@dataclass
class FeatureParts:
    sae: gr.Dropdown
    latent: gr.Number
    run_btn: gr.Button
    summary: gr.Markdown
    heatmap: gr.Plot
    click: gr.Textbox  # the page script writes a clicked cell's "latent|time" here
    latent_md: gr.Markdown
    strip: gr.Plot
    hist: gr.Plot
    examples: gr.HTML
    tokens: gr.Dataframe
    switches: gr.Textbox
    mode: gr.Radio
    value: gr.Number
    add_btn: gr.Button
    switch_btn: gr.Button
    contrast: gr.Textbox
    toward: gr.Textbox
    layer: gr.Number
    coefficient: gr.Number
    steer_btn: gr.Button
    out_md: gr.Markdown
    out_df: gr.Dataframe
    switch_state: gr.Markdown  # the latents switched now, in words (switch_state)
    clear_btn: gr.Button  # sets the switches back to none
    read_key: gr.State  # what the reading shown was read on (auto_read reads again only when it changed)

    def reading(self) -> list[Any]:
        return [self.summary, self.heatmap, self.latent, self.latent_md, self.strip, self.hist, self.examples,
                self.tokens]


class FeatureEvents(TabEvents):
    parts: FeatureParts

    def tokens_of(self, session: Any, text: Any) -> int:
        return most_tokens(get_model(session, self.ctx), text, self.ctx.max_tokens)

    @reporting
    def read(self, form: FeatureForm) -> dict:
        return self._read(form)

    @reporting
    def clicked(self, message: Any, session: Any, text: Any, sae: Any, lang: Any = "en") -> dict:
        """A heatmap cell clicked (`LatentClick`): that latent's dashboard, in the page's language."""
        try:
            latent = LatentClick.parse(message).latent
        except ValueError:
            return {self.status: gr.skip()}  # not a message the page script wrote
        return updates_in(self._read(FeatureForm(session, text, sae, latent)), lang)

    def _read(self, form: FeatureForm) -> dict:
        loaded = get_model(form.session, self.ctx)
        source = sae_source(form.session, form.sae, self.ctx.allowed_dirs)
        p = self.parts
        if source is None:
            return {self.status: "", p.summary: NO_SAE, p.heatmap: None, p.latent_md: "", p.strip: None,
                    p.hist: None, p.examples: "", p.tokens: None}
        request = FeatureRequest(form.session.key, form.session.source, str(form.sentence1 or ""), source,
                                 whole_or_none(form.latent, "latent"))
        sae = shared_sae(source, loaded.model.device)  # loaded once per process; its width bounds the gate's estimate
        need = feature_bytes(loaded, sae, self.tokens_of(form.session, form.sentence1),
                             cached(request.model_key, source.key))
        with self.ctx.gate.hold(need):
            r = self.compute.call(features, form.session, request)
        strip, hist, examples = latent_figures(r)
        return {self.status: "", p.summary: reading_markdown(r), p.heatmap: plot(reading_heatmap(r)),
                p.latent: r.latent, p.latent_md: latent_markdown(r), p.strip: plot(strip), p.hist: plot(hist),
                p.examples: examples, p.tokens: pd.DataFrame(token_rows(r), columns=TOKEN_HEADERS)}

    @reporting
    def auto_read(self, *values: Any) -> dict:
        """The tab opened, or a Run while shown: the reading and the output (as switched) if sentence 1, the model
        or the SAE changed since the last reading, in the form's language. A model without an SAE: what to do."""
        *fields, tab, last = values
        form = SwitchForm(*fields)
        key = read_key(form.session, form.sentence1, form.sae)
        if tab != FeaturesTab.id or key == last:
            return {self.status: gr.skip()}
        read = self._read(FeatureForm(form.session, form.sentence1, form.sae))
        has_sae = sae_source(form.session, form.sae, self.ctx.allowed_dirs) is not None
        return updates_in({**read, **(self._switch(form) if has_sae else {}), self.parts.read_key: key}, form.lang)

    @reporting
    def switch(self, form: SwitchForm) -> dict:
        return self._switch(form)

    @reporting
    def after_read(self, *values: Any) -> dict:
        """After the tab's button: the output as switched (the model's own when none), if there is an SAE."""
        form = SwitchForm(*values)
        if sae_source(form.session, form.sae, self.ctx.allowed_dirs) is None:
            return {self.status: gr.skip()}
        return updates_in(self._switch(form), form.lang)

    def _switch(self, form: SwitchForm) -> dict:
        source = sae_source(form.session, form.sae, self.ctx.allowed_dirs)
        if source is None:
            raise AppError(NO_SAE)
        try:
            switches = LatentSwitches.parse(str(form.switches or "")).format()
        except ValueError as err:
            raise AppError(f"Latent switches: {err}") from None
        request = SwitchRequest(form.session.source, str(form.sentence1 or ""), source, switches,
                                whole_or_none(form.continue_tokens, "number of tokens"))
        return self.compared(form.session, form.sentence1, switch_latents, request)

    @reporting
    def steer(self, form: SteerForm) -> dict:
        return self.compared(form.session, form.sentence1, steer, form.request())

    def compared(self, session: Any, text: Any, fn: Any, request: Any) -> dict:
        loaded = get_model(session, self.ctx)
        with self.ctx.gate.hold(outputs_bytes(loaded, self.tokens_of(session, text))):
            out = self.compute.call(fn, session, request)
        headers, rows = output_table(out)
        return {self.status: "", self.parts.out_md: output_markdown(out),
                self.parts.out_df: pd.DataFrame(rows, columns=headers)}

    @reporting
    def add_switch(self, switches: Any, latent: Any, mode: Any, value: Any) -> dict:
        """The latent shown, switched as chosen, in the switches text (replacing a switch of the same latent)."""
        return {self.status: "", self.parts.switches: with_switch(switches, latent, mode, value)}

    def fit_to_model(self, session: Any, current: Any) -> dict:
        """A new model: the SAE dropdown lists its shipped SAEs; a typed SAE (not a shipped one) stays."""
        choices, value = sae_choice(getattr(session, "source", ""), current)
        return {self.parts.sae: gr.update(choices=choices, value=value)}


class FeaturesTab(Tab):
    id = "features"
    title = "Features"
    computed_by = "opening it, and each Run while it is shown (its button reads again)"
    opens_computed = True  # a link to it: computed by the Run that follows, its button not pressed
    result = "features-summary"
    help = ("Sentence 1 read through a sparse autoencoder (SAE) at one point of the residual stream: the strongest "
            "latents at every token and how well the SAE rebuilds this sentence; click a cell for that latent's "
            "dashboard (its activation here, its top examples and histogram over the model's own examples, the "
            "tokens it promotes and suppresses). Switch latents off, clamp or add them like heads, or steer from a "
            "contrast (no SAE needed): baseline vs changed output below. Positions count from 0.")
    button = "features-run"
    script = SCRIPT
    link_keys = (LinkKey("sae", "sae", sae_key, "the SAE: a shipped SAE's name, an allowed folder or a Hub repo's "
                                                "folder `owner/name/path` (checked like a model name)"),
                 LinkKey("latent", "latent", latent_key, "the latent whose dashboard is shown"),
                 LinkKey("switches", "switches", switches_key, "latents switched: `12:off,40:clamp=3.5,7:add=-2`"),
                 LinkKey("contrast", "contrast", text_key, "steering: the contrast text"),
                 LinkKey("toward", "toward", text_key, "steering: the text steered toward (blank: sentence 1)"),
                 LinkKey("steer_layer", "layer", layer_key, "steering: the layer whose input gets the vector"),
                 LinkKey("coefficient", "coefficient", coefficient_key, "steering: the vector's coefficient"))

    def layout(self, start: Any) -> FeatureParts:
        shipped = saes_for(start.source)
        with gr.Row(equal_height=False):
            sae = gr.Dropdown(shipped, value=shipped[0] if shipped else None, allow_custom_value=True, label="SAE",
                              elem_id="features-sae", scale=3, min_width=200,
                              info="shipped for this model, or type an allowed folder / Hub repo/folder")
            latent = gr.Number(None, label="Latent", precision=0, minimum=0, elem_id="features-latent", min_width=90,
                               info="blank: the strongest at the end")
            run_btn = gr.Button("Read features", variant="primary", elem_id="features-run", scale=0, min_width=130)
        summary = gr.Markdown(elem_id="features-summary")
        heatmap = gr.Plot(label="Latents per token", show_label=False, elem_id="features-heatmap")
        click = gr.Textbox(visible="hidden", elem_id="features-click", label="clicked latent")
        latent_md = gr.Markdown(elem_id="features-latent-summary")
        with gr.Row(equal_height=False):
            strip = gr.Plot(label="Along the sentence", show_label=False, elem_id="features-strip", min_width=300)
            hist = gr.Plot(label="Over the example set", show_label=False, elem_id="features-hist", min_width=300)
        examples = gr.HTML(elem_id="features-examples", label="Top examples")
        tokens = gr.Dataframe(label="Tokens its decoder row promotes and suppresses", interactive=False,
                              elem_id="features-tokens", max_height=320)
        with gr.Row(equal_height=False):
            switches = gr.Textbox(label="Latent switches", max_lines=1, elem_id="features-switches", scale=3,
                                  placeholder="12:off,40:clamp=3.5,7:add=-2", min_width=200)
            mode = gr.Radio(["off", "clamp", "add"], value="off", label="This latent", elem_id="features-mode",
                            min_width=170)
            value = gr.Number(0.0, label="Value (clamp / add)", elem_id="features-value", min_width=110)
            add_btn = gr.Button("Switch it", elem_id="features-add", scale=0, min_width=100)
            switch_btn = gr.Button("Run with the switches", variant="primary", elem_id="features-switch", scale=0,
                                   min_width=150)
        with gr.Row(equal_height=True):
            switch_state = gr.Markdown(NONE, elem_id="features-switch-state")
            clear_btn = gr.Button("Clear the switches", elem_id="features-clear", size="sm", scale=0, min_width=140)
        read_key = gr.State("")
        with gr.Accordion("Steer from a contrast (ActAdd, Turner et al. 2023): no SAE needed", open=False,
                          elem_id="features-steering"):
            with gr.Row(equal_height=False):
                contrast = gr.Textbox(label="Contrast text", max_lines=1, elem_id="features-contrast", min_width=160)
                toward = gr.Textbox(label="Steer toward (blank: sentence 1)", max_lines=1, elem_id="features-toward",
                                    min_width=160)
                layer = gr.Number(0, label="At the input of layer", precision=0, minimum=0, elem_id="features-layer",
                                  min_width=90)
                coefficient = gr.Number(DEFAULT_COEFFICIENT, label="Coefficient", elem_id="features-coefficient",
                                        min_width=90)
                steer_btn = gr.Button("Steer", variant="primary", elem_id="features-steer", scale=0, min_width=90)
        out_md = gr.Markdown(elem_id="features-output-summary")
        out_df = gr.Dataframe(label="Output: baseline vs switched (or steered)", interactive=False, wrap=True,
                              elem_id="features-output", max_height=360)
        return FeatureParts(sae, latent, run_btn, summary, heatmap, click, latent_md, strip, hist, examples, tokens,
                            switches, mode, value, add_btn, switch_btn, contrast, toward, layer, coefficient,
                            steer_btn, out_md, out_df, switch_state, clear_btn, read_key)

    def wire(self, parts: FeatureParts, app: Any) -> FeatureEvents:
        ev, page, p = FeatureEvents(app, parts), app.page, parts
        session, text, lang = page.session, page.setting("sentence1"), page.setting("lang")
        outputs = [app.status, p.out_md, p.out_df]
        switch_inputs = form_inputs(SwitchForm, page, own=p)
        read = p.run_btn.click(endpoint(FeatureForm, ev.read, "features"), form_inputs(FeatureForm, page, own=p),
                               [app.status, *p.reading()], api_name="features",
                               api_description="Sentence 1 through a sparse autoencoder (SAE): its latents per "
                                               "token and one latent's dashboard.")
        p.switch_btn.click(endpoint(SwitchForm, ev.switch, "switch_latents"), switch_inputs, outputs,
                           api_name="switch_latents",
                           api_description="The output with SAE latents switched off, clamped or added, beside the "
                                           "baseline.")
        # (`layer` is the tab's own: the layer steered at, not the page's)
        p.steer_btn.click(endpoint(SteerForm, ev.steer, "steer"), form_inputs(SteerForm, page, own=p), outputs,
                          api_name="steer",
                          api_description="The output steered at a layer by sentence 1 (or `toward`) minus a "
                                          "contrast text, beside the baseline.")
        read.then(ev.after_read, switch_inputs, outputs, **PRIVATE).then(read_key, [session, text, p.sae],
                                                                          [p.read_key], **PRIVATE)
        # Opened, or a Run while shown: read without the button (docs/app.md: Features)
        auto = dict(fn=ev.auto_read, inputs=[*switch_inputs, page.visible_tab, p.read_key],
                    outputs=[app.status, *p.reading(), p.out_md, p.out_df, p.read_key], **PRIVATE)
        app.selected[self.id].then(**auto)
        app.after_run.add(auto["fn"], auto["inputs"], auto["outputs"])
        p.click.change(ev.clicked, [p.click, session, text, p.sae, lang], [app.status, *p.reading()], **PRIVATE)
        p.add_btn.click(ev.add_switch, [p.switches, p.latent, p.mode, p.value], [app.status, p.switches], **PRIVATE
                        ).then(ev.after_read, switch_inputs, outputs, **PRIVATE)
        # The switches stay from one Run to the next until cleared, said beside them in the page's language
        for changed in (p.switches.change, lang.change):
            changed(switches_line, [p.switches, lang], [p.switch_state], **PRIVATE)
        p.clear_btn.click(lambda: "", None, [p.switches], **PRIVATE).then(ev.after_read, switch_inputs, outputs,
                                                                           **PRIVATE)
        p.sae.input(lambda: (None, ""), None, [p.latent, p.switches], **PRIVATE)
        session.change(ev.fit_to_model, [session, p.sae], [p.sae], **PRIVATE)
        return ev

    def model_updates(self, parts: FeatureParts, info: Any) -> dict:
        p = parts
        return {p.summary: "", p.heatmap: None, p.latent: None, p.latent_md: "", p.strip: None, p.hist: None,
                p.examples: "", p.tokens: None, p.switches: "", p.out_md: "", p.out_df: None, p.read_key: ""}

    def restore_link(self, parts: FeatureParts, app: Any, values: dict[str, Any]) -> tuple[dict, list[str]]:
        """The link's values; its SAE through the allow-list (a notice, and the page's own SAE, when it fails)."""
        updates, notices = super().restore_link(parts, app, values)
        if "sae" in values:
            try:
                SAESource.of(values["sae"], app.ctx.allowed_dirs)
            except AppError:
                notices.append(f"sae {show(values['sae'])} is not a shipped SAE, an allowed folder nor a Hub repo's "
                               "folder")
                updates.pop(parts.sae)
        return updates, notices


TAB = FeaturesTab()

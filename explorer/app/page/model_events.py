"""The page after a model change: loading a shipped, Hub or allowed-folder model, or building a fresh one (/load_model,
/build_model). The typed sentences stay (one the new model cannot read is named, its examples offered); the masks
and head switches go back to the new model's defaults, and the status line says so; every tab clears what it showed
of the old model (`Tab.model_updates`).
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from ...checkpoints import LoadedModel
from ...model import PRESETS
from ..run.view import default_kind
from ..serving.build import BuildSpec
from ..serving.errors import escape_md
from ..serving.handlers import PRIVATE, reporting
from ..serving.kept import Shown
from ..i18n.words import ENGLISH, language, t
from ..serving.limits import DEFAULT_CONTINUATION
from ..serving.session import Session, build_session, load_session
from .head_switches import switch_updates
from .layout import example_choices
from .model_panel import ModelInfo, describe, headline, model_info
from .settings import KEEP

RESET = t("model.reset")  # in English; a page in another language: t("model.reset", lang)
EXAMPLES = t("model.examples")

# What every tab's `model_updates` is asked with to learn which components a model change updates.
EVERY_KIND = ModelInfo("", "", [], {"encoder": (1, 1), "decoder": (1, 1), "cross": (1, 1)}, True, 1)


def mask_defaults(page: Any) -> dict:
    """The settings a model change sets back (the masks: as a page opens), by their `reset` (page.settings)."""
    return {page.setting(s.name): s.reset for s in page.table if s.reset is not KEEP}


def language_of_page(shown: Any) -> str:
    """The page's language as its last Run had it (kept.Shown's request), English before any Run."""
    return language(getattr(getattr(shown, "request", None), "lang", None))


def read_notice(loaded: LoadedModel, text: str, sentence: int) -> str | None:
    """What of a sentence the model cannot read (explorer.unreadable), or None."""
    from ...unreadable import check_text

    return check_text(loaded.tokenizer, text, loaded.task).notice(sentence)


class ModelEvents:
    """The model panel's handlers of one page; `app` is the page's shared events (events.PageEvents)."""

    def __init__(self, app: Any):
        self.app, self.page, self.ctx, self.status = app, app.page, app.ctx, app.status

    def model_updates(self, session: Session, loaded: LoadedModel, message: str, lang: str = ENGLISH) -> dict:
        """Everything that follows the model: its panel, examples, attention kinds, layers, heads, and each tab; its
        headline, menus and labels in `lang` (the page's language as its last Run had it)."""
        page = self.page
        i, c, setting = page.inputs, page.controls, page.setting
        info = model_info(loaded)
        ex, kinds = info.examples, info.kinds
        kind = default_kind(kinds)
        n_layers, n_heads = kinds[kind]
        updates = {self.status: message, page.session: session, page.model.model_md: describe(loaded, lang),
                   page.headline: headline(loaded, lang),
                   i.ex1: gr.update(choices=example_choices(ex, "sentence 1", lang), value=""),
                   i.ex2: gr.update(choices=example_choices(ex, "sentence 2", lang), value=""),
                   setting("kind"): gr.update(choices=list(kinds), value=kind),
                   setting("layer"): gr.update(choices=list(range(n_layers)), value=0),
                   setting("head"): gr.update(choices=list(range(n_heads)), value=0),
                   c.lm_controls: gr.update(visible=info.generates, label=t("page.label.language_model" if
                                                                             info.language_model else
                                                                             "page.label.generated_output", lang)),
                   setting("predict_after"): gr.update(visible=info.language_model),
                   setting("continue_tokens"): gr.update(value=info.answer_length or DEFAULT_CONTINUATION,
                                                         visible=info.answer_length is not None,
                                                         label=t("page.label.continue_tokens" if info.language_model
                                                                 else "page.label.generate_at_most", lang)),
                   **switch_updates(page.heads, kinds), **mask_defaults(page)}
        if session.build is None:  # the picker names the model loaded (by a link, a lesson or the panel)
            updates[page.model.source] = gr.update(value=session.source)
        for tab in page.registry:
            updates.update(tab.model_updates(page.parts[tab.id], info))
            updates[page.tabs[tab.id]] = gr.update(visible=tab.shown_for(info))
        return updates

    def changed_model(self, session: Session, loaded: LoadedModel, said: str, texts: tuple[Any, Any],
                      shown: Any) -> dict:
        """A model chosen in the page: its updates, the typed sentences kept (or its examples where there were none;
        a sentence it cannot read is named, with its examples offered), and the masks and head switches of the last
        Run named as reset to the new model's defaults."""
        boxes = (self.page.setting("sentence1"), self.page.setting("sentence2"))
        lang = language_of_page(shown)
        reset, examples = t("model.reset", lang), t("model.examples", lang)
        updates = self.model_updates(session, loaded, said, lang)
        info = model_info(loaded)
        lines = [said]
        for n, (box, text) in enumerate(zip(boxes, texts), start=1):
            if not str(text or "").strip():
                if n == 1 or info.examples[1:2]:
                    updates[box] = info.examples[n - 1] if len(info.examples) >= n else ""
                continue
            notice = read_notice(loaded, str(text), n)
            if notice:
                lines.append("⚠️ " + escape_md(notice) + " " + t("model.its_examples", lang))
        request = getattr(shown, "request", None)
        if request is not None and not (request.toggles.default_masks and request.toggles.heads_on is None):
            lines.append(reset)
        updates[self.status] = "\n\n".join(lines)
        if isinstance(shown, Shown):  # the Run that follows names unreadable words itself: the rest stays above
            kept = [said, *([examples] if any(line.startswith("⚠️") for line in lines) else []),
                    *(line for line in lines if line == reset)]
            shown.model_notice = "\n\n".join(kept)
        return updates

    @reporting
    def load_model(self, source, hub_id_or_folder, device, sentence1=None, sentence2=None, shown=None,
                   progress=gr.Progress(track_tqdm=True)):
        name = (hub_id_or_folder or "").strip() or source
        session, loaded = load_session(name, device, self.ctx, progress)
        said = t("model.loaded", language_of_page(shown), name=escape_md(name))
        return self.changed_model(session, loaded, said, (sentence1, sentence2), shown)

    @reporting
    def build_model(self, preset, arch, n_layers, n_heads, d_model, d_ff, norm, positional, seed, device,
                    sentence1=None, sentence2=None, shown=None, progress=gr.Progress()):
        spec = BuildSpec.from_form(preset=preset, arch=arch, n_layers=n_layers, n_heads=n_heads, d_model=d_model,
                                   d_ff=d_ff, norm=norm, positional=positional, seed=seed)
        session, loaded = build_session(spec, device, self.ctx, progress)
        return self.changed_model(session, loaded, t("model.built", language_of_page(shown)),
                                  (sentence1, sentence2), shown)

    def fill_preset(self, name):
        if name not in PRESETS:
            return {}
        spec, m = BuildSpec.from_preset(name), self.page.model
        return {m.arch: spec.arch, m.n_layers: spec.n_layers, m.n_heads: spec.n_heads, m.d_model: spec.d_model,
                m.d_ff: spec.d_ff, m.norm: spec.norm, m.positional: spec.positional}

    def wire(self) -> list[Any]:
        """/load_model and /build_model (their events, for what follows a model change), and the presets."""
        page, m = self.page, self.page.model
        # kept: the last Run's toggles, named when a model change resets them
        texts = [page.setting("sentence1"), page.setting("sentence2"), page.kept]
        loaded = m.load_btn.click(self.load_model, [m.source, m.custom_source, m.device_in, *texts],
                                  self.app.model_outputs, api_name="load_model",
                                  api_description="Load a model into this client's session: a shipped `source`, "
                                                  "or a Hub id or allowed folder.")
        built = m.build_btn.click(self.build_model, [*m.build_form(), *texts], self.app.model_outputs,
                                  api_name="build_model",
                                  api_description="Build a Transformer with random weights, from a preset or these "
                                                  "sizes, into this client's session.")
        m.preset.input(self.fill_preset, [m.preset], [m.arch, m.n_layers, m.n_heads, m.d_model, m.d_ff, m.norm,
                                                      m.positional], **PRIVATE)
        return [loaded, built]

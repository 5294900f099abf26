"""The page-wide settings, one entry each in one table (`SETTINGS`): what the person sets once for every tab (the
sentences, the masks, the head switches, the view, a language model's settings, the tab shown).

An entry says everything the page does with a setting: its name (the HTTP API's parameter and the forms' field),
its component (`make`, laid out in its `place`, beside the entries of the same `row`), its API default, the event of
its component that runs the page again (`rerun`), how a link carries it (`link`: explorer.app.link.setting_keys) and
what a model change sets it back to (`reset`). From the table come /analyze's parameters (forms.RunForm: the session,
then every setting in table order, so a new entry is its last parameter), the components of every form that names
a setting (forms.form_inputs), the page's Run triggers (events), the link's keys, parsing and writing
(explorer.app.link) and the docs' table of keys. Adding a setting is one entry here (docs/architecture.md, "How to
add a page-wide setting"); what it means for a Run is the run's code.

The model is not a setting: it is the session (a gr.State), carried in a link as `model` and restored by loading it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gradio as gr

from ..link.setting_keys import (IndexKey, Key, KindKey, LessonKey, PlainKey, TabKey, choice_of, heads_off, lesson_id,
                                tab_id)
from ..link.values import KINDS, flag, sampling_value, sentence_text, whole
from ..run.toggles import CUSTOM_MASKS
from ..run.view import MEASURES, default_kind
from ..serving.limits import DEFAULT_CONTINUATION, MAX_NEW_TOKENS
from ..i18n.words import ENGLISH, LANGS
from .display import MODES, PLAIN_MODE, PLAIN_SIZE, SIZES, language_menu, mode_box, size_choice
from .head_labels import head_labels
from .head_switches import heads_classes

if TYPE_CHECKING:
    from .model_panel import Start

REQUIRED = object()  # a parameter the API has no default for
KEEP = object()  # a model change leaves the component as it is

# Where a setting sits (page.layout and page.controls lay these places out, each's settings in table order).
SENTENCE1, SENTENCE2 = "sentence 1", "sentence 2"  # the sentence boxes, each above its examples
VIEW = "view"  # the top of the controls column: what the figures show
LANGUAGE_MODEL = "language model"  # the Language model / Generated output group (shown for a model that generates)
SAMPLING = "sampling"  # inside it, shown while Sample is ticked
MASKS, HEADS = "masks", "heads"  # the Masks group; the Heads group, under its All on / Only this head buttons
TAB_STRIP = "tab strip"  # hidden, under the tabs
DISPLAY = "display"  # the title row: how the page is drawn (page.display)
PLACES = (SENTENCE1, SENTENCE2, VIEW, LANGUAGE_MODEL, SAMPLING, MASKS, HEADS, TAB_STRIP, DISPLAY)

ATTENTION_TAB = "attention"  # the tab the page opens on: the Attention tab (tabs/attention.py)
WINDOW = (0, 16)  # the "Window k" slider
BIG = 10**6  # blocked position / predict-after position: the page's fields have no bound; a link's are bounded
Component = Any  # a Gradio component
# A field whose `rerun` is "blur" lets go of the focus on Enter, so that Enter runs the page once, as leaving it does
# (its "input" event fires at every digit: "0.8" would run at 0 first, which the sampler refuses).
BLUR_ON_ENTER = "() => { document.activeElement?.blur(); }"


@dataclass(frozen=True)
class Setting:
    """One page-wide setting: everything the page does with it (the module's docstring)."""

    name: str  # the API parameter and form field ("padding_mask")
    make: Callable[[Start], Component]  # its component, laid out where it is called (inside its place)
    place: str  # PLACES
    row: str = ""  # the settings of a place with the same row sit side by side, where the first of them is
    default: Any = REQUIRED  # /analyze's default (a setting after the first with one needs one)
    rerun: str | None = None  # the component's event that runs the page again ("input", "submit", "release"; "blur":
    #                           a number typed digit by digit runs once it is left, or Enter is pressed: BLUR_ON_ENTER)
    link: Key | None = None  # how a link carries it; None: not in a link
    reset: Any = KEEP  # the value a model change sets it back to
    in_run: bool = True  # an /analyze parameter (False: the page's and its links' only, such as the lesson shown)


def sentence_box(n: int) -> Callable[[Start], Component]:
    def make(start: Start) -> Component:
        examples = start.info.examples if start.info else []
        text = examples[n - 1] if len(examples) >= n else ""
        if n == 1:
            return gr.Textbox(text, label="Sentence", lines=1, max_lines=4, elem_id="text1")
        return gr.Textbox(text, lines=1, max_lines=4, elem_id="text2", label="Second sentence (optional)",
                          placeholder="batched with the first; the shorter one is padded")  # one line, as it opens
    return make


def head_group(kind: str, label: str, elem_id: str) -> Callable[[Start], Component]:
    def make(start: Start) -> Component:
        kinds = start.kinds
        labels = head_labels(*kinds[kind]) if kind in kinds else []
        return gr.CheckboxGroup(labels, value=labels, label=label, visible=bool(labels) or not kinds, elem_id=elem_id,
                                elem_classes=heads_classes(kinds[kind][1] if kind in kinds else 0))
    return make


def view_index(label: str, elem_id: str, of: int) -> Callable[[Start], Component]:
    """The layer (of=0) or head (of=1) dropdown, with the starting model's first kind's choices."""
    def make(start: Start) -> Component:
        first = next(iter(start.kinds.values()), (1, 1))
        return gr.Dropdown(list(range(first[of])), value=0, label=label, elem_id=elem_id, allow_custom_value=True,
                           min_width=70)
    return make


def kind_dropdown(start: Start) -> Component:
    kinds = start.kinds
    return gr.Dropdown(list(kinds), value=default_kind(kinds) if kinds else None, label="Attention shown",
                       elem_id="kind", allow_custom_value=True)


def predict_after(start: Start) -> Component:
    return gr.Number(-1, label="Predict after position", info="−1 = the last token", precision=0, min_width=80,
                     elem_id="position", visible=start.info is not None and start.info.language_model)


def continuation(start: Start) -> Component:
    return gr.Slider(0, MAX_NEW_TOKENS, value=DEFAULT_CONTINUATION, step=1, min_width=80, label="Continue (tokens)",
                     elem_id="new-tokens", visible=start.info is not None and start.info.answer_length is not None)


def whole_in(low: int, high: int) -> Callable[[str, Any], int]:
    return lambda text, reading: whole(text, low, high)


def sentence_key(key: str) -> Key:
    return Key(key, lambda text, reading: sentence_text(text, reading.notices, key),
               "any text, at most 20,000 characters (`s2=` empty: no second sentence)", "Sentence, Second sentence")


def sampling_key(key: str, doc: str, where: str) -> Key:
    return Key(key, lambda text, reading: sampling_value(key, text), doc, where, when="sample")


FLAG = "`1` or `0`"
HEADS_OFF = heads_off("heads switched off, `kind:L1H2,L1H3;kind:L0H0` (every other head on)", "the head switches")
HEAD_GROUPS = (("encoder", "Encoder self-attention", "enc-heads"), ("decoder", "Decoder self-attention", "dec-heads"),
               ("cross", "Cross-attention", "cross-heads"))  # kind, label, elem_id: in KINDS order, the API's
assert tuple(k for k, _, _ in HEAD_GROUPS) == KINDS

# In /analyze's parameter order (after its `session`): an entry appended here is /analyze's new last parameter.
SETTINGS: tuple[Setting, ...] = (
    Setting("sentence1", sentence_box(1), SENTENCE1, rerun="submit", link=sentence_key("s1")),
    Setting("sentence2", sentence_box(2), SENTENCE2, rerun="submit", link=sentence_key("s2")),
    Setting("padding_mask", lambda s: gr.Checkbox(True, label="Padding mask (ignore the shorter sentence's [PAD])",
                                                  elem_id="padding"), MASKS, rerun="input", reset=True,
            link=Key("padding", lambda text, reading: flag(text), FLAG, "Padding mask, Causal mask")),
    Setting("causal_mask", lambda s: gr.Checkbox(True, label="Causal mask (decoder: no looking ahead)",
                                                 elem_id="causal"), MASKS, rerun="input", reset=True,
            link=Key("causal", lambda text, reading: flag(text), FLAG, "Padding mask, Causal mask")),
    Setting("custom_mask", lambda s: gr.Radio(list(CUSTOM_MASKS), value="none", label="Custom mask, first stack",
                                              elem_id="custom-mask"), MASKS, rerun="input", reset="none",
            link=Key("mask", choice_of(CUSTOM_MASKS), "`none`, `block token`, `local window`, `no self` (a space is "
                     "`%20`)", "Custom mask")),
    Setting("blocked_position", lambda s: gr.Number(0, label="Blocked position", precision=0, minimum=0, min_width=80,
                                                    elem_id="blocked"),
            MASKS, row="mask numbers", rerun="submit", reset=0,
            link=Key("blocked", whole_in(0, BIG), "a whole number from 0", "Blocked position")),
    Setting("window", lambda s: gr.Slider(*WINDOW, value=2, step=1, label="Window k", min_width=80, elem_id="window"),
            MASKS,
            row="mask numbers", rerun="release", reset=2,
            link=Key("window", whole_in(*WINDOW), "0 to 16", "Window k")),
    *(Setting(f"{kind}_heads_on", head_group(kind, label, elem_id), HEADS, rerun="input", link=HEADS_OFF)
      for kind, label, elem_id in HEAD_GROUPS),
    Setting("kind", kind_dropdown, VIEW, rerun="input",
            link=KindKey("kind", choice_of(KINDS), "`encoder`, `decoder`, `cross` (one the model has)",
                         "Attention shown")),
    Setting("layer", view_index("Layer", "layer", 0), VIEW, row="view", rerun="input",
            link=IndexKey("layer", whole_in(0, 9999), "a whole number the model has (from 0)", "Layer, Head", of=0)),
    Setting("head", view_index("Head", "head", 1), VIEW, row="view", rerun="input",
            link=IndexKey("head", whole_in(0, 9999), "a whole number the model has (from 0)", "Layer, Head", of=1)),
    Setting("sentence", lambda s: gr.Dropdown([1, 2], value=1, label="Sentence", min_width=70, elem_id="sentence"),
            VIEW, row="view", rerun="input", link=Key("sentence", whole_in(1, 2), "`1` or `2`", "Sentence")),
    Setting("predict_after", predict_after, LANGUAGE_MODEL, row="lengths", default=-1, rerun="submit",
            link=Key("position", whole_in(-BIG, BIG), "a whole number, negative from the end (`-1`: the last token)",
                     "Predict after position")),
    Setting("continue_tokens", continuation, LANGUAGE_MODEL, row="lengths", default=DEFAULT_CONTINUATION,
            rerun="release", link=Key("continue", whole_in(0, MAX_NEW_TOKENS), f"0 to {MAX_NEW_TOKENS}",
                                      "Continue / Generate at most (tokens)")),
    # The tab shown: which tab's figures a Run draws and sends (the page's tab strip writes it).
    Setting("tab", lambda s: gr.Textbox(ATTENTION_TAB, visible=False, elem_id="visible-tab", label="tab"), TAB_STRIP,
            default=ATTENTION_TAB,
            link=TabKey("tab", tab_id, "TABS", "the tab shown, computed as if its own button had been pressed")),
    # What the head and all-heads maps show (run.view.MEASURES).
    Setting("measure", lambda s: gr.Radio([("weights", "weights"), ("weight × |value written|", "values")],
                                          value="weights", label="Heatmaps show", elem_id="measure",
                                          info="how much each key is attended to, or that times the length of what "
                                               "it writes"), VIEW, default="weights", rerun="input",
            link=Key("measure", choice_of(MEASURES), "`weights` or `values`", "Heatmaps show")),
    # Sample (off: greedy decoding, every number as without these five) and how (outputs.sampling.Sampling).
    Setting("sample", lambda s: gr.Checkbox(False, label="Sample (off: greedy, the most probable token)",
                                            elem_id="sample"), LANGUAGE_MODEL, default=False, rerun="input",
            link=Key("sample", lambda text, reading: flag(text), "`1` or `0` (`0`, or no key: greedy)", "Sample",
                     when="sample")),
    Setting("temperature", lambda s: gr.Number(1.0, label="Temperature", min_width=60, elem_id="temperature"),
            SAMPLING, row="first", default=1.0, rerun="blur",
            link=sampling_key("temperature", "a number above 0", "Temperature")),
    Setting("top_k", lambda s: gr.Number(0, label="Top-k (0: off)", precision=0, minimum=0, min_width=60,
                                         elem_id="top-k"), SAMPLING, row="second", default=0, rerun="blur",
            link=sampling_key("top_k", "a whole number from 0 (`0`: off)", "Top-k")),
    Setting("top_p", lambda s: gr.Number(1.0, label="Top-p (1: off)", min_width=60, elem_id="top-p"), SAMPLING,
            row="second", default=1.0, rerun="blur",
            link=sampling_key("top_p", "above 0 and at most 1 (`1`: off)", "Top-p")),
    Setting("seed", lambda s: gr.Number(0, label="Seed", precision=0, minimum=0, min_width=60, elem_id="seed"),
            SAMPLING, row="first", default=0, rerun="blur",
            link=sampling_key("seed", "a whole number from 0 to 2147483647", "Seed")),
    # How the browser draws the page (page.display): nothing a Run computes changes with these two.
    Setting("size", size_choice, DISPLAY, default=PLAIN_SIZE,
            link=PlainKey("size", choice_of(SIZES), "`normal` or `projector` (text and figures about 1.5 times as "
                          "large)", "Size of text and figures", plain=PLAIN_SIZE)),
    Setting("mode", mode_box, DISPLAY, default=PLAIN_MODE,
            link=PlainKey("mode", choice_of(MODES), "`full` or `class` (the sentence, Run, the output, one head and "
                          "the switches; the rest behind More)", "Class view, More", plain=PLAIN_MODE)),
    # The page's own words (explorer.app.i18n): the menu, or the browser's language on load; a Run's state line and
    # notices in it. Model outputs and tokens are never translated.
    Setting("lang", language_menu, DISPLAY, default=ENGLISH, rerun="input",
            link=PlainKey("lang", choice_of(LANGS), "`en`, `fr`, `de` or `es` (no key: the browser's language)",
                          "Language", plain=ENGLISH)),
    # The lesson in the lesson panel and its step (page.lesson_panel): not a Run's, so not /analyze parameters.
    Setting("lesson", lambda s: gr.Textbox("", visible=False, elem_id="lesson-id", label="lesson"), TAB_STRIP,
            default="", in_run=False,
            link=LessonKey("lesson", lesson_id, "a lesson's number (from 1) or name (docs/lessons.md): its panel and "
                           "view (the link's other keys win)", "the lesson panel")),
    Setting("lesson_step", lambda s: gr.Number(1, visible=False, precision=0, elem_id="lesson-step",
                                               label="lesson step"), TAB_STRIP, default=1, in_run=False,
            link=Key("step", whole_in(1, 8), "1 to 8: the lesson's step (with `lesson`)", "the lesson panel",
                     when="lesson")),
)


def setting_names(table: Iterable[Setting] = SETTINGS) -> list[str]:
    return [s.name for s in table]


def default_of(name: str, table: Sequence[Setting] = SETTINGS) -> Any:
    """A setting's API default (for a form that has the field with the same default)."""
    return next(s.default for s in table if s.name == name)


def lay(table: Sequence[Setting], place: str, start: Start) -> dict[str, Component]:
    """The components of the settings in `place`, laid out where this is called: in table order, those of one row
    in a gr.Row where the first of them is."""
    made: dict[str, Component] = {}
    mine = [s for s in table if s.place == place]
    for s in mine:
        if s.name in made:
            continue
        if not s.row:
            made[s.name] = s.make(start)
            continue
        with gr.Row():
            for r in mine:
                if r.row == s.row:
                    made[r.name] = r.make(start)
    return made


def check_table(table: Sequence[Setting]) -> None:
    """ValueError for a table the page cannot lay out or call: a name twice, an unknown place, a required setting
    after one with a default (the API's parameters could not be in table order)."""
    names = setting_names(table)
    twice = {n for n in names if names.count(n) > 1}
    if twice:
        raise ValueError(f"settings named twice: {sorted(twice)}")
    for s in table:
        if s.place not in PLACES:
            raise ValueError(f"setting {s.name!r}: its place {s.place!r} is not one of {', '.join(PLACES)}")
    defaults = [s.default is not REQUIRED for s in table if s.in_run]
    if True in defaults and not all(defaults[defaults.index(True):]):
        raise ValueError("a setting without a default follows one with a default: give it a default")

"""The load reasons of a model and an SAE in the page's language (issue 42 item 5): every message the loaders raise
(explorer.loading, explorer.checkpoints, explorer.file_reads, explorer.importers, and the SAE files, sources, hook
points and latent switches of explorer.interpret.sae, a model configuration's own checks, a lesson file's errors)
has its English text in a catalogue, found by reading the
modules' raise sites (ast), so that a new reason cannot stay English silently; a load reason, an SAE's error, a
circuit's note and a teacher's note come out in French, German and Spanish through the path the page uses."""

from __future__ import annotations

import ast
import itertools
import re
import string
from pathlib import Path

import pytest

from explorer.app.i18n.words import ENGLISH, catalogue, number, t

ROOT = Path(__file__).resolve().parents[2] / "explorer"
MODEL_FILES = [ROOT / "loading.py", ROOT / "checkpoints.py", ROOT / "file_reads.py", *sorted((ROOT / "importers")
                                                                                          .glob("*.py"))]
SAE = ROOT / "interpret" / "sae"
# what reaches the page: a loader's CheckpointError (its config's `cfg.error`), an SAE's SAEFileError, and the
# ValueErrors of an SAE's hook point, latent switches and dashboards. Not listed, as the Python API's own: a live
# model's TypeError (explorer.importers.live), save_checkpoint's ValueError, and the SAE modules whose arguments the
# Features tab checks first with its own refusals (core, features, latent_match, splice, steer).
RAISED = {"CheckpointError", "HubUnavailableError", "SAEFileError", "cfg.error", "self.error"}
SAE_FILES = {SAE / "saelens_files.py": RAISED, SAE / "sources.py": RAISED, SAE / "hooks.py": {"ValueError"},
             SAE / "switches.py": {"ValueError"}, SAE / "dashboards.py": {"ValueError"},
             ROOT / "app" / "tabs" / "features" / "dashboards.py": {"ValueError"}}  # the last two: "No dashboard: …"
PASSED_ON = {"str(err)", "None"}  # another error's message raised again: its own text is checked where it is made


def shapes(node: ast.expr) -> list[str] | None:
    """The texts a message expression can make, each placeholder written {} (None: not a text built here)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value.replace("{", "{{").replace("}", "}}")]
    if isinstance(node, ast.JoinedStr):
        return ["".join(v.value.replace("{", "{{").replace("}", "}}") if isinstance(v, ast.Constant) else "{}"
                        for v in node.values)]
    if isinstance(node, ast.IfExp):
        return (shapes(node.body) or []) + (shapes(node.orelse) or []) or None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = shapes(node.left), shapes(node.right)
        return [a + b for a, b in itertools.product(left, right)] if left and right else None
    return None


def skeleton(text: str) -> str:
    """A text with every placeholder written {} and placeholders side by side as one."""
    parts = ["".join(literal.replace("{", "{{").replace("}", "}}") + ("{}" if name is not None else ""))
             for literal, name, _, _ in string.Formatter().parse(text)]
    return re.sub(r"(\{\})+", "{}", "".join(parts))


def raise_sites(path: Path, kinds: set[str]) -> list[tuple[str, str]]:
    """(where, the message's skeleton) of every raise of one of `kinds` in a module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
            continue
        kind, args = ast.unparse(node.exc.func), node.exc.args
        if kind not in kinds or (args and ast.unparse(args[0]) in PASSED_ON):
            continue
        where = f"{path.relative_to(ROOT.parent)}:{node.lineno}"
        made = shapes(args[0]) if args else None
        assert made is not None, f"{where}: a message not written at the raise site ({kind})"
        prefix = "{}: " if kind.endswith(".error") else ""  # HFConfig.error puts the file's name first
        found += [(where, skeleton(prefix + text)) for text in made]
    return found


def lesson_sites() -> list[tuple[str, str]]:
    """A lesson file's errors: every LessonError raised (its `where` prefix, "step 2: ", read apart) and every error
    the catalogue of files writes (lesson_files.lesson_paths, catalogue)."""
    page = ROOT / "app" / "page"
    found = []
    for path in (page / "lesson_files.py", page / "lesson_format.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.FormattedValue) and (
                    ast.unparse(node.values[0].value) == "where"):
                node.values = node.values[1:]  # "step 2: " + the reason: each its own catalogue text
        written = [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name in ("lesson_paths", "catalogue")]
        for node in (n for f in written for n in ast.walk(f) if isinstance(n, ast.JoinedStr)):
            found += [(f"{path.name}:{node.lineno}", skeleton(text)) for text in shapes(node)]
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args and ast.unparse(
                    node.exc.func) == "LessonError" and ast.unparse(node.exc.args[0]) != "str(err)":
                found += [(f"{path.name}:{node.lineno}", skeleton(text)) for text in shapes(node.exc.args[0]) or []]
    return [(where, text) for where, text in found if text != "{}"]  # "{where}{err}": a reason made elsewhere


def test_every_lesson_files_error_is_in_the_catalogue():
    sites = lesson_sites()
    assert len(sites) > 25, len(sites)
    known = {skeleton(text) for key, text in catalogue(ENGLISH).items() if key.startswith(("lesson_error.", "refuse."))}
    assert [f"{where}: {text}" for where, text in sites if text not in known] == []


def config_sites() -> list[tuple[str, str]]:
    """A model configuration's own checks (explorer.model.config: `fail(name, why)`, each why its own text), which a
    load reason and the Build form's refusal carry."""
    path = ROOT / "model" / "config.py"
    calls = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call) and len(n.args) == 2
             and ast.unparse(n.func) in ("fail", "self.fail")]
    return raise_sites(path, {"ValueError"}) + [(f"model/config.py:{n.lineno}", skeleton(text)) for n in calls
                                                for text in shapes(n.args[1])]


def test_every_load_reason_and_sae_error_is_in_the_catalogue():
    sites = [s for p in MODEL_FILES for s in raise_sites(p, RAISED)] + [s for p, kinds in SAE_FILES.items()
                                                                       for s in raise_sites(p, kinds)] + config_sites()
    assert len(sites) > 170, len(sites)
    known = {skeleton(text) for key, text in catalogue(ENGLISH).items() if key.startswith("refuse.")}
    assert [f"{where}: {text}" for where, text in sites if text not in known] == []


# ------------------------------------------------------------------------------- through the page's handlers
OTHERS = ("fr", "de", "es")


@pytest.fixture(scope="module")
def allowed(tmp_path_factory):
    """An app context whose allowed folder holds a model of an unknown family and an SAE of no latents."""
    from explorer.app.serving.registry import ModelRegistry
    from explorer.app.serving.session import AppContext

    root = tmp_path_factory.mktemp("allowed")
    (root / "broken").mkdir()
    (root / "broken" / "config.json").write_text('{"model_type": "mamba"}')
    (root / "bad-sae").mkdir()
    (root / "bad-sae" / "cfg.json").write_text('{"d_in": 64, "d_sae": 0}')
    return AppContext(ModelRegistry(), allowed_dirs=(str(root),))


def shown_in(lang: str):
    """The page's last Run, in `lang` (a model change says its words in it)."""
    from types import SimpleNamespace

    from explorer.app.serving.kept import Shown

    shown = Shown()
    shown.request = SimpleNamespace(lang=lang)
    return shown


def test_a_load_reason_is_said_in_the_pages_language(allowed):
    """A folder of an unknown family, loaded from the page: the frame, the file's words and the reason in the page's
    language; the file and a family's proper name as they are ("Llama-family": "famille Llama"), never the server's
    path."""
    from types import SimpleNamespace

    from explorer.app.page.model_events import ModelEvents
    from explorer.app.serving.errors import escape_md

    page = SimpleNamespace(ctx=allowed, status="status")
    english = ModelEvents.load_model(page, "date-translator", "broken", "cpu", None, None, shown_in("en"))["status"]
    families = english.partition("the explorer imports ")[2]
    assert english.startswith("⚠️ Could not load 'broken': config.json in broken: model\\_type 'mamba'") and families
    for lang in OTHERS:
        said = ModelEvents.load_model(page, "date-translator", "broken", "cpu", None, None, shown_in(lang))["status"]
        why = t("refuse.load.model_type", lang, file=t("file_words.in_folder", lang, name="config.json",
                                                       folder="broken"), value="'mamba'", families="\0")
        listed = t("family_words.between", lang).join(  # "famille Llama": a family named by one member
            t("family_words.family", lang, name="Llama") + x[len("Llama-family"):] if x.startswith("Llama-family")
            else x for x in families.split("; "))
        assert said == "⚠️ " + escape_md(t("refusal.could_not_load", lang, source="'broken'", why=why)).replace(
            "\0", listed), said
        assert allowed.allowed_dirs[0] not in said and "-family" not in said and "GPT-2 \\(gpt2\\)" in said


def test_an_sae_files_error_is_said_in_the_forms_language(allowed):
    """An SAE folder whose cfg.json has no latents, typed in the Features tab: its refusal in the form's language,
    its number written the language's way."""
    from types import SimpleNamespace

    from explorer.app.serving.errors import escape_md
    from explorer.app.serving.session import Session
    from explorer.app.tabs.features.forms import FeatureForm
    from explorer.app.tabs.features.tab import FeatureEvents

    tab = FeatureEvents.__new__(FeatureEvents)  # the handler alone: its context and status line
    tab.__dict__.update(ctx=allowed, status="status", parts=SimpleNamespace())
    session = Session("date-gpt", "cpu")
    english = FeatureEvents.read(tab, FeatureForm(session, "3 mai 2024", "bad-sae"))["status"]
    assert english == "⚠️ " + escape_md("Could not load the SAE 'bad-sae': cfg.json in bad-sae: \"d_sae\" must be a "
                                        "positive integer of at most 2,147,483,648, got 0")
    for lang in OTHERS:
        said = FeatureEvents.read(tab, FeatureForm(session, "3 mai 2024", "bad-sae", lang=lang))["status"]
        err = t("refuse.sae.positive_width", lang, file=t("file_words.in_folder", lang, name="cfg.json",
                                                          folder="bad-sae"), key="d_sae",
                most=number(2**31, lang), value="0")
        assert said == "⚠️ " + escape_md(t("refuse.sae_not_loaded", lang, name="'bad-sae'", err=err)), said


@pytest.mark.parametrize("english, key, values", [
    ("cannot load owner/x: HF_HUB_OFFLINE is set and it is not in the Hugging Face cache.", "refuse.load.hub_unavailable",
     {"repo": "owner/x", "state": "refuse.load.hub_offline", "hint": ""}),
    ("model.safetensors in m is truncated: tensor w ends past the end of the file", "refuse.load.ends_past",
     {"file": ("model.safetensors", "m"), "name": "w"}),
    ("latent switch '5:clamp': clamp needs =VALUE", "refuse.sae.switch_needs", {"text": "'5:clamp'", "mode": "clamp"}),
    ("clean answer: id 999 is outside the vocabulary (0..134)", "refuse.token_vocab",
     {"token_words": "result.notes.clean_answer", "id": "999", "last": "134"}),
    ("model.safetensors in m is missing 1,212 tensor(s) the model needs: a, b (and 1,210 more)",
     "refuse.load.missing_tensors", {"file": ("model.safetensors", "m"), "n": lambda lang: number(1212, lang),
                                     "names": lambda lang: t("file_words.and_more", lang, names="a, b",
                                                             n=number(1210, lang))}),
    ("config.json in m: invalid Llama-family configuration: boom", "refuse.load.invalid_family_config",
     {"file": ("config.json", "m"), "family": lambda lang: t("family_words.of", lang, name="Llama"), "err": "boom"}),
])
def test_a_reason_from_deeper_down_is_read_back(english, key, values):
    """A reason's own words inside it (the Hub's state, a file in its folder, the token asked for, a family named by
    one member) are said in the language too."""
    from explorer.app.i18n.messages import message_in

    def said(value, lang):  # a catalogue key's words, a file in its folder, words made in the language, or as it is
        if callable(value):
            return value(lang)
        if isinstance(value, tuple):
            return t("file_words.in_folder", lang, name=value[0], folder=value[1])
        return t(value, lang) if value.startswith(("refuse.", "result.")) else value

    for lang in OTHERS:
        assert message_in(english, lang) == t(key, lang, **{k: said(v, lang) for k, v in values.items()}) != english


DROPPED = "2 of 9 pairs dropped: their clean and corrupted prompts differ in length in tokens (lines 3, 5)"


@pytest.mark.parametrize("frame, english, key, values", [
    ("result.features.note", "This SAE was trained on 'gpt2', the model is 'date-gpt': its latents may mean nothing here.",
     "result.notes.trained_on", {"model": "'gpt2'", "name": "'date-gpt'"}),
    ("result.contributions.notice", "this model has no padding token, so the baseline is the zero embedding",
     "result.notes.zero_baseline", {}),
    ("result.contributions.notice", DROPPED, "result.notes.dropped_lines", {"n": "2", "m": "9", "shown": "3, 5"}),
    ("result.contributions.notice", "key 7 is not one of the 5 keys here: left out of the steps.", "result.notes.left_out",
     {"keys": "7", "n": "5"}),
])
def test_a_tabs_note_or_notice_is_said_inside_its_frame(frame, english, key, values):
    """A note or notice a tab made safe for Markdown as a whole ("_note:_ …", "⚠️ …": escape_md) is read back as the
    code wrote it and said in the language, escaped again."""
    from explorer.app.i18n.result_words import result_in
    from explorer.app.serving.errors import escape_md

    paragraph = t(frame, "en", why=escape_md(english))
    for lang in OTHERS:
        assert result_in(paragraph, lang) == t(frame, lang, why=escape_md(t(key, lang).format(**values)))


def test_the_teachers_note_and_menu_say_a_lesson_files_error_in_the_pages_language(tmp_path):
    """A lesson file with a step lacking its hint, in an allowed folder: the note under the title and the Lessons
    menu's "⚠️ not loaded" entry say it in the page's language (the lesson events' `lang`), the file named as it is."""
    from types import SimpleNamespace

    from explorer.app.page.lesson_events import LessonEvents
    from explorer.app.page.lesson_files import catalogue as lesson_catalogue
    from explorer.app.page.lesson_panel import LessonPanel, refused_text
    from explorer.app.serving.errors import escape_md

    (tmp_path / "lessons").mkdir()
    (tmp_path / "lessons" / "month.toml").write_text('title = "Month"\ngoal = "g"\nview = "layer=1"\n[[steps]]\ndo = "d"\n'
                                                     'passed = "p"\n[steps.check]\noutput_changes = true\n')
    found = lesson_catalogue([str(tmp_path)])
    assert found.errors == ("month.toml in lessons: step 1: `hint` is missing",)
    panel = LessonPanel(found, "menu", "box", "text", "about", "previous", "next", "leave", "note")
    events = LessonEvents.__new__(LessonEvents)  # the handler alone: the panel's parts are names here
    events.__dict__.update(panel=panel, catalogue=found, note="note", ctx=SimpleNamespace(), status="status",
                           step="step", app=None)
    for lang in OTHERS:
        said = LessonEvents.show.__wrapped__(events, "", 1, "attention", None, lang)
        why = t("lesson_error.in_file", lang, file=t("file_words.in_folder", lang, name="month.toml", folder="lessons"),
                why=t("lesson_error.at_step", lang, n=1, why=t("lesson_error.missing", lang, key="hint")))
        assert said["note"] == refused_text(found, lang) == t("teacher.not_loaded", lang) + "\n\n- " + escape_md(why)
        assert said["menu"]["choices"][-1] == (t("lesson.not_loaded", lang, error=why), "!1"), said["menu"]


def test_the_build_forms_refusal_names_the_configurations_check_in_the_pages_language(allowed):
    """A width the heads do not divide, built from the page: the configuration's own check in the page's language."""
    from types import SimpleNamespace

    from explorer.app.page.model_events import ModelEvents
    from explorer.app.serving.errors import escape_md

    page = SimpleNamespace(ctx=allowed, status="status")
    for lang in OTHERS:
        said = ModelEvents.build_model(page, "custom", "decoder", 2, 3, 100, 64, "pre-norm", "sinusoidal", 0, "cpu",
                                       None, None, shown_in(lang))["status"]
        check = t("refuse.config.frame", lang, name="d_model", value="100", why=t("refuse.config.divisible", lang, n=3))
        assert said == "⚠️ " + escape_md(t("refuse.invalid_config", lang, err=check)), said

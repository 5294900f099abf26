"""The page's languages (explorer.app.i18n): every key of the English catalogue in French, German and Spanish with
the same placeholders; every word of the built page's layout found in the catalogue (a new English label fails here
until it has its key); the page relabelled in each language and back; the state line and numbers in each language;
the language chosen by a link's `lang=` or else the browser's Accept-Language; each analysis tab's results (summary,
a figure's words, a table's headers, a refusal) in the language its form carries. The link's `lang=` round trip is
tests/app/test_link.py's (FULL); the page in Chromium, tests/app/test_browser_languages.py."""

from __future__ import annotations

import re
import string
from types import SimpleNamespace

import orjson
import pytest
from starlette.datastructures import QueryParams

from explorer.app.i18n.relabel import CHOSEN_AS_IS, WRITTEN, english_keys, page_texts, relabel
from explorer.app.i18n.words import LANGS, best_language, catalogue, number, t
from explorer.app.run.state_line import state_line
from explorer.app.run.toggles import Toggles
from explorer.app.serving.errors import escape_md
from explorer.app.serving.session import Session
from explorer.outputs.sampling import Sampling

KINDS = {"encoder": (2, 4), "decoder": (2, 4), "cross": (2, 4)}
# The components whose value the events write (their words come from the handler, not the layout). Those marked
# STILL ENGLISH are the groups of words issue 42 item 5 has not translated yet: named here, never passed silently.
EXPECTED_WRITTEN = {
    "model-info",  # the model's description in the sidebar: LanguageEvents.model_words (its architecture's line, its
    #                task's own description and notes as they are)
    "headline",  # the model in one line: LanguageEvents.model_words
    # notices and errors: the Run's, a model change's, the tabs' refusals and a link's in the request's language
    # (i18n.messages, notices.toml, refusals.toml); a message nowhere in the catalogue stays English
    "status", "link-notice",
    "state-line",  # the state line: run.state_line, in the request's language
    "why-step",  # the why line's next step: run.unchanged, in the request's language
    "features-switch-state",  # the Features tab's latent switches: switch_state.switches_line, in the page's language
    "lessons",  # the lessons' titles: page.lesson_events, in the page's language (lessons.toml, a teacher's [fr])
    "lesson-refused",  # the note on lesson files not loaded: page.lesson_events, in the page's language (teacher.toml)
}
EXPECTED_AS_IS = {
    "ex1", "ex2",  # the model's example sentences (their menu's first line: in the page's language)
    "source", "model2", "pair", "features-sae",  # model and SAE names
    "kind", "kind2",  # encoder / decoder / cross: the link's and the API's words
    "page-lang",  # each language named in its own words
}


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


@pytest.mark.parametrize("lang", LANGS[1:])
def test_every_key_exists_in_every_language_with_the_same_placeholders(lang):
    english, other = catalogue("en"), catalogue(lang)
    assert sorted(set(english) ^ set(other)) == [], lang
    wrong = {k: (english[k], other[k]) for k in english if placeholders(english[k]) != placeholders(other[k])}
    assert wrong == {}
    # translated, not copied: only names and symbols are the same in both (d_model, API, "12:off,..."); a text of
    # one word besides its placeholders ("### Latent {n}") and Plotly's markup (a hover's "%{{customdata:.4g}}",
    # "<extra></extra>") may be the same word in both
    same = [k for k in english if english[k] == other[k] and len(re.findall(r"[A-Za-z]{3,}", re.sub(
        r"\{\w+\}|%\{\{[^}]*\}\}|<[^>]*>", "", english[k]))) > 1]
    assert len(same) <= 5, same
    from explorer.app.page.gradio_fixes import STATUS_WORDS  # Gradio's own words, through gr.I18n

    words = STATUS_WORDS.translations[lang]["common.complete"]
    assert words == other["gradio.complete"] != english["gradio.complete"]


def test_every_word_of_the_layout_is_in_the_catalogue(page_events):
    texts = page_texts(page_events.page.demo)
    assert len(texts) > 250  # labels, help, placeholders, buttons, static Markdown and choices of every tab
    made = [x for x in texts if isinstance(x.value, dict)]  # made in every language by its tab (the API tab)
    assert [getattr(x.component, "elem_id", None) for x in made] == ["api-text"] and set(made[0].value) == set(LANGS)
    assert [(x.prop, x.english[:60]) for x in texts if x.english not in english_keys() and x not in made] == []
    assert WRITTEN == EXPECTED_WRITTEN and CHOSEN_AS_IS == EXPECTED_AS_IS


@pytest.mark.parametrize("lang", LANGS)
def test_the_page_is_relabelled_in_each_language_and_back(page_events, lang):
    page = page_events.page
    texts = page_texts(page.demo)
    updates = relabel(texts, lang)
    run, padding, measure = page.inputs.run_btn, page.setting("padding_mask"), page.setting("measure")
    assert updates[run]["value"] == t("page.text.run", lang)
    assert updates[padding]["label"] == t("page.label.padding_mask_ignore_the_shorter", lang)
    # a choice's label in the language, its value the API's and the link's word
    assert updates[measure]["choices"] == [(t("page.choice.weights", lang), "weights"),
                                           (t("page.choice.weight_value_written", lang), "values")]
    assert not {c for c in updates if getattr(c, "elem_id", None) in WRITTEN and "value" in updates[c]}
    api = next(x for x in texts if getattr(x.component, "elem_id", None) == "api-text")  # its prose, made per language
    assert t("api.endpoints", lang) in updates[api.component]["value"] and "- `/lens(sentence1, lang)`:" in api.english
    assert 'api_name="/analyze")   # ' + t("api.defaults_comment", lang) in updates[api.component]["value"]
    assert "- `/lens(sentence1, lang)`: " + t("endpoint.lens", lang) in updates[api.component]["value"]
    if lang != "en":  # every text of the layout changes, but names and symbols
        unchanged = [x.english for x in texts if updates[x.component].get(x.prop) == x.english]
        assert len(unchanged) < 25, unchanged
    back = relabel(texts, "en")
    assert all(back[x.component][x.prop] == x.english for x in texts if x.prop != "choices")
    assert back[api.component]["value"] == api.english


def test_the_state_line_and_numbers_in_each_language():
    toggles = Toggles(padding=False, custom="local window", window=3, heads_on={"cross": {(0, 0), (0, 1)}})
    sampling = Sampling(temperature=0.8, top_p=0.9, seed=4)
    assert state_line(toggles, KINDS, sampling) == (
        "Toggles: Padding mask off · window 3 · cross L0 H2, L0 H3, L1 H0, L1 H1, L1 H2, L1 H3 off · Generated "
        "tokens sampled: T=0.8, top-k=off, top-p=0.9, seed=4")
    assert state_line(toggles, KINDS, sampling, "fr") == (
        "Réglages : Masque de remplissage désactivé · fenêtre 3 · croisée L0 H2, L0 H3, L1 H0, L1 H1, L1 H2, "
        "L1 H3 éteintes · Jetons générés par tirage : T=0,8, top-k=désactivé, top-p=0,9, graine=4")
    assert "T=0,8" in state_line(toggles, KINDS, sampling, "de") and "Auffüllmaske aus" in state_line(toggles, KINDS,
                                                                                                      None, "de")
    assert state_line(Toggles(), KINDS, None, "es") == t("state.nothing", "es") != t("state.nothing")
    assert [number(1234.5, lang, 2) for lang in LANGS] == ["1,234.50", "1\u202f234,50", "1.234,50", "1.234,50"]
    assert t("state.window", "xx", k=2) == "window 2"  # an unknown language: English


def test_the_browser_language_is_the_first_of_ours_it_asks_for():
    assert best_language("fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7") == "fr"
    assert best_language("pt-BR,pt;q=0.9,es;q=0.8,en;q=0.7") == "es"
    assert best_language("en;q=0.2, de") == "de"
    assert best_language("ja") == best_language(None) == best_language("de;q=x") == best_language("fr;q=0") == "en"


def test_a_page_opens_in_its_links_language_or_else_the_browsers(page_events):
    from explorer.app.link.opening import LinkEvents
    from explorer.app.serving.session import Session

    link, lang = LinkEvents(page_events), page_events.page.setting("lang")

    def opened(query: str, accept: str | None) -> str:
        headers = {"accept-language": accept} if accept else {}
        request = SimpleNamespace(query_params=QueryParams(query), headers=headers)
        return link.open_page(Session("date-translator", "cpu"), request)[lang]

    assert opened("", "de-DE,de;q=0.9") == "de" and opened("", None) == "en"
    assert opened("lang=es&layer=1", "fr-FR") == "es" and opened("layer=1", "fr-FR") == "fr"


def test_the_models_headline_and_examples_follow_the_language(page_events):
    from explorer.app.i18n.relabel import LanguageEvents
    from explorer.app.serving.session import Session

    page, events, session = page_events.page, LanguageEvents(page_events), Session("date-translator", "cpu")
    words = events.model_words("de", session)
    assert words[page.headline] == ("mitgelieferter Checkpoint date-translator · encoder-decoder · 259.783 Parameter · "
                                    "date-translation")
    assert "- **Vokabular**: 135 Tokens \\(Modell: 135\\)" in words[page.model.model_md]  # the sidebar's description
    assert t("architecture.encoder_decoder", "de", arch="encoder-decoder", encoder=2, decoder=2, heads=4, d_model=64,
             d_ff=256, norm="pre-norm", positional="sinusoidal") in words[page.model.model_md].replace("\\", "")
    assert words[page.inputs.ex1]["choices"][0] == ("10 Beispiele für Satz 1 …", "")
    assert words[page.inputs.ex2]["choices"][1:] == events.model_words("en", session)[page.inputs.ex2]["choices"][1:]
    # a model change in a page whose last Run was French: its words and its notices in French
    from explorer.app.serving.session import get_model

    shown = SimpleNamespace(request=SimpleNamespace(lang="fr", toggles=Toggles(padding=False)))
    changed = page_events.models.changed_model(session, get_model(session, page_events.ctx), "x", ("", ""), shown)
    assert changed[page.headline].endswith(" · 259\u202f783 paramètres · date-translation")
    assert t("model.reset", "fr") in changed[page_events.status].split("\n\n")
    assert changed[page.setting("continue_tokens")]["label"] == t("page.label.generate_at_most", "fr")


def test_the_figures_note_on_a_repeated_token_in_each_language():
    from explorer.app.run.state_line import note_in
    from explorer.labels import occurrence_note

    note = occurrence_note(["2", "0", "2·2", "6"])
    assert [note_in(note, lang) for lang in LANGS] == [
        note, "« 2·2 » dans les figures = le 2e « 2 » de la séquence.",
        "„2·2“ in den Abbildungen = das 2. „2“ der Folge.",
        "«2·2» en las figuras = el 2.º «2» de la secuencia."]
    assert note_in(None, "fr") is None and note_in("another note", "de") == "another note"


def test_a_runs_common_errors_are_said_in_the_forms_language(page_events):
    from explorer.app.i18n.messages import message_in

    assert message_in("Type a sentence first (the input is empty).", "de") == t("errors.empty", "de")
    assert message_in("head L3 H9 does not exist in the cross attention (2 layers x 4 heads)", "fr") == (
        "la tête L3 H9 n'existe pas dans l'attention cross (2 couches × 4 têtes)")
    assert message_in("Something else entirely.", "es") == "Something else entirely."  # not listed: English
    # through the page's Run: its form carries the language, `reporting` says the error in it
    from explorer.app.serving.errors import escape_md
    from explorer.app.serving.session import Session

    heads = {f"{kind}_heads_on": None for kind in ("encoder", "decoder", "cross")}
    form = page_events.run_form(session=Session("date-translator", "cpu"), sentence1="", sentence2="",
                                padding_mask=True, causal_mask=True, custom_mask="none", blocked_position=0, window=2,
                                **heads, kind="cross", layer=0, head=0, sentence=1, lang="es")
    assert list(page_events.analyze(form))[-1][page_events.status] == "⚠️ " + escape_md(t("errors.empty", "es"))


def test_a_lesson_speaks_the_language_its_request_carries(page_events):
    """The lesson panel's handler writes the lesson (title, step, check's words, goal, notice) and the Lessons menu in
    the page's language, an argument of each call: the same handler in German, then French, then English."""
    from explorer.app.page.lesson_events import LessonEvents
    from explorer.app.serving.kept import Shown

    events, p = LessonEvents(page_events, page_events.page.lesson), page_events.page.lesson
    total = len(events.catalogue.lessons)
    for lang in ("de", "fr", "en", "es"):
        out = events.show("month-heads", 3, "attention", Shown(), lang)
        title, hint = t("lessons.month-heads.title", lang), t("lessons.month-heads.step3_hint", lang)
        shown = re.sub(r'<span class="lesson-(?:rest|measured)">(.*?)</span>', r"\1", out[p.text])  # folded parts
        assert shown == "\n\n".join([t("lesson.heading", lang, n=3, total=total, title=title),
                                           t("lesson.step", lang, k=3, steps=4, do=t("lessons.month-heads.step3", lang)),
                                           t("lesson.no_run", lang, hint=hint)])
        assert t("lessons.month-heads.goal", lang) in out[p.about] and t("lessons.month-heads.notice", lang) in out[
            p.about]
        assert out[p.menu]["choices"][3] == (f"3. {title}", "month-heads")
    assert t("lessons.month-heads.title", "de") == "Die Cross-Attention-Köpfe, die den Monat lesen"


def test_a_checks_verdict_in_each_language():
    from explorer.app.page.lesson_format import RunFacts
    from explorer.app.page.lessons import LESSONS
    from explorer.app.serving.errors import escape_md

    month = next(x for x in LESSONS if x.id == "month-heads")
    check = month.in_language("de").steps[2].check
    facts = RunFacts("date-translator", "attention", "lundi 3 mars 2025", "2025-03-03", "2025-05-03", {"cross": 2},
                     frozenset({"causal"}))
    assert check.verdict(facts, "de") == (True, f"✓ der Monat ist zu 05 geworden (die Ausgabe Ihres Laufs: "
                                                f"„{escape_md('2025-03-03')}“ → mit Ihren Schaltern: "
                                                f"„{escape_md('2025-05-03')}“; 2 Köpfe aus; Maske causal aus)")
    assert month.in_language("es").steps[2].check.verdict(None, "es") == (
        False, "✗ todavía no: apague tanto cross L0 H1 como cross L1 H3 (pulse primero **Ejecutar**)")


def test_a_teachers_lesson_carries_its_translations(tmp_path):
    """docs/examples/lessons/month-my-way.toml's [fr] table and do_fr ... words; German, which it lacks, is its own;
    a translation table with an unknown word is refused, named."""
    from pathlib import Path

    from explorer.app.page.lesson_files import read_lesson
    from explorer.app.page.lesson_format import LessonError

    example = Path(__file__).resolve().parents[2] / "docs" / "examples" / "lessons" / "month-my-way.toml"
    lesson = read_lesson(example)
    fr = lesson.in_language("fr")
    assert (fr.title, fr.steps[1].check.passed, fr.steps[2].do) == ("Le mois, à ma façon", "le mois est devenu 05",
                                                                   "Recochez **L1 H3**.")
    assert fr.steps[1].check.conditions == lesson.steps[1].check.conditions and lesson.in_language("de") == lesson
    bad = tmp_path / "bad.toml"
    bad.write_text(example.read_text().replace('[fr]\ntitle = ', '[fr]\ntitel = '))
    with pytest.raises(LessonError, match=r"bad.toml in .*\[fr\]: unknown key 'titel'"):
        read_lesson(bad)


def test_a_tabs_refusal_and_a_links_notice_in_the_pages_language(page_events):
    """A tab's button pressed too early is refused in the language of the page's last Run (its kept request: each
    call's own, never a module's); a link's notice line in the link's language."""
    from explorer.app.link.state import notice_line
    from explorer.app.serving.errors import escape_md
    from explorer.app.serving.kept import Shown
    from explorer.app.serving.session import Session

    tab = page_events.tab_events["contributions"]
    for lang in ("fr", "en", "de", "es"):
        shown = Shown()
        shown.request = SimpleNamespace(lang=lang)
        out = tab.open_head(Session("date-translator", "cpu"), "cross L1 H3", None, shown)
        assert out[tab.status] == "⚠️ " + escape_md(t("refusal.attribute_first", lang))
    assert notice_line(["unknown key zz", "layer given twice (the first one is used)"], lang="de") == (
        "Link: unbekannter Schlüssel zz; layer zweimal angegeben (der erste gilt). Der Rest des Links wurde "
        "wiederhergestellt.")
    assert notice_line(["something new"], "link.in_link", "es") == "Enlace: something new. El resto está en el enlace."


def test_a_links_notice_line_is_in_the_links_language(page_events):
    """A page opened by a French link with an unknown key: its notice line in French; Copy link of that page keeps
    `lang=fr` (the form's language, read where Copy link says what it leaves out)."""
    from explorer.app.link.opening import LinkEvents
    from explorer.app.serving.errors import escape_md
    from tests.app.test_lessons import opened_page

    page = page_events.page
    opened, value = opened_page(page_events, "lang=fr&zz=1")
    assert opened[page.inputs.link_notice] == "⚠️ " + escape_md("Lien : clé inconnue 'zz'. Le reste du lien a été "
                                                                "rétabli.")
    link = LinkEvents(page_events)
    copied = link.link_of_page(link.link_form([value(c) for c in link.link_inputs()]))
    assert "lang=fr" in copied[page.inputs.link_query] and copied[page.inputs.link_notice] == ""


def test_a_tabs_refusal_is_said_in_its_forms_language(page_events):
    """A tab's form carries the page's language (its last parameter, `lang`): Patching without a corrupted sentence
    refuses in it; a refusal's numbers are written the language's way and a load reason is read back too."""
    from explorer.app.i18n.messages import message_in, templates
    from explorer.app.serving.errors import escape_md
    from explorer.app.serving.session import Session
    from explorer.app.tabs.patching import PatchingForm

    tab = page_events.tab_events["patching"]
    for lang in LANGS:
        form = PatchingForm(Session("date-translator", "cpu"), "3 mai 2024", "", "", "", lang)
        assert tab.patched(form)[tab.status] == "⚠️ " + escape_md(t("refuse.patching_two", lang))
    english = ("This task holds 12,345 tokens; on a model of 124,439,808 parameters one request takes at most 8,000: "
               "use fewer or shorter pairs (nothing was computed).")
    assert message_in(english, "de") == t("refuse.task_tokens", "de", tokens="12.345", parameters="124.439.808",
                                          most="8.000")
    assert message_in("Could not load 'zz': folder zz does not exist", "es") == (
        "No se pudo cargar 'zz': la carpeta zz no existe")
    # a query outside the sentence, with and without padding: the more specific text is read first
    padded = ("query position 9 is outside the 5 query tokens of sentence 1 (with 2 padding positions after them): "
              "use 0..6, or -5..-1 from its last token")
    assert message_in(padded, "fr").startswith("la position de requête 9 est hors des 5 jetons") and "2 positions" in (
        message_in(padded, "fr"))
    unread = ("Sentence 2: 3 characters are not in this model's vocabulary and are read as [UNK]: “€”, “½”. This "
              "model reads its 80 characters: a–z, 0–9.")
    assert message_in(unread, "de") == ("Satz 2: 3 Zeichen sind nicht im Vokabular dieses Modells und werden als [UNK] "
                                       "gelesen: “€”, “½”. Dieses Modell liest seine 80 Zeichen: a–z, 0–9.")
    assert len(templates()) > 100


def test_a_runs_figures_speak_the_runs_language(page_events):
    """The Run's attention map drawn in the form's language: its title, axes and text alternative (its numbers with a
    decimal comma); its ticks (the tokens) untouched; an English page's figure is sent as drawn."""
    import orjson
    import plotly.graph_objects as go

    from explorer.app.i18n.result_words import plot_in
    from explorer.app.page.assets import plot
    from explorer.app.serving.session import Session

    form = page_events.run_form(session=Session("date-translator", "cpu"), sentence1="3 mai 2024", sentence2="",
                                padding_mask=True, causal_mask=True, custom_mask="none", blocked_position=0, window=2,
                                encoder_heads_on=None, decoder_heads_on=None, cross_heads_on=None, kind="cross",
                                layer=1, head=3, sentence=1, lang="de")
    sent = {c: v for update in page_events.analyze(form) for c, v in update.items()}  # the first look's, then the rest
    layout = orjson.loads(sent[page_events.plots["head"]].plot)["layout"]
    where = t("figure.where", "de", kind=t("figure.cross", "de"), layer=1, head=3, sentence=1)
    assert layout["title"]["text"] == t("figure.with_toggles_off", "de", where=where)  # no head on: L1 H3 off
    assert (layout["xaxis"]["title"]["text"], layout["yaxis"]["title"]["text"]) == (t("figure.key", "de"),
                                                                                   t("figure.query", "de"))
    assert {"m", "a", "i"} <= set(layout["xaxis"]["ticktext"])  # the source's characters, as the model reads them
    alt = layout["meta"]["alt"]["text"]
    assert alt.startswith(layout["title"]["text"] + ". Gewicht: ") and "Am stärksten: " in alt and "schaut am meisten auf" in alt
    assert not re.search(r"\b0\.\d", alt), alt  # 0,907, not 0.907
    english = plot(go.Figure(layout={"title": "weight"}))
    assert orjson.loads(plot_in(english, "fr").plot)["layout"]["title"]["text"] == "poids"
    assert plot_in(english, "en") is english and plot_in(None, "es") is None


def test_a_tabs_summary_is_said_in_its_forms_language(page_events):
    """The Lens tab's summary in the form's language, its numbers the language's way, the token as the model wrote
    it; in English, as the tab wrote it."""
    from explorer.app.serving.session import Session
    from explorer.app.tabs.lens import LensForm

    tab = page_events.tab_events["lens"]
    outs = {lang: tab.read(LensForm(Session("date-translator", "cpu"), "3 mai 2024", lang)) for lang in LANGS}
    said = {lang: out[tab.parts.summary] for lang, out in outs.items()}
    assert said["en"].startswith("After the last token (") and "(p = 1.000)" in said["en"]
    for lang in LANGS[1:]:
        assert said[lang].startswith(t("result.lens", lang).split("(")[0]) and "(p = 1,000)" in said[lang], said[lang]
        assert "**\\[EOS\\]**" in said[lang] and "the output" not in said[lang]
    # the Lens figure's rows are words ("embeddings", "after L0"), said in the form's language; its hover too
    figure = orjson.loads(outs["fr"][tab.parts.lens_plot].plot)["data"]
    assert figure[0]["y"] == [t("row.embeddings", "fr"), t("row.after", "fr", layer=0), t("row.after", "fr", layer=1)]
    assert figure[0]["hovertemplate"] == t("figure.hover.lens_top", "fr", value="%{z:.3f}")


# ----------------------------------------------------------------------------------------------- the tabs' results
OTHERS = LANGS[1:]


def opening(key: str, lang: str) -> str:
    """The words of a catalogue text before its first placeholder."""
    return t(key, lang).split("{")[0]


def layout_of(plot) -> dict:
    return orjson.loads(plot.plot)["layout"]


def test_contributions_speak_the_forms_language(page_events):
    from dataclasses import fields

    from explorer.app.tabs.contributions.forms import ContributionForm

    tab, session = page_events.tab_events["contributions"], Session("date-translator", "cpu")
    p = tab.parts
    for lang in OTHERS:
        form = ContributionForm(session, "3 mai 2024", method="input_x_gradient", cross_heads_on=["L0 H0"], lang=lang)
        out = tab.attributed(form)
        summary = out[p.summary].split("\n\n")
        assert summary[0].startswith(opening("result.contributions.summary", lang)), summary[0]
        assert summary[1].startswith(opening("result.contributions.toggled", lang).split("*")[0]), summary[1]
        assert not any(w in out[p.summary] for w in ("attributed", "the model's top token", "With the toggles"))
        dla = layout_of(out[p.dla_plot])
        assert dla["title"]["text"].startswith(opening("figure.contributions.dla", lang))
        assert t("figure.contributions.cross_heads", lang) in [a["text"] for a in dla["annotations"]]
        assert layout_of(out[p.graph])["title"]["text"] == t("figure.contributions.routes", lang)
        assert out[p.delta_md].startswith(t("result.contributions.completeness", lang).split(":")[0])
        assert list(out[p.attribution_df].columns) == [t(f"column.{k}", lang) for k in
                                                       ("sequence", "position", "token", "attribution", "share")]
        assert "18," in out[p.summary] and "18." not in out[p.summary]  # logit([EOS]) = 18,845: a decimal comma
        names = [t("column.source", lang), t("column.decoder_input", lang)]  # its sequences' names: words
        assert list(dict.fromkeys(out[p.attribution_df].iloc[:, 0])) == names
        assert [d["y"] for d in orjson.loads(out[p.strip].plot)["data"]] == [[n] for n in names]
        # the page Run again with other switches while another tab is shown: the notice, in the form's language
        other = ContributionForm(session, "3 mai 2024", method="input_x_gradient", cross_heads_on=["L0 H1"], lang=lang)
        stale = tab.after_run("attention", out[p.result], *[getattr(other, f.name) for f in fields(other)], (), "")
        assert stale[p.stale] == "⚠️ " + t("notice.contributions.stale", lang) != "⚠️ " + t(
            "notice.contributions.stale")
        chosen = tab.head("cross L0 H1", out[p.result], lang)  # a head chosen in its menu: the page's language
        assert chosen[p.head_md].startswith("**" + t("figure.cross", lang)[:5]) and list(chosen[p.head_df].columns)[
            :2] == [t("column.run", lang), t("column.rank", lang)]
        refused = tab.attributed(ContributionForm(session, "3 mai 2024", threshold=2, lang=lang))
        assert refused[page_events.status] == "⚠️ " + escape_md(t("refuse.threshold", lang, value="2,0"))


def test_the_circuit_speaks_the_forms_language(page_events):
    """The progress line while it computes, the summary, the graph's and the curve's words and the table's headers;
    a refusal (too many edges asked) in the same language."""
    from explorer.app.tabs.circuit.forms import CircuitForm

    tab, session = page_events.tab_events["circuit"], Session("date-translator", "cpu")
    p = tab.parts
    for lang in OTHERS:
        steps = list(tab.found(CircuitForm(session, method="eap", generated=8, held_out=0, lang=lang)))
        assert steps[0][page_events.status] == t("result.circuit.finding_generated", lang, n=8,
                                                  method=t("result.circuit.eap", lang))
        out = steps[-1]
        summary = out[p.summary].split("\n\n")
        assert summary[0].startswith(opening("result.circuit.size", lang)) and opening("result.circuit.task_eap",
                                                                                          lang) in summary[1]
        assert t("result.circuit.eap", lang) in summary[1] and t("result.circuit.logit_diff", lang) in summary[1]
        assert escape_md(t("result.notes.cross", lang).format()) in summary  # the core's note on the graph
        graph, curve = layout_of(out[p.graph]), layout_of(out[p.curve])
        assert graph["title"]["text"].startswith(opening("figure.circuit.title", lang))
        assert "," in graph["title"]["text"].rpartition(" ")[2]  # faithfulness 0,907
        colorbars = [d["marker"]["colorbar"]["title"]["text"] for d in orjson.loads(out[p.graph].plot)["data"]
                     if "colorbar" in d.get("marker", {})]
        assert colorbars == [t("figure.circuit.eap_score", lang)]
        assert curve["title"]["text"] == t("figure.circuit.curve", lang)
        # the text alternative of a point figure, whole: each trace's sentence, the notes, the switch to its tables
        alt = graph["meta"]["alt"]
        along = t("count.point.other", lang, n="") + t("figure.described.points_along", lang).split("{axis}")[0].split(
            "{count}")[1]  # " points along "
        assert along in alt["text"] and alt["switch"] == t("figure.described.switch", lang), alt
        assert t("figure.described.notes", lang).split("{")[0] in alt["text"] and "points along" not in alt["text"]
        assert along in curve["meta"]["alt"]["text"] and " rows" not in curve["meta"]["alt"]["text"]
        assert curve["yaxis"]["title"]["text"] == t("figure.faithfulness", lang)
        assert list(out[p.table].columns)[1:3] == [t("column.from", lang), t("column.into", lang)]
        refused = list(tab.found(CircuitForm(session, edges=10**6, lang=lang)))[-1][page_events.status]
        assert refused.startswith("⚠️ " + escape_md(opening("refuse.edges_range", lang))), refused


def test_features_speak_the_forms_language(page_events):
    """The reading's summary and heatmap, a latent's dashboard, the switched output's lines and table, the latent
    switches' line (written beside them in the page's language) and a refusal."""
    from explorer.app.tabs.features.forms import FeatureForm, SwitchForm
    from explorer.app.tabs.features.switch_state import switches_line

    tab, session = page_events.tab_events["features"], Session("date-gpt", "cpu")
    p = tab.parts
    for lang in OTHERS:
        out = tab.read(FeatureForm(session, "3 mai 2024", "", lang=lang))
        summary = out[p.summary].split("\n\n")
        between = t("result.features.reading", lang).split("{error}")[1].split("{norm}")[0]  # " en moyenne contre ‖x‖ "
        assert between in summary[0] and summary[1] == t("result.features.heatmap_how", lang)
        assert re.search(r"\*\*\d+,\d %\*\*", summary[0]), summary[0]  # "98,0 %" in French, German and Spanish
        assert layout_of(out[p.heatmap])["title"]["text"].startswith(opening("figure.features.heatmap", lang))
        assert layout_of(out[p.strip])["yaxis"]["title"]["text"] == t("figure.activation", lang)
        assert out[p.latent_md].startswith(opening("result.features.latent", lang))
        switched = tab.switch(SwitchForm(session, "3 mai 2024", "", "5:off", lang=lang))
        assert t("result.features.same_switched", lang) in switched[p.out_md].split("\n\n")
        assert list(switched[p.out_df].columns) == [t(f"column.{k}", lang) for k in ("run", "output", "tokens_p",
                                                                                       "mean_p")]
        assert list(switched[p.out_df].iloc[:, 0]) == [t("column.baseline", lang), t("column.switched", lang)]
        assert switches_line("5:off,7:clamp=2.5", lang) == t("result.features.switches_kept", lang, latents=t(
            "result.features.latents", lang, said=t("result.features.off", lang, n=5) + ", " + t(
                "result.features.clamped", lang, n=7, value="2,5")))
        refused = tab.read(FeatureForm(session, "3 mai 2024", "", 10**6, lang=lang))[page_events.status]
        assert refused.startswith("⚠️ " + escape_md(opening("refuse.latent_range", lang))), refused
    # the tab opened (no button: the form's values come flat) reads in the form's language too
    from explorer.app.tabs.features.tab import FeaturesTab

    auto = tab.auto_read(session, "3 mai 2024", "", "", None, "de", FeaturesTab.id, "")
    assert auto[p.summary].split("\n\n")[1] == t("result.features.heatmap_how", "de")


def test_importance_and_roles_speak_the_forms_language(page_events):
    """Importance's summary and figure; Roles' summary (its heads per role with the language's numbers, the role
    names the API's words), its heatmaps' titles and panel titles; a refusal of each."""
    from explorer.app.forms import form_of
    from explorer.app.tabs.importance import ImportanceForm
    from explorer.app.tabs.roles.tab import RolesForm, SwitchOffForm

    importance, roles, session = page_events.tab_events["importance"], page_events.tab_events["roles"], Session(
        "date-translator", "cpu")
    on = ["L0 H0", "L0 H1", "L1 H0", "L1 H1"]
    for lang in OTHERS:
        out = importance.ranked(form_of(ImportanceForm, session, "3 mai 2024", "", True, True, "none", 0, 2, "cross",
                                        lang=lang))
        assert out[importance.parts.summary].startswith(opening("result.importance.summary", lang) + t(
            "result.importance.answer", lang))
        figure = layout_of(out[importance.parts.importance_plot])
        assert figure["title"]["text"].startswith(opening("figure.importance.title", lang) + t("figure.cross_long",
                                                                                               lang))
        # past its first heatmap: the second's sentence (no row title), the scatter's, the notes
        sentences = figure["meta"]["alt"]["text"].split(". ")
        second = t("count.row.other", lang, n="") + t("figure.described.heat_columns", lang).split("{count_rows}")[
            1].split("{count_columns}")[0]  # " rows by "
        assert sum(second in x for x in sentences) == 1 and "rows by" not in figure["meta"]["alt"]["text"]
        among = t("count.point.other", lang, n="") + t("figure.described.points_among", lang).split("{count}")[1].split(
            "{said}")[0]  # " points, among them "
        assert among in figure["meta"]["alt"]["text"] and t("figure.described.switch", lang) == figure["meta"]["alt"][
            "switch"]
        scored = roles.scored(form_of(RolesForm, session, "3 mai 2024", "cross", on, on, on, lang=lang))
        strongest = scored[roles.parts.summary].split("\n\n")[1]
        assert strongest.startswith(opening("result.roles_strongest", lang) + "previous L") and "\\(0," in strongest
        probe = layout_of(scored[roles.parts.probe_plot])
        assert probe["title"]["text"].startswith(opening("figure.roles.probe", lang))
        assert any(a["text"].startswith(t("figure.roles.induction", lang) + " (") for a in probe["annotations"])
        refused = roles.switched_off(form_of(SwitchOffForm, session, "3 mai 2024", "cross", "dancing", 2, "probe",
                                             lang=lang))[page_events.status]
        off = roles.switched_off(form_of(SwitchOffForm, session, "3 mai 2024", "cross", "previous", 2, "probe",
                                         lang=lang))[roles.parts.off_md]  # the line saying which heads went off
        assert off.startswith(escape_md(opening("result.notes.switched_many", lang))) and t(
            "result.notes.by_score", lang, role="previous", rank_by="probe") in off and "0." not in off, off
        assert refused.startswith("⚠️ " + escape_md(opening("refuse.unknown_role", lang))), refused


def test_compare_speaks_the_forms_language(page_events):
    """The comparison's line, each side's words and output table, its head map's title; a refusal (no second
    model) in the same language."""
    from explorer.app.forms import form_of
    from explorer.app.page.head_labels import head_labels
    from explorer.app.tabs.compare.forms import CompareForm, SecondModelForm

    tab, session = page_events.tab_events["compare"], Session("date-translator", "cpu")
    p = tab.parts
    run = dict(sentence1="3 mai 2024", sentence2="", padding_mask=True, causal_mask=True, custom_mask="none",
               blocked_position=0, window=2, encoder_heads_on=head_labels(2, 4), decoder_heads_on=head_labels(2, 4),
               cross_heads_on=head_labels(2, 4)[1:], kind="cross", layer=1, head=3, sentence=1)
    for lang in OTHERS:
        form = form_of(CompareForm, session=session, model2="date-gpt", **run, predict_after=-1, continue_tokens=8,
                       measure="weights", kind2="decoder", layer2=1, head2=0, encoder_heads_on2=None,
                       decoder_heads_on2=None, cross_heads_on2=None, lang=lang)
        out = tab.compared(form)
        assert out[p.summary].startswith(opening("result.compare.tokens_different", lang))
        first = p.sides[0]
        words = out[first.md].split("\n\n")
        assert words[1].startswith(t("figure.cross_long", lang) + ", ") and opening("result.output.sentence_from",
                                                                                     lang) in words[2]
        assert list(out[first.output].columns)[:2] == ["#", t("column.run", lang)]
        assert layout_of(out[first.head])["title"]["text"].startswith(opening("figure.with_toggles", lang))
        refused = tab.set_second(SecondModelForm(session, "", lang=lang))[page_events.status]
        assert refused == "⚠️ " + escape_md(t("refuse.choose_model", lang))


def test_a_text_alternatives_cells_are_named_in_the_language():
    """All heads' cells ("layer 0 · query 8: x"), Rollout's cells ("‘a’ at ‘b’"), and a number in scientific notation
    with the language's decimal comma; the tokens as they are."""
    from explorer.app.i18n.messages import message_in

    english = ("Strongest: ‘layer 0 · query 8: mai’ attends most to ‘head 1 · keys 0–3: [BOS] … 3’, 0.95; ‘3’ at "
               "‘m’, 3.4e−06.")
    for lang in OTHERS:
        said = message_in(english, lang)
        assert t("figure.cell_query", lang, layer=0, q=8, token="mai") in said and "3,4e−06" in said, said
        assert t("figure.cell_keys", lang, head=1, lo=0, hi=3, first="[BOS]", last="3") in said
        assert t("figure.alt_cell_at", lang, cell_query="3", cell_key="m", value="3,4e−06") in said


def test_a_circuit_tasks_bad_rows_are_named_in_the_forms_language(page_events):
    """Typed pairs with bad rows: the refusal names each bad row by its line, in the form's language."""
    from explorer.app.tabs.circuit.forms import CircuitForm

    tab, session = page_events.tab_events["circuit"], Session("date-translator", "cpu")
    pairs = "3 mai 2024 | \n# a comment\n3 mai 2024"
    for lang in OTHERS:
        said = list(tab.found(CircuitForm(session, task="typed", pairs=pairs, lang=lang)))[-1][page_events.status]
        rows = t("refuse.task.bad_rows", lang, n=2, format="lines", cells="; ".join([
            t("refuse.task.line", lang, n=1, why=t("refuse.task.corrupted_empty", lang)),
            t("refuse.task.line", lang, n=3, why=t("refuse.task.fields", lang, n=1))]))
        assert said == "⚠️ " + escape_md(t("refuse.task_unread", lang, err=rows)), said


def test_inside_a_head_speaks_the_forms_language(page_events):
    """The head's plain summary, and through the handler with every detail (a head switched off): the worked steps
    (titles, strips, the table's headers and rows, the notes), the numbers' summary with its glossed terms and the
    toggles' changes, numbers with the language's decimal sign; the computation's and the query-key map's titles, the
    computation's strip notes and the keys table's headers; a refusal (a query outside the sentence)."""
    import html

    from explorer.app.forms import form_of
    from explorer.app.tabs.head.forms import HeadForm

    tab, session = page_events.tab_events["head"], Session("date-translator", "cpu")
    p = tab.parts
    run = {"sentence1": "3 mai 2024", "sentence2": "", "padding_mask": True, "causal_mask": True,
           "custom_mask": "none", "blocked_position": 0, "window": 2, "encoder_heads_on": None,
           "decoder_heads_on": None, "cross_heads_on": ["L0 H0"], "kind": "cross", "layer": 1, "head": 3,
           "sentence": 1, "continue_tokens": 8, "measure": "weights", "lines_heads": None, "keys": None}
    from explorer.app.i18n.messages import message_in

    plain = ("**cross-attn. L1 H3**, at token “\\[EOS\\]” (position 11) of sentence 1. A head lets a token take "
             "information from other tokens: this one looks at the tokens of the source sentence (what the encoder "
             "read). Below, step by step with this run's own numbers, how it decides how much to take from each, and "
             "what it passes on.")  # steps.plain_summary's words (the plain view: its worked steps cost seconds)
    said = message_in(plain, "de")
    assert said.startswith("**") and t("result.head.looks_source", "de") in said and "A head" not in said
    for lang in OTHERS:
        out = tab.shown_tab(form_of(HeadForm, session=session, **run, query=-1, words="details", lang=lang))
        assert out[p.summary].startswith(opening("result.head.details", lang))
        assert layout_of(out[p.computation])["title"]["text"].startswith(opening("figure.head.inside", lang))
        assert layout_of(out[p.query_key])["title"]["text"] == t("figure.head.queries_keys", lang, where="cross L1 H3")
        assert list(out[p.table].columns)[:3] == [t(f"column.{k}", lang) for k in ("key", "token", "blocked")]
        steps = out[p.steps]
        for key in ("match_title", "mix_title", "back_title", "strip_x", "may_look", "switched_off"):
            assert t(f"head.steps.{key}", lang) in steps, key
        assert opening("head.steps.where_title", lang) in steps and opening("head.steps.made", lang) in steps
        assert html.escape(t("head.steps.why_cross", lang)) in steps and t("head.steps.col_mask", lang) in steps
        assert "How well" not in steps and "numbers; scale" not in steps and "may look" not in steps
        words = re.sub(r"<[^>]+>", " ", steps)  # the text shown
        assert re.search(r"\[−?\d,\d+; ", words) and not re.search(r"\d\.\d", words)  # "[0,25; −2,8; …]"
        summary = [re.sub(r"<[^>]+>", "", x) for x in out[p.summary].split("\n\n")]  # its glossed terms' <abbr>
        assert summary[0].startswith(f"**{t('figure.cross', lang)} L1 H3**")
        assert summary[1].startswith(opening("head.summary.x", lang) + t("head.summary.x_pre", lang))
        assert summary[2] == t("head.summary.writes_off", lang, size="0")
        assert t("head.summary.head_off", lang, head="cross L1 H3") in summary[3] and " off" not in summary[3]
        figure = layout_of(out[p.computation])
        strip_words = t("figure.inside.strip", lang, title="k_j", top="@").split("@")[0]
        notes = [a["text"] for a in figure["annotations"]] + [figure[k]["title"]["text"] for k in figure if k.startswith(
            "xaxis") and "title" in figure[k]]
        assert figure["xaxis"]["title"]["text"].startswith(strip_words) and not re.search(r"\d\.\d|blue", str(notes))
        assert t("figure.inside.strip_short", lang, title="q", top="@").split("@")[0] in notes[0]
        hovers = [d.get("hovertemplate") for d in orjson.loads(out[p.computation].plot)["data"]]  # Plotly's %{y} kept
        assert hovers[0] == t("figure.hover.vec_of", lang, title="k_j") and "%{y}" in hovers[0]
        assert t("figure.hover.run_bar", lang, run=t("figure.baseline", lang)) in hovers
        bar = next(d for d in orjson.loads(out[p.computation].plot)["data"] if d["type"] == "bar")  # score bars
        said = t("figure.inside.score_value", lang, value="@").split("@")[0]
        assert all(x.startswith(said) and not re.search(r"\d\.\d", x) for x in bar["customdata"]), bar["customdata"]
        refused = tab.shown_tab(form_of(HeadForm, session=session, **run, query=99, words="plain", lang=lang))
        assert refused[page_events.status].startswith("⚠️ " + escape_md(opening("refuse.query_outside", lang)))



def test_a_tables_headers_before_a_result_follow_the_pages_language(page_events):
    """The layout's tables show their headers before a first result (the why-this-token list's, the circuit's): a
    change of the page's language sends them in it (i18n.headers, chained after the relabelling), from whichever
    language they are in; a token or "#" as it is."""
    import pandas as pd

    from explorer.app.i18n.headers import headers_in, tables_in

    page, lang = page_events.page, page_events.page.setting("lang")
    why = next(b for b in page.demo.blocks.values() if getattr(b, "elem_id", None) == "contrib-why-table")
    wired = [fn for fn in page.demo.fns.values() if why in fn.outputs and getattr(fn.fn, "__name__", "") == "tables"]
    assert len(wired) == 1 and wired[0].inputs == [lang, *wired[0].outputs]  # the language, then each table
    english = why.value["headers"]
    for code in OTHERS:
        said = tables_in(code, [pd.DataFrame(columns=english), None])
        assert list(said[0].columns) == [t(f"column.{k}", code) for k in ("head_off", "p_without", "change",
                                                                          "top_without")] and said[1] is None
        assert headers_in(list(said[0].columns), "en") == english  # back, from the language it was in
    assert headers_in(["#", "mai", "from"], "de") == ["#", "mai", t("column.from", "de")]


def test_inside_a_heads_notices_are_each_said_before_they_are_joined(page_events):
    """The Run's notice (a blocked position that does not exist) and the tab's own (a picked key outside the
    sentence) on one status line: each in the form's language, joined; in English as the code writes them."""
    from explorer.app.forms import form_of
    from explorer.app.tabs.head.forms import HeadForm

    tab, session = page_events.tab_events["head"], Session("date-translator", "cpu")
    run = {"sentence1": "3 mai 2024", "sentence2": "", "padding_mask": True, "causal_mask": True,
           "custom_mask": "block token", "blocked_position": 99, "window": 2, "encoder_heads_on": None,
           "decoder_heads_on": None, "cross_heads_on": None, "kind": "encoder", "layer": 0, "head": 0,
           "sentence": 1, "continue_tokens": 8, "measure": "weights", "lines_heads": None, "keys": [1, 50]}
    said = {lang: tab.shown_tab(form_of(HeadForm, session=session, **run, query=-1, words="plain", lang=lang))[
        page_events.status] for lang in ("en", "fr")}
    last = re.search(r"0\.\.(\d+)", said["en"]).group(1)  # the encoder's last position
    assert said["en"] == "⚠️ " + escape_md(f"Position 99 does not exist (positions 0..{last}); blocked position "
                                          f"{last} instead. key 50 is not one of the {int(last) + 1} keys here: "
                                          "left out of the steps.")
    assert said["fr"] == "⚠️ " + escape_md(" ".join([
        t("result.notes.blocked_instead", "fr", k=99, last=last),
        t("result.notes.left_out", "fr", keys=50, n=int(last) + 1)])), said["fr"]


def test_a_text_alternatives_points_counts_and_tables_in_the_language():
    """A flow graph's text alternative in French, German and Spanish: each edge said from the catalogue
    ([figure.point], its share with the decimal comma), a count of one singular ([count]), its tables' header words
    and numbers the language's way, the tokens as they are; English as describe wrote it. describe_points' English
    is the catalogue's."""
    import numpy as np

    from explorer.app.i18n.result_words import figure_json_in
    from explorer.viz import figure_json
    from explorer.viz.attention import head_heatmap as viz_head
    from explorer.viz.describe import describe
    from explorer.viz.describe_points import NOUNS, POINT_WORDS
    from explorer.viz.flow import flow_figure
    from tests.viz.test_viz_flow import TOKS, sample_graph

    english = catalogue("en")
    assert {k: english[f"figure.point.{k}"] for k in POINT_WORDS} == POINT_WORDS
    assert {n: (english[f"count.{n}.one"], english[f"count.{n}.other"]) for n in NOUNS} == {
        n: ("{n} " + one, "{n} " + other) for n, (one, other) in NOUNS.items()}
    fig = flow_figure(sample_graph(cross=True), TOKS, ["src<0>", "src1"])
    sent = figure_json(fig, None, describe(fig).as_dict())
    assert figure_json_in(sent, "en") == sent
    for lang in OTHERS:
        alt = orjson.loads(figure_json_in(sent, lang))["layout"]["meta"]["alt"]
        edge = t("figure.point.edge_head", lang, layer=1, head=1, source="src<0>", source_at=0, target="cat",
                 target_at=3, share=number(0.05, lang))
        assert f"{t('count.point.one', lang, n=1)}, " in alt["text"] and edge in alt["text"], alt["text"]
        assert t("figure.point.edge_residual", lang, layer=0, source="cat", source_at=3, target="cat", target_at=3,
                 share="1") + "; " in alt["text"] and " share " not in alt["text"] and "1 points" not in alt["text"]
        residual = alt["tables"][0]
        assert residual["columns"] == [t("alt_table.what", lang), t("column.share", lang)]
        assert [r[1] for r in residual["rows"]] == [number(x, lang) for x in (1, 0.7, 0.4, 0.1)]
        assert residual["rows"][1][0] == t("figure.point.edge_residual", lang, layer=1, source="cat", source_at=3,
                                           target="cat", target_at=3, share=number(0.7, lang))
    heat = viz_head(np.array([[0.25, 0.75]], dtype=np.float32), ["q"], ["a", "key"])  # a token "key" stays a token
    sent = figure_json(heat, None, describe(heat).as_dict())
    for lang in OTHERS:
        alt = orjson.loads(figure_json_in(sent, lang))["layout"]["meta"]["alt"]
        assert t("count.row.one", lang, n=1) + " (" in alt["text"] and " 1 row" not in alt["text"]
        (table,) = alt["tables"]
        assert table["columns"] == [t("figure.query", lang), "a", "key"] and table["rows"] == [
            ["q", number(0.25, lang), number(0.75, lang)]]
    big = viz_head(np.full((100, 100), 0.01, dtype=np.float32), *[[f"t{i}" for i in range(100)]] * 2)
    sent = figure_json(big, None, describe(big).as_dict())  # a count in a note: "10,000 cells in all"
    for lang in OTHERS:
        (table,) = orjson.loads(figure_json_in(sent, lang))["layout"]["meta"]["alt"]["tables"]
        assert table["note"] == t("figure.cells_in_all", lang, n=number(10000, lang)), table["note"]
    from explorer.viz.mask import mask_heatmap  # a mask with one allowed cell: no verb agrees with a count

    one = np.zeros((2, 2), dtype=bool)
    one[1, 0] = True
    mask = mask_heatmap(one, ["a", "b"], ["a", "b"])
    sent = figure_json(mask, None, describe(mask).as_dict())
    assert "Cells that are 1: 1 of 4; the others are 0." in orjson.loads(sent)["layout"]["meta"]["alt"]["text"]
    for lang in OTHERS:
        alt = orjson.loads(figure_json_in(sent, lang))["layout"]["meta"]["alt"]
        assert alt["text"].endswith(t("figure.described.ones", lang, n=1, m=4)), alt["text"]


def _written_headers() -> dict[str, str]:
    """Every table header the page's code writes as a literal (a list assigned to a `*header*` name, an OutputTable's
    first argument, a `headers=` or `columns=` argument, the list a `*table*`/`*rows*` function returns first) -> its
    file; an f-string's parts are the [column] words it makes, named there."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "explorer" / "app"
    found: dict[str, str] = {}
    for path in root.rglob("*.py"):
        lists: list[ast.AST] = []
        for node in ast.walk(ast.parse(path.read_text())):
            targets = getattr(node, "targets", None) or [getattr(node, "target", None)]
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and any(
                    isinstance(x, ast.Name) and "header" in x.id.lower() for x in targets):
                lists.append(node.value)
            if isinstance(node, ast.Call):
                lists += [k.value for k in node.keywords if k.arg in ("headers", "columns")]
                lists += node.args[:1] if getattr(node.func, "id", "") == "OutputTable" else []
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and ("table" in node.name or "rows" in
                                                                               node.name):
                lists += [r.value.elts[0] for r in ast.walk(node) if isinstance(r, ast.Return) and isinstance(
                    r.value, ast.Tuple) and r.value.elts]
        for x in filter(None, lists):
            for part in ast.walk(x):
                if isinstance(part, (ast.List, ast.Tuple)):
                    found.update({e.value: path.name for e in part.elts if isinstance(e, ast.Constant) and isinstance(
                        e.value, str)})
    return found


def test_every_header_a_table_writes_is_said_again_in_a_new_language():
    """Each header the page's tables write (read from the code) is a [column] word, or a symbol ("#", "|v W_O|"), so
    a change of language says it again from whichever language it is in, and back; a table's run words too."""
    import pandas as pd

    from explorer.app.i18n.headers import headers_in, tables_in

    columns = {text: key for key, text in catalogue("en").items() if key.startswith("column.")}
    headers = _written_headers()
    assert {"filler (toggled)", "head switched off", "sentence", "q·k"} <= set(headers)  # the reading finds them
    assert {h: f for h, f in headers.items() if h not in columns and re.search(r"[A-Za-z]{3,}", h)} == {}
    for lang in LANGS:  # a header in one language is one key only, or going back could pick another
        texts = [text for key, text in catalogue(lang).items() if key.startswith("column.")]
        assert len(texts) == len(set(texts)), lang
    english = pd.DataFrame([[1, "baseline", "la", 0.5]], columns=["#", "run", "filler (toggled)", "p baseline"])
    french = tables_in("fr", [english])[0]
    assert list(french.columns) == ["#", t("column.run", "fr"), t("column.filler_toggled", "fr"),
                                    t("column.p_baseline", "fr")] and list(french.iloc[0]) == [
        1, t("column.baseline", "fr"), "la", 0.5]
    german = tables_in("de", [french])[0]
    assert list(german.columns)[2] == "Füllung (mit Schaltern)" and german.iloc[0, 1] == t("column.baseline", "de")
    back = tables_in("en", [german])[0]
    assert back.equals(english) and headers_in(["|v W_O|", "#"], "es") == ["|v W_O|", "#"]

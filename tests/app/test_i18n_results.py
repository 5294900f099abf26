"""The analysis tabs' results in the page's language (issue 42 item 5): each tab's handler, called with a form whose
`lang` is French, German or Spanish, says its summary, a figure's title or axis and a table's headers in that
language (i18n.result_words reading the English back through `<lang>.results.toml`), its numbers with a decimal
comma, and a refusal in it too; the tokens and the API's names stay as the model and the API write them."""

from __future__ import annotations

import re

import orjson

from explorer.app.i18n.words import LANGS, t
from explorer.app.serving.errors import escape_md
from explorer.app.serving.session import Session

OTHERS = LANGS[1:]


def opening(key: str, lang: str) -> str:
    """The words of a catalogue text before its first placeholder."""
    return t(key, lang).split("{")[0]


def layout_of(plot) -> dict:
    return orjson.loads(plot.plot)["layout"]


def test_contributions_speak_the_forms_language(page_events):
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
        graph, curve = layout_of(out[p.graph]), layout_of(out[p.curve])
        assert graph["title"]["text"].startswith(opening("figure.circuit.title", lang))
        assert "," in graph["title"]["text"].rpartition(" ")[2]  # faithfulness 0,907
        assert curve["title"]["text"] == t("figure.circuit.curve", lang)
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
        scored = roles.scored(form_of(RolesForm, session, "3 mai 2024", "cross", on, on, on, lang=lang))
        strongest = scored[roles.parts.summary].split("\n\n")[1]
        assert strongest.startswith(opening("result.roles_strongest", lang) + "previous L") and "\\(0," in strongest
        probe = layout_of(scored[roles.parts.probe_plot])
        assert probe["title"]["text"].startswith(opening("figure.roles.probe", lang))
        assert any(a["text"].startswith(t("figure.roles.induction", lang) + " (") for a in probe["annotations"])
        refused = roles.switched_off(form_of(SwitchOffForm, session, "3 mai 2024", "cross", "dancing", 2, "probe",
                                             lang=lang))[page_events.status]
        assert refused.startswith("⚠️ " + escape_md(opening("refuse.unknown_role", lang))), refused

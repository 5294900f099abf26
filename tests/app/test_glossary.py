"""The page's glossary (explorer.app.page.glossary): every jargon word it lists (residual stream, W_O, z W_O, nats,
Spearman, logit, layer norm, the layer's norm, softmax, unembedding) carries its one-line gloss wherever the built page
shows it: every tab's help, every Markdown and HTML text, every shown label, info line and placeholder (an <abbr
title> in Markdown, "(...)" right after it in plain text, or the gloss as the component's info line)."""

from __future__ import annotations

import html

import pytest

from explorer.app.page.glossary import GLOSSARY, abbr, gloss_of, glossary, glossed, unglossed, with_gloss


@pytest.fixture(scope="module")
def page(ctx):
    from explorer.app.demo import starting_point
    from explorer.app.page.layout import layout
    from explorer.app.serving.session import Session
    from explorer.app.tabs import TABS

    return layout(starting_point(ctx, "date-translator", "cpu"), Session("date-translator", "cpu"), TABS)


def test_glossed_wraps_each_word_once_and_leaves_code_alone():
    text = "Each head writes z W_O into the residual stream; logits in nats. `W_O` stays code."
    out = glossed(text)
    assert unglossed(text) and not unglossed(out)
    assert out.count("<abbr") == 5 and f'title="{html.escape(gloss_of("z W_O"))}">z W_O</abbr>' in out
    assert "\">`W_O`</abbr> stays" in out and glossed(out) == out  # a code span glossed whole; never twice
    assert unglossed("the logit (its raw score)") == [] and unglossed(with_gloss("nats")) == []
    assert abbr("logit", "<b>") == f'<abbr title="{html.escape(gloss_of("logit"))}">&lt;b&gt;</abbr>'
    assert {t for t, _, _ in GLOSSARY} >= {"residual stream", "W_O", "z W_O", "nats", "Spearman", "logit",
                                           "layer's norm"}


def test_every_text_of_the_page_glosses_its_jargon(page):
    """Every Markdown/HTML value (the tabs' help among them), shown label, info line and placeholder."""
    import gradio as gr

    found, helps = [], 0
    for block in page.demo.blocks.values():
        info = getattr(block, "info", None) or ""
        for attr in ("value", "label", "info", "placeholder"):
            text = getattr(block, attr, None)
            if not isinstance(text, str) or (attr == "value" and not isinstance(block, (gr.Markdown, gr.HTML))):
                continue
            if attr == "label" and not getattr(block, "show_label", True):
                continue  # not shown
            missing = [(t, around) for t, around in unglossed(text) if not (attr == "label" and gloss_of(t) in info)]
            found += [(type(block).__name__, block.elem_id, attr, t, around) for t, around in missing]
            helps += attr == "value" and "tab-text" in (block.elem_classes or [])
    assert helps >= 10  # every tab's help was scanned
    assert found == [], found


def test_every_tabs_help_with_jargon_is_shown_glossed(page):
    from explorer.app.tabs import TABS

    jargon = [tab for tab in TABS if unglossed(tab.help)]
    assert jargon  # the lens, patching, contributions, features ... tabs name such words
    shown = {b.value for b in page.demo.blocks.values() if "tab-text" in (getattr(b, "elem_classes", None) or [])}
    for tab in jargon:
        assert glossed(tab.help) in shown, tab.id


def test_the_page_script_glosses_what_a_run_writes():
    """The page's script carries the glossary's (its terms and glosses from GLOSSARY: one list for both)."""
    import json

    from explorer.app.page.assets import page_js
    from explorer.app.page.glossary import GLOSS_JS
    from explorer.app.tabs import TABS

    assert GLOSS_JS.strip() in page_js(TABS)
    glossaries = json.loads(GLOSS_JS.split("const glossaries = ", 1)[1].split(", languages = ", 1)[0])
    assert glossaries["en"] == [[pattern, gloss] for _, pattern, gloss in GLOSSARY]
    assert glossaries["fr"] == [[pattern, gloss] for _, pattern, gloss in glossary("fr")]  # chosen by the page's menu
    assert '"Deutsch": "de"' in GLOSS_JS


@pytest.mark.parametrize("lang", ["fr", "de", "es"])
def test_a_gloss_in_each_language_finds_the_languages_own_words(lang):
    """The gloss is in the page's language and finds the word as the language writes it (Residualstrom) as well as
    the English one it keeps (logit); each language's word is one the page's catalogue uses."""
    from explorer.app.i18n.words import catalogue

    own = {"fr": "flux résiduel", "de": "Residualstrom", "es": "flujo residual"}[lang]
    out = glossed(f"{own} · logits", lang)
    assert out.count("<abbr") == 2 and f'title="{html.escape(gloss_of("residual stream", lang))}">{own}</abbr>' in out
    assert gloss_of("logit", lang) != gloss_of("logit") and not unglossed(out, lang) and unglossed(own, lang)
    assert own in " ".join(catalogue(lang).values()) and unglossed(own) == []  # English does not know the word

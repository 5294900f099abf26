"""The page in French, German and Spanish in Chromium (explorer.app.i18n): a link's `lang=` puts the labels, the
tabs and the Run button in that language, the state line after the Run too, with numbers the language's way
(0,8), the model's headline (its size 259.783 in German); nothing in the title row overflows its box (German words
are long; the Lessons menu's German word whole at a phone's width); the API tab's prose in French; a lesson opened in German (`lang=de&lesson=month-heads`) shows its panel
in German, its check's line too. The catalogues themselves: tests/app/test_i18n.py."""

from __future__ import annotations

import pytest

from explorer.app.i18n.words import t

pytestmark = pytest.mark.browser

TEXT = "s => document.querySelector(s).innerText"
# Every button, label and menu (its shown choice) of the title row and the sentences' row whose text is wider than
# its box (clipped words: the size menu's "Tamaño norm…").
OVERFLOWING = """() => [...document.querySelectorAll(
  '#title button, #title label span, #title input, #inputs button, #inputs label span')]
  .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1).map(e => e.innerText || e.value)"""
CASES = {  # the Run button, the sentence's label, a tab, the state line, a number, the headline's model size
    "fr": ("Exécuter", "Phrase", "Toutes les têtes", "Réglages : Masque de remplissage désactivé", "T=0,8",
           "259\u202f783 paramètres"),
    "de": ("Ausführen", "Satz", "Alle Köpfe", "Einstellungen: Auffüllmaske aus", "T=0,8", "259.783 Parameter"),
    "es": ("Ejecutar", "Frase", "Todas las cabezas", "Ajustes: Máscara de relleno desactivada", "T=0,8",
           "259.783 parámetros"),
}


# German opens a lesson too (the same page load; `mode=full` keeps every tab shown, as the other languages have it):
# its panel's heading, step and check's line in German.
LESSON = {"de": ("&lesson=month-heads&mode=full", "Lektion 3 von", "Die Heatmap ist cross L1 H3",
                 "Die Cross-Attention-Köpfe")}


@pytest.mark.parametrize("lang", list(CASES))
def test_a_link_opens_the_page_in_its_language(open_view, lang):
    run, sentence, tab, state, temperature, size = CASES[lang]
    api = t("api.endpoints", lang)
    lesson = LESSON.get(lang)
    with open_view(f"lang={lang}&padding=0&sample=1&temperature=0.8" + (lesson[0] if lesson else "")) as (page, errors):
        page.wait_for_function(f"() => document.querySelector('#run').innerText.trim() === {run!r}")
        assert page.evaluate(TEXT, "#text1 label") .strip() == sentence
        assert page.get_by_role("tab", name=tab).count() == 1
        line = page.evaluate(TEXT, "#state-line")  # the first Run's, made after the language was set
        assert line.startswith(state) and temperature in line and "in the figures" not in line, line
        page.wait_for_function(f"() => document.querySelector('#headline').innerText.includes({size!r})")
        assert page.evaluate(OVERFLOWING) == []
        if lesson:  # the panel written in the link's language, its check's line (✓ or ✗) too
            page.wait_for_function("""([heading, step]) => { const p = document.querySelector('#lesson-text');
              return p && p.innerText.includes(heading) && p.innerText.includes(step) &&
                /(✓ |✗ noch nicht: )/.test(p.innerText); }""", arg=list(lesson[1:3]))
            assert lesson[3] in page.evaluate(TEXT, "#lesson-text") and "Ziel:" in page.evaluate(TEXT, "#lesson-about")
        if lang == "de":  # a phone's width (390 px): the Lessons menu's German word whole, on a line of its own
            page.set_viewport_size({"width": 390, "height": 844})
            page.wait_for_function("""() => { const i = document.querySelector('#lessons input');
              return i && i.getBoundingClientRect().width > 200 && i.scrollWidth <= i.clientWidth + 1; }""")
            box = page.locator("#lessons input").bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
        if lang == "fr":  # the API tab's prose, made in every language once the page was wired (one language: time)
            page.get_by_role("tab", name="API").click()
            page.wait_for_function(f"() => document.querySelector('#api-text').innerText.includes({api!r})")
        assert not errors, errors

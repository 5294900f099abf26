"""Where the Contributions tab's two views answer "why this token?" differently, the page says what each measures
(explorer.app.tabs.contributions.two_measures), on the shipped date-translator's “3” of "lundi 3 mars 2025": the
largest direct share (direct_logit_attribution, computed here) is cross L1 H3, the largest switch-off effect
(head_effects, computed here) decoder L0 H3, which changes the answer."""

from __future__ import annotations

import re

import numpy as np
import pytest

from explorer.app.i18n.result_words import result_in
from explorer.app.i18n.words import number, t
from explorer.app.run.readings import read_texts
from explorer.app.serving.errors import escape_md
from explorer.app.tabs.contributions.result import ContributionRequest, contributions
from explorer.app.tabs.contributions.two_measures import two_measures
from explorer.app.tabs.contributions.why_token import WhyRequest, why
from explorer.interpret.dla import direct_logit_attribution
from explorer.interpret.head_effects import head_effects

TEXT, POSITION = "lundi 3 mars 2025", 6  # the decoder reads "2025-0" and predicts the month's “3”


@pytest.fixture(scope="module")
def translator(app):
    return app.load("date-translator")[1]


def test_two_views_that_disagree_are_each_said_with_their_head_and_number(translator):
    src, tgt = read_texts(translator, TEXT, None, 1024)[0].tensors()
    ref = direct_logit_attribution(translator.model, src, tgt=tgt, position=POSITION)
    shares = {ref.kind: ref.heads.numpy(), "cross": ref.cross.numpy()}
    kind = max(shares, key=lambda k: shares[k].max())
    layer, head = np.unravel_index(int(shares[kind].argmax()), shares[kind].shape)
    effects = head_effects(translator.model, src[0], position=POSITION, tgt=tgt[0])
    top = effects.sets[int(effects.order()[0])][0]
    assert (kind, layer, head) == ("cross", 1, 3) and (top.kind, top.layer, top.head) == ("decoder", 0, 3)
    r = contributions(translator, ContributionRequest(TEXT, position=POSITION, steps=1), 1024)
    w = why(translator, WhyRequest(TEXT, POSITION), 1024)
    words = two_measures(w, r)
    assert words.startswith("**Two measures, two answers.**")
    assert f"**cross L1 H3** writes the most ({float(shares['cross'][1, 3]):+.2f})" in words
    p_without = float(effects.prob[int(effects.order()[0])])
    assert "**decoder L0 H3** matters most" in words and f"to {p_without:.2f})" in words and p_without < 0.5
    before, after = re.search(r"fell from ([\d.]+) to ([\d.]+)", words).groups()
    for lang in ("fr", "de", "es"):  # the page says the change in its language too (result_words, as `reporting` does)
        change = t("result.notes.fell", lang, name="“3”", before=number(float(before), lang, 2),
                   after=number(float(after), lang, 2))
        said = result_in(words, lang)
        assert escape_md(change) in said and "fell from" not in said, said
    assert two_measures(why(translator, WhyRequest(TEXT, POSITION - 1), 1024), r) == ""  # another prediction


def test_two_views_that_agree_say_so(translator):
    r = contributions(translator, ContributionRequest("samedi 21 novembre 2026", position=3, steps=1), 1024)
    words = two_measures(why(translator, WhyRequest("samedi 21 novembre 2026", 3), 1024), r)
    assert words.startswith("Both measures name **cross L1 H0**")

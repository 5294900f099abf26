"""Toggles that change no output are explained with the Run's own numbers (explorer.app.run.unchanged), on the shipped
models: a cross head of date-translator off (and the next step, the two heads that matter most, which then change the
answer), the causal mask off on an encoder-decoder (checked on the model: the first token's probability is the same
bit for bit, the others move by what the page says, the heatmaps attend ahead by what it says), a padding mask with
nothing padded, sampling that cannot differ from greedy decoding (the sampled answer is the greedy one)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from explorer.app.forms import RunForm
from explorer.app.page.head_labels import head_labels
from explorer.app.page.next_step import NextStepEvents, PairRequest, pair_to_switch
from explorer.app.run.figures import RunFigures
from explorer.app.run.pair import compare
from explorer.app.run.result import Analysis
from explorer.app.run.toggles import Toggles
from explorer.app.run.unchanged import SURE, padding_reason, plain, sure, two_numbers
from explorer.app.run.view import View
from explorer.app.serving.errors import escape_md
from explorer.app.serving.kept import Shown
from explorer.app.serving.session import Session
from explorer.app.tabs import TABS
from explorer.outputs.sampling import Sampling

TEXT = "lundi 3 mars 2025"
CROSS = frozenset((layer, head) for layer in range(2) for head in range(4))  # date-translator: 2 layers x 4 heads


@pytest.fixture(scope="module")
def translator(app):
    return app.load("date-translator")[1]


def analysis(loaded, toggles, text=TEXT, text2=None, sampling=None) -> tuple[Analysis, object]:
    cmp = compare(loaded, text, text2, toggles, 64, sampling=sampling)
    return Analysis(cmp, View(), RunFigures.of(TABS)), cmp


def test_numbers_keep_the_decimals_that_tell_them_apart():
    assert two_numbers(1.0, 0.98) == ("1.00", "0.98")
    assert two_numbers(0.99998, 0.99997) == ("0.99998", "0.99997")
    assert sure(0.97) == "0.97" and sure(0.99962) == "0.9996" and sure(1.0) == "1.00"
    assert plain(1.3e-05) == "0.000013" and plain(0.0712) == "0.071" and plain(0.0) == "0"


def test_a_cross_head_off_that_changes_nothing_says_what_fell_and_offers_two_heads(translator):
    a, cmp = analysis(translator, Toggles(heads_on={"cross": CROSS - {(1, 3)}}))
    base, tog = cmp.baseline.outputs[0], cmp.toggled.outputs[0]
    assert base.ids == tog.ids and not a.output.changed  # nothing visible changed
    drops = [b - t for b, t in zip(base.probs, tog.probs)]
    k = max(range(len(drops)), key=lambda i: abs(drops[i]))
    before, after = two_numbers(base.probs[k], tog.probs[k])
    assert after < before  # the head helped that token
    words = a.why.text
    assert f"p(“{base.labels[k]}”) fell from {before} to {after}" in words
    assert f"of the {len(base.ids)} tokens" in words and "the other heads carry" in words
    step = a.why.step
    assert step.target.position == k and step.target.token == base.ids[k]  # where the decoder predicts it
    assert step.label == f"Switch off the 2 heads that matter most for “{base.labels[k]}”"
    # The step's two heads, switched off on top of L1 H3, change the answer.
    found = pair_to_switch(translator, PairRequest(TEXT, step, {"cross": CROSS - {(1, 3)}}), 64)
    assert len(found.heads) == 2
    on = {"cross": set(CROSS - {(1, 3)}), "decoder": {(la, h) for la in range(2) for h in range(4)}}
    for h in found.heads:
        on[h.kind].discard((h.layer, h.head))
    after_step, cmp2 = analysis(translator, Toggles(heads_on={k: frozenset(v) for k, v in on.items()}))
    assert after_step.output.changed and cmp2.toggled.outputs[0].ids[k] != base.ids[k]
    assert after_step.why is None  # the answer changed: nothing to explain


def test_causal_off_on_the_translator_is_explained_and_checked_on_the_model(translator):
    a, cmp = analysis(translator, Toggles(causal=False))
    base, tog = cmp.baseline.outputs[0], cmp.toggled.outputs[0]
    assert base.ids == tog.ids and not a.output.changed
    # The first token is made from the start token alone: nothing before or after it, the same probability exactly.
    assert base.probs[0] == tog.probs[0]
    change = max(abs(b - t) for b, t in zip(base.probs, tog.probs))
    assert 0 < change < 1e-3  # the earlier tokens, run again, see later ones: a trace of a change
    words = a.why.text
    assert "there is no later token yet" in words and f"by at most {plain(change)}" in words
    # The heatmaps (one pass over the whole answer) do attend ahead without the mask, and not with it.
    best = (0.0, 0, 0)
    for layer, (w_off, w_on) in enumerate(zip(cmp.toggled.attentions["decoder"], cmp.baseline.attentions["decoder"])):
        ahead = torch.ones(w_off.shape[-2:], dtype=torch.bool).triu(1)
        assert float((w_on[0] * ahead).sum(-1).max()) == 0.0
        per_head = (w_off[0] * ahead).sum(-1).amax(-1)
        if float(per_head.max()) > best[0]:
            best = (float(per_head.max()), layer, int(per_head.argmax()))
    assert best[0] > 0.5
    assert f"decoder L{best[1]} H{best[2]} puts up to {best[0]:.2f} of a query's weight on later tokens" in words
    assert a.why.step is None  # no head is off: no heads to offer


def test_padding_off_with_nothing_padded_says_so(translator):
    a, cmp = analysis(translator, Toggles(padding=False))
    assert not a.output.changed and len(cmp.inputs.rows) == 1
    assert "no [PAD] for the mask to hide" in a.why.text
    _, two = analysis(translator, Toggles(padding=False), text2="3 May 2024")
    assert len({len(r) for r in two.inputs.rows}) == 2 and padding_reason(two) is None  # padded: not said


def test_sampling_that_cannot_change_the_answer_says_its_lowest_probability(translator, app):
    sampling = Sampling(temperature=1.5, seed=0)
    a, cmp = analysis(translator, Toggles(), sampling=sampling)
    greedy = compare(translator, TEXT, None, Toggles(), 64).baseline.outputs[0]
    answer = cmp.baseline.outputs[0]
    assert answer.ids == greedy.ids  # what the words claim: the draws gave the greedy answer
    gen, row = cmp.baseline.generations[0]
    probs = gen.sampled_probs[row, :len(answer.ids)].tolist()
    assert min(probs) > SURE
    k = probs.index(min(probs))
    assert (f"the most probable token kept p ≥ {sure(probs[k])} at every step (the lowest: token {k}, "
            in a.why.text and f"“{answer.labels[k]}”" in a.why.text and "T=1.5" in a.why.text)
    # induction-gpt at T = 1.5 is not sure of every token: nothing is claimed.
    induction = app.load("induction-gpt")[1]
    b, icmp = analysis(induction, Toggles(), text="t1 t2 t3 t4 t5 t6 t1 t2 t3 t4", sampling=sampling)
    igen, irow = icmp.baseline.generations[0]
    assert float(igen.sampled_probs[irow, :len(icmp.baseline.outputs[0].ids)].min()) <= SURE and b.why is None


def test_nothing_toggled_and_greedy_says_nothing(translator):
    assert analysis(translator, Toggles())[0].why is None


def test_the_page_shows_the_words_and_its_button_switches_the_heads(translator, page_events):
    ev, page = page_events, page_events.page
    kinds = translator.config.attention_kinds()
    cross = [label for label in head_labels(*kinds["cross"]) if label != "L1 H3"]
    heads = (head_labels(*kinds["encoder"]), head_labels(*kinds["decoder"]), cross)
    form = RunForm(Session("date-translator", "cpu"), TEXT, "", True, True, "none", 0, 2, *heads, "cross", 1, 3, 1)
    shown = Shown()
    ev.analyze_at_once(form, shown)
    steps = NextStepEvents(ev)
    out = steps.shown(shown, "")
    r = page.results
    assert "fell from" in out[r.why] and out[r.step]["visible"] is True and out[r.step_target] is not None
    assert out[r.step_target].text == TEXT  # the Run's sentence, whatever the box says by the click
    switched = steps.switch_pair(Session("date-translator", "cpu"), out[r.step_target], "en", *heads)
    off = set(head_labels(*kinds["decoder"])) - set(switched[page.heads["decoder"]])
    off |= set(cross) - set(switched[page.heads["cross"]])
    assert len(off) == 2 and switched[r.said].startswith("Switched off ")
    after = steps.shown(shown, switched[r.said])  # the next Run's line starts with what was switched off
    assert after[r.why].startswith("Switched off ") and after[r.said] == ""
    # the same kept result said in the language its request carries: the line, the button and a refusal
    from explorer.app.i18n.words import t

    shown.request = dataclasses.replace(shown.request, lang="de")
    german = steps.shown(shown, "")
    assert german[r.why].startswith(escape_md("Die Schalter haben keine Ausgabe geändert, aber der Lauf hat es "
                                              "gemessen: p(„"))
    assert " fiel von 1,0" in german[r.why] and "Mit 1 ausgeschaltetem Kopf" in german[r.why]
    assert german[r.step]["value"] == t("why.step", "de", token=out[r.step_target].target.label)
    refused = steps.switch_pair(Session("date-translator", "cpu"), None, "es", *heads)
    assert refused[ev.status] == "⚠️ " + escape_md(t("why.run_first", "es"))


def test_a_sampled_run_shows_the_greedy_answer_beside_it(app):
    """induction-gpt at T = 2: the draws leave the repeated pattern; the greedy answer (the Run without Sample) is
    shown beside it, in the table and the summary, with the token where they part."""
    induction = app.load("induction-gpt")[1]
    text = "t1 t2 t3 t4 t5 t6 t1 t2 t3 t4"
    a, cmp = analysis(induction, Toggles(), text=text, sampling=Sampling(temperature=2.0, seed=3))
    greedy = compare(induction, text, None, Toggles(), 64).baseline.outputs[0]
    sampled = cmp.baseline.outputs[0]
    assert cmp.greedy[0].ids == greedy.ids and cmp.greedy[0].probs == pytest.approx(greedy.probs)
    first = next(n for n, (s, g) in enumerate(zip(sampled.ids, greedy.ids)) if s != g)
    assert (f"sampled: “{sampled.text}” · greedy (Sample off): “{greedy.text}” (the draws differ from token {first} on)"
            in a.output.summary)
    assert a.output.rows[-1][1:3] == ["greedy (Sample off)", greedy.text]
    assert analysis(induction, Toggles(), text=text)[1].greedy is None  # greedy Run: nothing beside it
    # The Generation tab's figure says both above its rows.
    from explorer.app.tabs.generation import generation_inputs, self_figure

    inp = generation_inputs(cmp, View())
    assert f"“{sampled.text}” · greedy (Sample off, every head on): “{greedy.text}”" in inp.greedy
    assert inp.greedy.startswith("drawn (T=2, ") and inp.greedy in self_figure(inp).layout.title.text


def test_a_language_models_unchanged_favourite_is_measured(lm_folder):
    """tiny-gpt2 (a causal LM) with the causal mask off: its top next token stays, and the line says how its
    probability moved, as the output table's numbers have it."""
    from explorer.app.serving.registry import ModelRegistry
    from explorer.app.serving.session import AppContext, load_session

    ctx = AppContext(ModelRegistry(), allowed_dirs=(str(lm_folder),))
    gpt = load_session(str(lm_folder / "tiny-gpt2"), "cpu", ctx)[1]
    a, cmp = analysis(gpt, Toggles(causal=False), text="The cat sat on the mat")
    base, tog = cmp.baseline.outputs[0], cmp.toggled.outputs[0]
    p = len(cmp.inputs.rows[0]) - 1
    assert int(base.top_ids[p, 0]) == int(tog.top_ids[p, 0]) and not a.output.changed
    before, after = two_numbers(float(base.top_probs[p, 0]), float(tog.favourite_probs[p]))
    name = cmp.codec.labels([int(base.top_ids[p, 0])])[0]
    assert f"p(“{name}”) {'fell' if after < before else 'rose'} from {before} to {after}" in a.why.text
    assert "every token now also sees the tokens after it" in a.why.text
    assert a.why.step is None  # no head off

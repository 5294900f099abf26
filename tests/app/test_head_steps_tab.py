"""The Inside a head tab's plain steps (explorer.app.tabs.head.steps) on the shipped date-translator and tiny GPT-2 and
Llama models: the worked example's numbers are the page's Run's (its weights the heatmap's, baseline or toggled; a
masked key has no score; the sum counts every key), plain words by default with the details hidden and no jargon,
all details with every jargon word glossed; the table names a repeated token as the figures do; token text is
escaped."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import gradio as gr
import numpy as np
import pytest

from explorer.app.page.glossary import GLOSSARY, unglossed
from explorer.app.run.pair import compare
from explorer.app.run.toggles import Toggles
from explorer.app.tabs.head.steps import num
from explorer.labels import unique_labels
from tests.app.test_head_tab import DATE1, DATE2, LM1, LM2, form, head_events, numbers


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    return head_events(tmp_path_factory)


JARGON = re.compile("|".join(p for _, p, _ in GLOSSARY), re.IGNORECASE)


def loaded_of(ev, f):
    from explorer.app.serving.session import get_model

    return get_model(f.session, ev.ctx)


def test_plain_steps_are_the_runs_numbers_with_a_masked_key(ev):
    """decoder L1 H2 at query 3 (plain words, the default keys): the 3 strongest, itself and key 4 (a later token:
    no score); every weight the Run's heatmap number; the sum and the other keys' part written."""
    f = form(ev, "date-translator", DATE1, DATE2, kind="decoder", layer=1, head=2, query=3, words="plain")
    updates, data = numbers(ev, f)
    ex, base = data["steps"], data["baseline"]
    cmp = compare(loaded_of(ev, f), DATE1, DATE2, Toggles(), 1024)
    shown = cmp.baseline.attentions["decoder"][1][0, 2, 3].numpy()  # the heatmap's row: sentence 1, head 2, query 3
    keys = [k["key"] for k in ex["keys"]]
    strongest = np.argsort(-shown, kind="stable")[:3].tolist()
    assert set(strongest) | {3, 4} == set(keys)
    for k in ex["keys"]:
        assert abs(k["weight"] - shown[k["key"]]) < 1e-6
        assert abs(k["exp"] / ex["exp_sum"] - shown[k["key"]]) < 1e-6
    masked = next(k for k in ex["keys"] if k["key"] == 4)
    assert masked["blocked_by"] == "causal" and masked["score"] is None and masked["dot"] is None
    assert ex["others_allowed"] == 0 and ex["others_blocked"] == len(shown) - 5
    assert abs(ex["weight_total"] - 1) < 1e-5
    np.testing.assert_allclose(ex["z"], base["weighted_sum"], atol=1e-6)
    html = updates[ev.parts.steps]
    row = re.search(r"<tr>(?:(?!</tr>).)*−∞ \(a later token\)(?:(?!</tr>).)*</tr>", html).group(0)
    assert row.count("—") == 2  # no q·k, no score for the masked key
    assert f"sum = {num(ex['exp_sum'])}" in html and f"+ 0 other keys, {ex['others_blocked']} masked" in html
    assert "÷ √16" in html
    # plain words: the details hidden (not drawn), no jargon anywhere
    assert updates[ev.parts.summary].startswith("**decoder self-attn. L1 H2**, at token")
    assert not JARGON.search(updates[ev.parts.summary] + html)
    shown_tab = ev.shown_tab(f)
    assert shown_tab[ev.parts.details]["visible"] is False and shown_tab[ev.parts.steps] == html
    table = numbers(ev, replace(f, words="details"))[0][ev.parts.table].set_index("key")  # the masked key: no score
    assert table.loc[4, "q·k"] == table.loc[4, "score"] == "—" and table.loc[4, "blocked"] == "causal"


def test_picked_keys_with_toggles_on_cross_attention(ev):
    """Cross L1 H0 with decoder L0 H1 off: the steps follow the toggled run (the model as switched); the keys picked
    and the other keys' count; all details: every jargon word glossed, the neuron view shown."""
    off = {"decoder": ["L0 H1"]}
    f = form(ev, "date-translator", DATE1, DATE2, off, kind="cross", layer=1, head=0, query=2, keys=[0, 5],
             words="details")
    updates, data = numbers(ev, f)
    toggles = Toggles(heads_on={"decoder": frozenset({(0, 0), (0, 2), (0, 3)} | {(1, h) for h in range(4)})})
    cmp = compare(loaded_of(ev, f), DATE1, DATE2, toggles, 1024)
    shown = cmp.toggled.attentions["cross"][1][0, 0, 2].numpy()
    ex = data["steps"]
    assert [k["key"] for k in ex["keys"]] == [0, 5]
    assert all(abs(k["weight"] - shown[k["key"]]) < 1e-6 for k in ex["keys"])
    assert ex["others_allowed"] == int((shown > 0).sum()) - 2 == ex["n_allowed"] - 2
    assert abs(ex["others_weight"] - (shown.sum() - shown[[0, 5]].sum())) < 1e-6
    html, summary = updates[ev.parts.steps], updates[ev.parts.summary]
    assert f"+ {ex['others_allowed']} other keys" in html and "encoder's output" in html
    assert unglossed(summary) == [] and unglossed(html) == [] and "<abbr" in html
    drawn = ev.shown_tab(replace(f, keys=[0, 5]))
    assert drawn[ev.parts.details]["visible"] is True and drawn[ev.parts.computation] is not None


def test_grouped_query_values_and_the_rest_of_the_keys(ev):
    f = form(ev, "tiny-llama", LM1 + " and the cat sat", LM2, layer=1, head=1, query=-1, words="plain")
    updates, data = numbers(ev, f)
    ex = data["steps"]
    base = data["baseline"]
    assert base["kv_head"] == 0 and "shares its keys and values" in updates[ev.parts.summary]
    for k in ex["keys"]:
        np.testing.assert_allclose(k["value"], base["values"][k["key"]], atol=1e-6)
    parts = np.sum([k["weighted_value"] for k in ex["keys"]], axis=0) + np.array(ex["others_value"])
    np.testing.assert_allclose(parts, base["weighted_sum"], atol=1e-5)
    assert ex["others_allowed"] > 0 and f"+ {ex['others_allowed']} other keys" in updates[ev.parts.steps]


def test_the_table_names_a_repeated_token_as_the_figures_do(ev):
    """"21 novembre 2026": the second "2" is "2·2" in the neuron view's rows, the table and the steps."""
    f = form(ev, "date-translator", DATE1, DATE2, kind="encoder", layer=0, head=0, query=-1)
    updates, data = numbers(ev, f)
    labels = unique_labels(data["key_labels"])
    repeated = [j for j, lab in enumerate(labels) if "·" in lab]
    assert repeated
    table = updates[ev.parts.table]
    for j, token in zip(table["key"], table["token"]):
        assert token == labels[j]
    fig = json.loads(updates[ev.parts.computation].plot)
    rows = next(t for t in fig["data"] if t.get("type") == "heatmap")["y"]  # the neuron view's key rows
    assert rows == [f"{j} {labels[j]}" for j in sorted(table["key"])]
    picked = replace(f, keys=repeated[:2], words="plain")
    html = ev.shown_tab(picked)[ev.parts.steps]
    assert f"k of {repeated[0]} “{labels[repeated[0]]}”" in html


def test_token_text_is_shown_as_text(ev):
    f = form(ev, "tiny-gpt2", "<b>x</b> <img src=x>", "", layer=0, head=0, query=-1,
             words="plain")
    updates, _ = numbers(ev, f)
    html = updates[ev.parts.steps]
    assert "<img" not in html and "<b>x" not in html and "&lt;" in html


@pytest.mark.parametrize("over, message", [({"keys": [99]}, "key 99 is outside the"), ({"keys": ["x"]}, "not a key"),
                                           ({"keys": list(range(9))}, "at most 8"), ({"words": "fancy"}, "words must")])
def test_bad_picks_are_a_message(ev, over, message):
    f = form(ev, "date-translator", DATE1, DATE2, **over)
    status = str(ev.api(f)[ev.status])
    assert status.startswith("⚠️") and message in status.replace("\\", ""), status


def test_keys_picked_on_a_longer_sentence_are_left_out_and_said(ev):
    """The page's picks outlive a new sentence: a key past the new one's keys is left out (the steps drawn with the
    rest) and the status says so; an API client's is refused (above)."""
    f = form(ev, "date-translator", DATE1, DATE2, kind="decoder", layer=1, head=2, query=-1, words="plain",
             keys=[1, 40])
    out = ev.shown_tab(f)
    assert "key 40 is not one of the 12 keys here" in str(out[ev.status]).replace("\\", "")
    assert "k of 1 " in out[ev.parts.steps] and "k of 40" not in out[ev.parts.steps]


def test_a_link_names_the_keys_and_the_words(ev):
    from explorer.app.link.values import Invalid
    from explorer.app.tabs.head.forms import keys_key, words_key
    from explorer.app.tabs.head.tab import TAB

    assert keys_key("0,4,7", None) == [0, 4, 7] and keys_key("[0, 4]", None) == [0, 4]
    assert words_key("details", None) == "details"
    for parse, text in ((keys_key, "1,2,3,4,5,6,7,8,9"), (keys_key, "x"), (words_key, "fancy")):
        with pytest.raises(Invalid):
            parse(text, None)
    updates, notices = TAB.restore_link(ev.parts, ev, {"keys": [0, 4], "words": "details"})
    assert notices == [] and updates[ev.parts.words] == "details"
    assert updates[ev.parts.keys]["value"] == [0, 4] and updates[ev.parts.keys]["choices"] == [("0", 0), ("4", 4)]


def test_nothing_masked_says_why_and_the_button_opens_a_middle_query_with_masked_keys(ev):
    """Encoder self-attention at the last token (the page's opening view): the mask step says why nothing is masked
    and offers decoder self-attention; the button's handler sets the page's kind and the next draw (the chained Run's)
    is at the middle query, where the causal mask hides every later key. A language model's last token: the same
    kind, its middle query. No button where no causal mask can help (causal off)."""
    f = form(ev, "date-translator", DATE1, "", kind="encoder", layer=0, head=0, words="plain")
    html = ev.shown_tab(f, None)[ev.parts.steps]
    assert "Nothing is masked for this query:</b> in the encoder" in html and 'data-head-masked="decoder"' in html
    assert "−∞ (" not in html
    out = ev.to_masked(f.session, "decoder|1700000000", None)
    assert out[ev.page.setting("kind")] == "decoder" and out[ev.parts.state].middle
    assert ev.to_masked(f.session, "self|1", None) == {ev.status: gr.skip()}  # not a kind of this model
    after = ev.shown_tab(replace(f, view=replace(f.view, kind="decoder")), out[ev.parts.state])
    assert after[ev.parts.query] == 6 and "position 6" in after[ev.parts.summary]  # the middle of 12
    assert "−∞ (a later token)" in after[ev.parts.steps] and "Nothing is masked" not in after[ev.parts.steps]
    assert not after[ev.parts.state].middle  # once
    lm = ev.shown_tab(form(ev, "tiny-gpt2", LM1, "", kind="decoder", layer=0, head=0, words="plain"), None)
    assert "none come after the last one" in lm[ev.parts.steps] and 'data-head-masked="decoder"' in lm[ev.parts.steps]
    off = form(ev, "date-translator", DATE1, "", kind="decoder", layer=0, head=0, words="plain", causal_mask=False)
    steps = ev.shown_tab(off, None)[ev.parts.steps]
    assert "the causal mask is off" in steps and "data-head-masked" not in steps

"""The link's state (explorer.app.link.state, its keys from the page's settings: link.setting_keys): every key read and
written, a round trip through the query string, the page's values made into a link (link.page_link), a link cut to a
length (link.length), and what a link may not do: unknown keys and invalid values become notices (the rest stands),
hostile values (paths, HTML, very long strings, unicode) reach nothing a person could not type."""

from __future__ import annotations

import functools
from urllib.parse import parse_qsl

import pytest

from explorer.app.link.docs import documented_keys, keys_table
from explorer.app.link.length import SAFE_QUERY, fit_length
from explorer.app.link.page_link import LinkForm, from_page
from explorer.app.link.setting_keys import heads_on
from explorer.app.link.state import LinkState, link_keys, notice_line, parse_link
from explorer.app.link.values import format_off, parse_off
from explorer.app.page.head_labels import parse_heads
from explorer.app.run.request import Session
from explorer.app.serving.errors import AppError
from explorer.app.serving.limits import MAX_CHARS, MAX_NEW_TOKENS
from explorer.app.serving.session import checked_source
from explorer.app.tabs import TABS

KINDS = {"encoder": (2, 4), "decoder": (2, 4), "cross": (2, 4)}
TAB_IDS = [t.id for t in TABS]


def accept_any(name: str) -> str:
    return name.strip()


def parse(query, check_model=accept_any, tabs=TABS):
    return parse_link(query, check_model=check_model, tabs=tabs)


def S(model=None, tab_values=None, **values) -> LinkState:
    """A link's state by its keys (`continue_` for the key `continue`)."""
    return LinkState(model, {k.rstrip("_"): v for k, v in values.items()}, tab_values or {})


def page_form(source, tab_values=None, **values) -> LinkForm:
    """What the page shows, by setting name (the session's model: `source`)."""
    return LinkForm(Session(source, "cpu"), values, tab_values or {})


FULL = S(model="date-translator", s1="samedi 21 novembre 2026", s2="3 May 2024", tab="positions", kind="decoder",
         layer=1, head=3, sentence=2, measure="values",
         off={"decoder": frozenset({(1, 2), (1, 3)}), "cross": frozenset({(0, 0)})}, padding=False, causal=True,
         mask="block token", blocked=4, window=5, position=-2, continue_=12, sample=True, temperature=0.8, top_k=40,
         top_p=0.9, seed=2147483647, size="projector", mode="class", lang="fr", lesson="month-heads", step=2,
         tab_values={"role": "previous", "k": 2, "rank": "typed text", "at": -3, "token": "t4",
                     "method": "input_x_gradient", "steps": 16, "threshold": 0.1, "pe_d": 32, "pe_len": 50,
                     "model2": "owner/other"})


def test_every_key_is_written_in_canonical_order_and_read_back():
    query = FULL.to_query()
    assert link_keys()[:5] == ["model", "s1", "s2", "tab", "kind"]
    assert link_keys()[-5:] == ["size", "mode", "lang", "lesson", "step"]
    assert [k for k, _ in parse_qsl(query)] == [*link_keys(), *FULL.tab_values]
    assert "off=decoder:L1H2,L1H3;cross:L0H0" in query  # readable
    assert "tab=positions" in query and "continue=12" in query and "mask=block%20token" in query
    state, notices = parse(query)
    assert notices == [] and state == FULL


def test_each_key_alone():
    cases = {"model=date-gpt": dict(model="date-gpt"), "model2=a/b": dict(tab_values={"model2": "a/b"}),
             "s1=hello%20world": dict(s1="hello world"), "s1=a+b": dict(s1="a b"), "s2=": dict(s2=""),
             "tab=overview": dict(tab="overview"), "tab=positions": dict(tab="positions"),
             "tab=contributions": dict(tab="contributions"), "tab=api": dict(tab="api"),
             "at=6": dict(tab_values={"at": 6}), "token=%233": dict(tab_values={"token": "#3"}),
             "role=induction&k=2": dict(tab_values={"role": "induction", "k": 2}),
             "lesson=3&step=2": dict(lesson="3", step=2), "lesson=Month-Heads": dict(lesson="month-heads"),
             "kind=cross": dict(kind="cross"), "layer=0": dict(layer=0), "head=7": dict(head=7),
             "sentence=2": dict(sentence=2), "measure=weights": dict(measure="weights"),
             "off=encoder:L0H1": dict(off={"encoder": frozenset({(0, 1)})}),
             "off=decoder:L1%20H2": dict(off={"decoder": frozenset({(1, 2)})}),  # the page's label form
             "padding=0": dict(padding=False), "causal=true": dict(causal=True),
             "mask=no%20self": dict(mask="no self"), "size=projector": dict(size="projector"),
             "mode=class": dict(mode="class"), "lang=de": dict(lang="de"), "blocked=0": dict(blocked=0), "window=16": dict(window=16),
             "position=-1": dict(position=-1), "continue=0": dict(continue_=0),
             f"continue={MAX_NEW_TOKENS}": dict(continue_=MAX_NEW_TOKENS)}
    for query, fields in cases.items():
        state, notices = parse(query)
        assert notices == [] and state == S(**fields), query


def test_invalid_values_are_named_and_the_rest_is_restored():
    query = ("s1=hello&layer=x&head=-1&sentence=3&kind=self&measure=colour&padding=maybe&mask=rm%20-rf&window=17"
             "&continue=41&blocked=-2&position=1e9&tab=nope&off=decoder:L1H2,Q3&layer=1&colour=blue&k=99&at=x"
             "&method=magic&threshold=0.9")
    state, notices = parse(query)
    assert state == S(s1="hello")
    text = " | ".join(notices)
    for part in ("layer 'x' is not a whole number", "head '-1' is not between 0 and 9,999",
                 "sentence '3' is not between 1 and 2", "kind 'self' is not one of encoder, decoder, cross",
                 "measure 'colour' is not one of weights, values", "padding 'maybe' is not 1 or 0",
                 "mask 'rm -rf' is not one of", "window '17' is not between 0 and 16",
                 f"continue '41' is not between 0 and {MAX_NEW_TOKENS}", "blocked '-2' is not between",
                 "position '1e9' is not a whole number", "tab 'nope' is not a tab of this page",
                 "k '99' is not between 1 and 64", "at 'x' is not a whole number", "method 'magic' is not one of",
                 "threshold '0.9' is not between 0.01 and 0.5",
                 "off 'decoder:L1H2,Q3' names a head 'Q3'", "layer given twice", "unknown key 'colour'"):
        assert part in text, (part, text)
    line = notice_line(notices)
    assert line.startswith("Link: ") and line.endswith("The rest of the link was restored.") and "\n" not in line


def test_a_tab_the_page_does_not_have_is_refused():
    without = [t for t in TABS if t.id != "contributions"]
    state, notices = parse("tab=contributions&at=3", tabs=without)
    assert state.tab is None and "tab 'contributions' is not a tab of this page" in notices[0]
    assert "unknown key 'at'" in notices[1]  # nor its keys
    state, notices = parse("tab=contributions")
    assert state.tab == "contributions" and notices == []


def test_every_tab_is_linkable_and_its_keys_documented():
    """A link opens any tab of the page; every key a link may carry (the page's and each tab's) is in docs/link.md."""
    from pathlib import Path

    for tab_id in TAB_IDS:
        assert parse(f"tab={tab_id}") == (S(tab=tab_id), [])
    doc = (Path(__file__).resolve().parents[2] / "docs" / "link.md").read_text()
    assert keys_table(TABS) in doc, "run python scripts/docs_tables.py"  # made from TABS
    for key in documented_keys(TABS):
        assert f"| `{key}`" in doc or f", `{key}`" in doc, key


def test_gradio_and_hub_keys_are_ignored_and_a_mapping_or_pairs_are_read():
    assert parse({"__theme": "dark", "__sign": "x.y.z", "layer": "1"}) == (S(layer=1), [])
    assert parse([("layer", "1"), ("head", "2")]) == (S(layer=1, head=2), [])
    assert parse({"layer": ["1", "0"]})[0] == S(layer=1)  # a list of values: the first stands


@pytest.fixture
def allowed(tmp_path):
    """A folder with a model folder inside (only its config is looked at), and the page's check for it."""
    root = tmp_path / "models"
    (root / "mine").mkdir(parents=True)
    (tmp_path / "secret").mkdir()
    return root, functools.partial(checked_source, allowed_dirs=(str(root),))


def test_model_names_go_through_the_pages_allow_list(allowed):
    root, check = allowed
    for ok in ("date-translator", "owner/name", "owner/name@main", "mine", str(root / "mine")):
        state, notices = parse({"model": ok}, check_model=check)
        assert notices == [] and state.model == ok, (ok, notices)
    hostile = ["../../etc", "../secret", str(root.parent / "secret"), "/etc/passwd", "~/.ssh", "mine/../../secret",
               "a" * 301, "", "   ", "<script>alert(1)</script>", "owner/name\x00", "file:///etc/passwd",
               "https://evil.example/model", "owner/name@../../x", "ünïcödé/名前"]
    for bad in hostile:
        state, notices = parse([("model", bad), ("model2", bad), ("layer", "1")], check_model=check)
        assert state == S(layer=1), bad  # refused; the rest stands
        assert len(notices) == 2 and notices[0].startswith("model ") and notices[1].startswith("model2 "), notices


def test_without_allowed_folders_no_folder_is_taken(tmp_path):
    check = functools.partial(checked_source, allowed_dirs=())
    (tmp_path / "m").mkdir()
    state, notices = parse({"model": str(tmp_path / "m")}, check_model=check)
    assert state.model is None and "allowed folders" in notices[0]
    with pytest.raises(AppError):
        check("../../etc")


def test_hostile_text_stays_text_and_is_bounded():
    html = "<img src=x onerror=alert(1)>&amp;\"'"
    unicode = "Grüße 日本語 🙂 \u202e\u200b"
    state, notices = parse({"s1": html, "s2": unicode})
    assert notices == [] and (state.values["s1"], state.values["s2"]) == (html, unicode)
    assert parse(state.to_query())[0] == state  # round trip of HTML, quotes, &, RTL override, emoji
    long_text = "x" * (MAX_CHARS + 5)
    state, notices = parse({"s1": long_text})
    assert state.values["s1"] == "x" * MAX_CHARS and "only the first 20,000" in notices[0]
    # a long or strange key or value is shown short, quoted, in its notice
    state, notices = parse({"k" * 5000: "v", "layer": "9" * 5000, "kind": "<b>enc</b>\n"})
    assert state == LinkState()
    assert all(len(n) < 200 for n in notices), notices
    assert "'<b>enc</b>\\n'" in " ".join(notices)  # control characters escaped by repr; the page escapes the HTML
    many = [(f"k{i}", "v") for i in range(100)]
    assert "only the first 64 of its 100 keys" in parse(many)[1][0]


def test_off_form():
    assert parse_off("decoder:L1H2,L1H3;cross:L0H0;") == {"decoder": {(1, 2), (1, 3)}, "cross": {(0, 0)}}
    assert parse_off("") == {}
    assert format_off({"cross": {(0, 0)}, "decoder": {(1, 3), (1, 2)}, "encoder": set()}) == \
        "decoder:L1H2,L1H3;cross:L0H0"
    for bad in ("decoder", "mlp:L0H0", "decoder:L0", "decoder:L0H0H1", "decoder:L99999H0"):
        assert "off" not in parse({"off": bad})[0].values, bad


def test_fitted_to_a_model_keeps_what_it_has():
    kinds = {"encoder": (2, 4), "decoder": (3, 4), "cross": (3, 4)}
    state = S(kind="decoder", layer=2, head=3, tab="lens",
              off={"decoder": frozenset({(2, 0), (5, 0)}), "cross": frozenset({(0, 0)})})
    fitted, notices = state.fitted(kinds, tabs=TAB_IDS)
    assert fitted == S(kind="decoder", layer=2, head=3, tab="lens", off={"decoder": {(2, 0)}, "cross": {(0, 0)}})
    assert notices == ["off decoder:L5H0: the decoder attention has 3 layers × 4 heads"]
    lm = {"decoder": (2, 2)}
    fitted, notices = state.fitted(lm, tabs=[t for t in TAB_IDS if t != "roles"])
    assert [fitted.values.get(k) for k in ("kind", "layer", "head", "tab")] == ["decoder", None, None, "lens"]
    assert fitted.values["off"] == {"decoder": frozenset()}  # both heads named are beyond this model
    assert "off decoder:L2H0,L5H0: the decoder attention has 2 layers × 2 heads" in notices
    assert "layer 2: the decoder attention has layers 0 to 1" in notices
    assert "off 'cross': this model has no cross attention" in notices
    fitted, notices = S(kind="cross", tab="lens").fitted({"encoder": (2, 2)}, tabs=["attention"])
    assert fitted == S() and len(notices) == 2


def test_heads_on_lists_the_pages_labels():
    off = {"decoder": frozenset({(0, 1)})}
    assert heads_on(off, {"encoder": (1, 2), "decoder": (1, 2)}) == {"encoder": {(0, 0), (0, 1)}, "decoder": {(0, 0)}}


def test_the_link_of_the_page_round_trips():
    on = {"encoder": ["L0 H0", "L0 H1", "L1 H0", "L1 H1"], "decoder": ["L0 H1", "L1 H0", "L1 H1"], "cross": []}
    page = dict(sentence1="lundi 3 mars 2025", sentence2="", tab="overview", kind="cross", layer=1, head=2.0,
                sentence=1, measure="values", **{f"{k}_heads_on": labels for k, labels in on.items()},
                padding_mask=True, causal_mask=False, custom_mask="local window", blocked_position=0.0, window=3.0,
                predict_after=-1, continue_tokens=8.0)
    kinds = {"encoder": (2, 2), "decoder": (2, 2), "cross": (2, 2)}
    state, notices = from_page(page_form("date-translator", **page), kinds=kinds, check_model=accept_any, tabs=TABS)
    assert notices == [] and state.model == "date-translator"
    assert state.values["off"] == {"decoder": {(0, 0)}, "cross": {(0, 0), (0, 1), (1, 0), (1, 1)}}
    assert [state.values[k] for k in ("head", "window", "s2", "tab")] == [2, 3, "", "overview"]
    query = state.to_query()
    assert "off=decoder:L0H0;cross:L0H0,L0H1,L1H0,L1H1" in query and "window=3&" in query
    assert parse(query) == (state, [])
    assert heads_on(state.values["off"], kinds) == {k: parse_heads(v) for k, v in on.items()}
    # a built model has no name: the link leaves the model out
    state, _ = from_page(page_form("", **{**page, "tab": "api"}), kinds=kinds, check_model=accept_any, tabs=TABS)
    assert state.model is None and state.tab == "api"


def test_the_display_rides_in_a_link_only_when_it_is_not_how_the_page_opens():
    """size and mode (page.display): a copied link leaves out the page's plain size and full view, and carries a
    projector's size and a class's view, which read back."""
    page = dict(sentence1="lundi 3 mars 2025", sentence2="", tab="attention", kind="cross", layer=0, head=0,
                sentence=1, measure="weights", padding_mask=True, causal_mask=True, custom_mask="none",
                blocked_position=0, window=2, predict_after=-1, continue_tokens=8)
    kinds = {"encoder": (2, 2), "decoder": (2, 2), "cross": (2, 2)}
    plain, _ = from_page(page_form("date-translator", **page, size="normal", mode="full"), kinds=kinds,
                         check_model=accept_any, tabs=TABS)
    assert "size" not in plain.values and "mode" not in plain.values
    shown, notices = from_page(page_form("date-translator", **page, size="projector", mode="class"), kinds=kinds,
                               check_model=accept_any, tabs=TABS)
    query = shown.to_query()
    assert notices == [] and query.endswith("&size=projector&mode=class")
    assert parse(query) == (shown, [])
    assert parse("mode=classroom")[1] == ["mode 'classroom' is not one of full, class"]


def test_the_shown_tabs_own_keys_go_into_the_link():
    page = dict(sentence1="t1 t2", sentence2="", tab="contributions", kind="decoder", layer=0, head=0, sentence=1,
                measure="weights", padding_mask=True, causal_mask=True, custom_mask="none", blocked_position=0,
                window=2, predict_after=-1, continue_tokens=8)
    own = {"at": 4.0, "token": "t3", "minus": "", "steps": 32.0, "threshold": 0.04}
    state, notices = from_page(page_form("induction-gpt", own, **page), kinds={"decoder": (2, 4)},
                               check_model=accept_any, tabs=TABS)
    assert notices == [] and state.tab_values == {"at": 4, "token": "t3", "minus": "", "steps": 32, "threshold": 0.04}
    assert "at=4&token=t3&minus=&steps=32&threshold=0.04" in state.to_query()
    assert parse(state.to_query()) == (state, [])


def test_a_link_too_long_to_open_is_cut_at_a_character_and_says_so():
    """8,000 CJK characters are 72 kB of URL (each 9 bytes percent-encoded): more than Gradio opens. The copied link
    carries the sentence cut to fit, at a character, and names the cut."""
    text = "日本語のテキスト" * 1000  # 8,000 characters
    state = S(model="date-gpt", s1=text, s2="🙂" * 10, layer=1)
    assert len(state.to_query()) > 65_536
    cut, notices = fit_length(state)
    query, s1 = cut.to_query(), cut.values["s1"]
    assert len(query) <= SAFE_QUERY and s1 == text[:len(s1)] and len(s1) > 5_000
    assert cut.values["s2"] == "🙂" * 10 and cut.values["layer"] == 1
    assert parse(query)[0].values["s1"] == s1  # opens to the same characters: no broken escape at the end
    assert notices == [f"s1 was cut to its first {len(s1):,} of 8,000 characters so that the link opens"]
    assert fit_length(S(s1="short")) == (S(s1="short"), [])


def test_sampling_settings_are_carried_when_sample_is_on_and_checked_as_sampling_checks_them():
    """The page's Sample settings go into the link only when Sample is on (a greedy link stays as it was); a value
    outputs.sampling.Sampling refuses (temperature 0, top-p 2, a negative top-k, a seed out of range, a word) is a
    notice naming it, and the rest stands."""
    page = dict(sentence1="3 May 2024", sentence2="", tab="attention", kind="decoder", layer=0, head=0, sentence=1,
                measure="weights", padding_mask=True, causal_mask=True, custom_mask="none", blocked_position=0,
                window=2, predict_after=-1, continue_tokens=8)
    kinds, sampled = {"decoder": (2, 4)}, dict(temperature=0.7, top_k=5.0, top_p=0.95, seed=42.0)
    state, notices = from_page(page_form("date-gpt", **page, sample=True, **sampled), kinds=kinds,
                               check_model=accept_any, tabs=TABS)
    assert notices == [] and [state.values[k] for k in ("sample", "temperature", "top_k", "top_p", "seed")] == [
        True, 0.7, 5, 0.95, 42]
    assert "continue=8&sample=1&temperature=0.7&top_k=5&top_p=0.95&seed=42" in state.to_query()
    assert parse(state.to_query()) == (state, [])
    greedy, _ = from_page(page_form("date-gpt", **page, sample=False, **sampled), kinds=kinds, check_model=accept_any,
                          tabs=TABS)
    assert "sample" not in greedy.to_query() and "seed" not in greedy.to_query()
    state, notices = parse("s1=hi&sample=1&temperature=0&top_p=2&top_k=-1&seed=2147483648")
    assert state == S(s1="hi", sample=True)
    text = " | ".join(notices)
    for part in ("temperature '0' is refused: temperature must be a finite number above 0",
                 "top_p '2' is refused: top_p must be above 0 and at most 1",
                 "top_k '-1' is refused: top_k must be 0 (off) or a positive whole number",
                 "seed '2147483648' is refused: seed must be a whole number from 0 to 2147483647"):
        assert part in text, (part, text)
    state, notices = parse("temperature=warm&top_k=2.5&top_p=nan&seed=x")
    assert state == S() and len(notices) == 4
    assert "temperature 'warm' is not a number" in notices[0] and "top_k '2.5' is not a whole number" in notices[1]
    assert "top_p 'nan' is refused" in notices[2] and "seed 'x' is not a whole number" in notices[3]

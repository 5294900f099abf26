"""The lessons (explorer.app.page.lessons): docs/lessons.md is written from them, every link opens without a notice, and
the key claim of each lesson is true of the shipped checkpoints (run here)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from explorer.app.link.state import parse_link
from explorer.app.page.lessons import LESSONS, lessons_markdown
from explorer.app.run.toggles import Toggles
from explorer.app.serving.session import checked_source
from explorer.app.tabs import TABS, analyze

ROOT = Path(__file__).resolve().parents[2]
CROSS = {(layer, head) for layer in range(2) for head in range(4)}


def lesson(word: str):
    return next(x for x in LESSONS if word in x.title)


def answer(a) -> str:
    """Sentence 1's answer as the output bar shows it: baseline, then the toggled one where it differs."""
    text = "".join(t for t, _ in a.chips.items if t not in ("Output:", "[EOS]"))
    base, _, toggled = text.partition("→ with the toggles:")
    return base if not toggled else f"{base} -> {toggled}"


@pytest.fixture(scope="module")
def models():
    import explorer

    return {name: explorer.load(name, "cpu") for name in ("date-translator", "date-gpt", "induction-gpt")}


def test_the_doc_is_written_from_the_lessons():
    assert (ROOT / "docs" / "lessons.md").read_text() == lessons_markdown(), "run python scripts/docs_tables.py"
    assert len(LESSONS) == 7 and len({x.title for x in LESSONS}) == 7


@pytest.mark.parametrize("x", LESSONS, ids=[x.title.split(":")[0] for x in LESSONS])
def test_every_link_opens_without_a_notice(x):
    state, notices = parse_link(x.query, check_model=lambda name: checked_source(name, allowed_dirs=()), tabs=TABS)
    assert notices == [] and state.model in ("date-translator", "date-gpt", "induction-gpt") and state.tab
    assert state.to_query() == x.query  # the link a page showing the lesson would copy


def test_every_link_restores_its_view_on_the_page(page_events):
    """Each lesson's link opened by the page-load handler (as a browser's request brings it): the model it names
    loaded, no notice, its tab selected (one the page shows for that model), its sentences restored, and the page's
    Run on the restored values says no warning. That a link to each tab opens it drawn, pressing its own button where
    it has one, is shown in Chromium by tests/app/test_browser_link.py (test_a_link_to_any_tab_opens_it_computed); what
    each lesson's tab shows is checked by the tests below."""
    from starlette.datastructures import QueryParams

    from explorer.app.forms import RunForm, form_inputs, form_of
    from explorer.app.link.opening import LinkEvents
    from explorer.app.serving.session import Session, get_model

    ev = page_events
    page, link = ev.page, LinkEvents(ev)
    for x in LESSONS:
        state, _ = parse_link(x.query, check_model=lambda name: checked_source(name, allowed_dirs=()), tabs=TABS)
        opened = link.open_page(Session("date-translator", "cpu"), SimpleNamespace(query_params=QueryParams(x.query)))

        def value(component):
            v = opened.get(component, getattr(component, "value", None))
            return v.get("value") if isinstance(v, dict) else v

        session = value(page.session)
        assert session.source == state.model, x.title
        assert opened[page.inputs.link_notice] == "", (x.title, opened[page.inputs.link_notice])
        assert opened[page.visible_tab] == state.tab and state.tab in link.shown_tabs(get_model(session, ev.ctx))
        if "s1" in state.values:
            assert (value(page.setting("sentence1")), value(page.setting("sentence2")) or "") == (
                state.values["s1"], state.values.get("s2") or "")
        out = ev.analyze_at_once(form_of(RunForm, *[value(c) for c in form_inputs(RunForm, page)]))
        assert "⚠️" not in out[ev.status], (x.title, out[ev.status])


def test_positions_sinusoid_fast_then_slow_and_neighbours_similar(models):
    from explorer import positions, viz

    loaded = models["date-translator"]
    assert positions.scheme_of(loaded.config) == "sinusoidal"
    table = positions.position_tables(loaded.model, 48)["encoder"]  # (T, D)
    swing = np.abs(np.diff(table, axis=0)).mean(0)  # (D,) change from one position to the next
    assert swing[:4].mean() > 10 * swing[-4:].mean()
    pe = viz.sinusoidal_table(48, 64, 10000.0)
    sim = pe @ pe.T
    assert (sim.argmax(1) == np.arange(48)).all()  # brightest on the diagonal
    assert (np.diag(sim, 1)[:38] > np.diag(sim, 10)).all()  # neighbours more alike than positions 10 apart


def test_masks_generation_breaks_without_the_causal_mask(models):
    assert "2026-11-21 becomes 20-019-09" in lesson("Masks").text
    a = analyze(models["date-gpt"], "samedi 21 novembre 2026", None, Toggles(causal=False))
    assert answer(a) == "2026-11-21 -> 20-019-09"


def test_two_cross_heads_read_the_month(models):
    assert "2025-05-03 instead of 2025-03-03" in lesson("month").text
    loaded, s = models["date-translator"], "lundi 3 mars 2025"
    both = analyze(loaded, s, None, Toggles(heads_on={"cross": frozenset(CROSS - {(0, 1), (1, 3)})}))
    assert answer(both) == "2025-03-03 -> 2025-05-03"
    for one in ((0, 1), (1, 3)):  # "either one alone is enough for the right month"
        assert answer(analyze(loaded, s, None, Toggles(heads_on={"cross": frozenset(CROSS - {one})}))) == "2025-03-03"


def test_induction_heads_in_layer_one(models):
    from explorer.app.tabs.roles.scores import score_roles

    r = score_roles(models["induction-gpt"], "t1 t2 t3 t4 t5 t6 t1 t2 t3 t4", "decoder", None, 1024)
    induction, previous = np.asarray(r.probe["induction"]), np.asarray(r.probe["previous"])
    assert (induction[1] > 0.8).all() and (induction[0] < 0.1).all()
    assert previous[0, 1] == previous.max() and round(float(previous[0, 1]), 2) == 0.90
    base, _ = r.losses
    assert base.first > 5.5 and base.repeated < 0.1


def test_the_month_digit_is_pushed_up_most_by_cross_l1_h3(models):
    from explorer.app.tabs.contributions.result import ContributionRequest, contributions

    loaded = models["date-translator"]
    c = contributions(loaded, ContributionRequest("lundi 3 mars 2025", position=6, steps=8), 1024)
    assert loaded.target_tokenizer.decode([c.token]) == "3"
    heads = c.baseline.heads  # kind -> (L, H) each head's direct share of the logit
    best = max(((float(v[la, h]), kind, la, h) for kind, v in heads.items()
                for la in range(v.shape[0]) for h in range(v.shape[1])))
    assert best[1:] == ("cross", 1, 3)


def test_both_models_answer_the_same_date(models):
    for name in ("date-translator", "date-gpt"):
        assert answer(analyze(models[name], "31 dicembre 1999", None, Toggles())) == "1999-12-31"


def test_the_months_circuit_is_small_faithful_and_leaves_the_decoder_heads_out(models):
    """The lesson's circuit, computed as the tab computes it from the lesson's link: about 60 of 529 edges keeping 0.9
    on its pairs and on the held-out ones, cross L0 H1 and L1 H3 in it, no decoder self-attention head; its heads alone
    (the others switched off) break the answer."""
    from explorer.app.serving.session import Session
    from explorer.app.tabs.circuit.computation import circuit
    from explorer.app.tabs.circuit.forms import CircuitForm

    x = lesson("circuit")
    state, _ = parse_link(x.query, check_model=str, tabs=TABS)
    own = state.tab_values
    form = CircuitForm(Session("date-translator", "cpu"), own["ctask"], "", own["eap"], "logit_diff", own["edges"],
                       own["held"], own["npairs"])
    r = circuit(models["date-translator"], form.request(), 1024)
    assert (r.found, r.held, r.n_edges) == (24, 8, 529) and 40 <= len(r.edges) <= 90, len(r.edges)
    assert r.faithfulness >= 0.9 and r.held_faithfulness >= 0.9, (r.faithfulness, r.held_faithfulness)
    assert {(0, 1), (1, 3)}.isdisjoint(r.off["cross"]) and len(r.off["decoder"]) == 8
    on = {kind: frozenset(CROSS - set(r.off[kind])) for kind in r.heads}  # every kind has 2 layers x 4 heads
    broken = answer(analyze(models["date-translator"], state.values["s1"], None, Toggles(heads_on=on)))
    assert broken.startswith("2025-03-03 -> ") and not broken.endswith("2025-03-03"), broken

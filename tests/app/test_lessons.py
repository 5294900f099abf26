"""The lessons (explorer.app.page.lessons) and their panel: docs/lessons.md is written from them, every lesson opens
by its link (`lesson=N` or its id) without a notice and Copy link keeps it, and every step's check, evaluated by the
server on a real Run of the shipped checkpoints, passes when the learner did the step and says "not yet" when not.
The claims of the lessons' notes that no check covers (positions, roles, contributions) are run here too."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from starlette.datastructures import QueryParams

from explorer.app.forms import RunForm, form_inputs, form_of, replaced
from explorer.app.link.opening import LinkEvents
from explorer.app.link.page_link import LinkForm
from explorer.app.link.state import parse_link
from explorer.app.page.head_labels import head_labels
from explorer.app.page.lesson_docs import lessons_markdown
from explorer.app.page.lesson_events import LessonEvents, run_facts
from explorer.app.page.lesson_files import Catalogue
from explorer.app.page.lessons import LESSONS
from explorer.app.run.toggles import Toggles
from explorer.app.serving.errors import escape_md
from explorer.app.serving.kept import Shown
from explorer.app.serving.session import Session, checked_source
from explorer.app.tabs import TABS, analyze

ROOT = Path(__file__).resolve().parents[2]
ALL = head_labels(2, 4)  # every shipped model here: 2 layers of 4 heads


def check_model(name: str) -> str:
    return checked_source(name, allowed_dirs=())


def off(*labels: str) -> list[str]:
    """The head switches of a 2 x 4 kind with `labels` off."""
    return [x for x in ALL if x not in labels]


# "Keep only this circuit" on the month's circuit (test_the_months_circuit_... finds it): these heads switched off
CIRCUIT_KEPT = dict(encoder_heads_on=off("L0 H0", "L0 H1", "L0 H3", "L1 H0", "L1 H2", "L1 H3"),
                    decoder_heads_on=[], cross_heads_on=off("L0 H3"))
# (lesson id, step) -> (what the learner did: settings changed on the lesson's view, passes?) for both verdicts.
DONE, NOT_YET = True, False
SCENARIOS = {
    ("positions", 1): [(dict(tab="positions"), DONE), (dict(tab="attention"), NOT_YET)],
    ("positions", 3): [(dict(sentence1="mars lundi 2025 3"), DONE), ({}, NOT_YET)],
    ("causal-mask", 1): [({}, DONE), (dict(causal_mask=False), NOT_YET)],
    ("causal-mask", 2): [(dict(causal_mask=False), DONE), ({}, NOT_YET)],
    ("causal-mask", 3): [({}, DONE), (dict(causal_mask=False), NOT_YET)],
    ("month-heads", 1): [({}, DONE), (dict(cross_heads_on=off("L0 H1", "L1 H3")), NOT_YET)],
    ("month-heads", 2): [(dict(cross_heads_on=off("L1 H3")), DONE), ({}, NOT_YET)],
    ("month-heads", 3): [(dict(cross_heads_on=off("L0 H1", "L1 H3")), DONE), (dict(cross_heads_on=off("L1 H3")),
                                                                              NOT_YET)],
    ("month-heads", 4): [(dict(cross_heads_on=off("L0 H1")), DONE), (dict(cross_heads_on=off("L0 H1", "L1 H3")),
                                                                     NOT_YET)],
    ("induction", 1): [({}, DONE), (dict(decoder_heads_on=off("L1 H0", "L1 H1", "L1 H2", "L1 H3")), NOT_YET)],
    ("induction", 2): [(dict(tab="roles"), DONE), (dict(tab="attention"), NOT_YET)],
    ("induction", 3): [(dict(decoder_heads_on=off("L1 H0", "L1 H1", "L1 H2", "L1 H3")), DONE), ({}, NOT_YET)],
    ("contributions", 1): [(dict(tab="contributions"), DONE), (dict(tab="attention"), NOT_YET)],
    ("contributions", 3): [(dict(cross_heads_on=off("L1 H3")), DONE), ({}, NOT_YET)],
    ("compare", 1): [({}, DONE), (dict(sentence1="1 gennaio 2000"), NOT_YET)],
    ("compare", 3): [(dict(sentence1="1 gennaio 2000"), DONE), ({}, NOT_YET)],
    ("month-circuit", 1): [({}, DONE), (dict(tab="attention"), NOT_YET)],
    ("month-circuit", 3): [(CIRCUIT_KEPT, DONE), (dict(decoder_heads_on=off(*ALL[:7])), NOT_YET)],
}


def lesson(lesson_id: str):
    return next(x for x in LESSONS if x.id == lesson_id)


def opened_page(ev, query: str) -> tuple[dict, object]:
    """The page-load handler on `query` (as a browser's request brings it): its updates, and a value reader."""
    opened = LinkEvents(ev).open_page(Session("date-translator", "cpu"),
                                      SimpleNamespace(query_params=QueryParams(query)))

    def value(component):
        v = opened.get(component, getattr(component, "value", None))
        return v.get("value") if isinstance(v, dict) else v

    return opened, value


def test_the_doc_is_written_from_the_lessons():
    assert (ROOT / "docs" / "lessons.md").read_text() == lessons_markdown(), "run python scripts/docs_tables.py"
    assert len(LESSONS) >= 6 and len({x.title for x in LESSONS}) == len(LESSONS)
    ids = [x.id for x in LESSONS if x.id]
    assert len(set(ids)) == len(ids)
    seven = [x for x in LESSONS if x.id in {"positions", "causal-mask", "month-heads", "induction", "contributions",
                                            "compare", "month-circuit"}]
    assert len(seven) == 7  # a lesson added as Lesson(title, query, text) is shown with one step and no check
    for x in seven:  # each written for the panel: a goal, 3 to 5 steps, what to notice, checks
        assert x.goal and 3 <= len(x.steps) <= 5 and x.notice and any(s.check for s in x.steps), x.id


def test_every_check_step_has_a_scenario_run_below():
    steps = {(x.id, k) for x in LESSONS for k, s in enumerate(x.steps, 1) if s.check is not None}
    assert steps == set(SCENARIOS)


@pytest.mark.parametrize("x", LESSONS, ids=[x.id or str(n) for n, x in enumerate(LESSONS, 1)])
def test_every_view_and_lesson_link_opens_without_a_notice(x):
    state, notices = parse_link(x.query, check_model=check_model, tabs=TABS)
    assert notices == [] and state.model in ("date-translator", "date-gpt", "induction-gpt") and state.tab
    assert state.to_query() == x.query  # the link a page showing the view would copy
    n = LESSONS.index(x) + 1
    for key in filter(None, (str(n), x.id)):  # a lesson without an id is linked by its number
        pairs = Catalogue().opened([("lesson", key)])
        state, notices = parse_link(pairs, check_model=check_model, tabs=TABS)
        view = parse_link(x.query, check_model=check_model, tabs=TABS)[0]
        assert notices == [] and state.values["lesson"] == (x.id or str(n))
        assert replace(state, values={k: v for k, v in state.values.items() if k != "lesson"}) == view
        again, _ = parse_link(state.to_query(), check_model=check_model, tabs=TABS)
        assert again == state and f"lesson={x.id or n}" in state.to_query()  # the round trip: the view and lesson


def test_a_lesson_link_restores_its_view_and_copy_link_keeps_it(page_events):
    """`?lesson=3&step=2` opened by the page-load handler: the lesson's model, sentence, view and tab, the lesson by
    its id at step 2, no notice; Copy link of that page writes the lesson and its step back; the link's own keys win
    over the lesson's view."""
    ev = page_events
    page = ev.page
    opened, value = opened_page(ev, "lesson=3&step=2")
    assert opened[page.inputs.link_notice] == ""
    assert value(page.session).source == "date-translator" and value(page.setting("sentence1")) == "lundi 3 mars 2025"
    assert opened[page.visible_tab] == "attention" and value(page.setting("kind")) == "cross"
    assert (value(page.setting("lesson")), value(page.setting("lesson_step"))) == ("month-heads", 2)
    link = LinkEvents(ev)
    form = link.link_form([value(c) for c in link.link_inputs()])
    assert isinstance(form, LinkForm)
    query = link.link_of_page(form)[page.inputs.link_query]
    assert query.endswith("&lesson=month-heads&step=2") and "s1=lundi%203%20mars%202025" in query
    opened, value = opened_page(ev, "lesson=month-heads&s1=mardi%204%20mars%202025")
    assert value(page.setting("sentence1")) == "mardi 4 mars 2025" and opened[page.inputs.link_notice] == ""
    opened, value = opened_page(ev, "lesson=nope")  # an unknown lesson: kept for the panel to say so
    assert value(page.setting("lesson")) == "nope"
    opened, value = opened_page(ev, "lesson=..%2Fetc")
    assert "lesson" in opened[page.inputs.link_notice] and not value(page.setting("lesson"))


def lesson_run(ev, lesson_id: str, changes: dict):
    """The lesson's view opened, the learner's changes made, the page's Run: its facts as the panel reads them."""
    page = ev.page
    tab = changes.pop("tab", None)
    _, value = opened_page(ev, f"lesson={lesson_id}")
    form = form_of(RunForm, *[value(c) for c in form_inputs(RunForm, page)])
    form = replaced(form, **changes)
    shown = Shown()
    ev.analyze_at_once(form, shown)
    return run_facts(shown, tab or form.tab, ev)


@pytest.mark.parametrize("step", sorted(SCENARIOS), ids=[f"{a}-{b}" for a, b in sorted(SCENARIOS)])
def test_every_check_on_the_learners_own_run(page_events, step):
    lesson_id, k = step
    check = lesson(lesson_id).steps[k - 1].check
    for changes, passes in SCENARIOS[step]:
        facts = lesson_run(page_events, lesson_id, dict(changes))
        ok, line = check.verdict(facts)
        assert ok == passes, (step, changes, line)
        assert line.startswith("✓ " if passes else "✗ not yet: ") and facts.measured() in line
        assert f"“{escape_md(facts.baseline)}”" in line or not facts.baseline  # the words carry the Run's own output


def test_the_month_check_names_the_runs_output(page_events):
    facts = lesson_run(page_events, "month-heads", dict(cross_heads_on=off("L0 H1", "L1 H3")))
    assert (facts.baseline, facts.toggled, dict(facts.heads_off)) == ("2025-03-03", "2025-05-03", {"cross": 2})
    ok, line = lesson("month-heads").steps[2].check.verdict(facts)
    assert ok and line == (f"✓ the month changed to 05 (your Run's output: “{escape_md('2025-03-03')}” → with your "
                           f"toggles: “{escape_md('2025-05-03')}”; 2 heads off)")


def test_the_panel_follows_the_lesson_and_the_last_run(page_events):
    """The panel's handler: hidden without a lesson; the lesson's step with its verdict on the session's last Run;
    before any Run, "not yet: press Run"; an unknown lesson named; previous / next stay within the steps."""
    ev = page_events
    events = LessonEvents(ev, ev.page.lesson)
    p = ev.page.lesson
    assert events.show("", 1, "attention", Shown())[p.box] == {"visible": False, "__type__": "update"}
    first = events.show("month-heads", 3, "attention", Shown())[p.text]
    assert "Lesson 3 of" in first and "Step 3 of 4" in first and "✗ not yet" in first and "press **Run** first" in first
    shown = Shown()
    _, value = opened_page(ev, "lesson=month-heads")
    form = replaced(form_of(RunForm, *[value(c) for c in form_inputs(RunForm, ev.page)]),
                    cross_heads_on=off("L0 H1", "L1 H3"))
    ev.analyze_at_once(form, shown)
    out = events.show("month-heads", 3, "attention", shown)
    assert "✓ the month changed to 05" in out[p.text] and "Notice:" in out[p.about] and "Goal:" in out[p.about]
    assert "✗ not yet" in events.show("month-heads", 2, "attention", shown)[p.text]  # step 2: one head off
    assert "No lesson" in events.show("nope", 1, "attention", shown)[p.text]
    assert (events.moved(1, "month-heads", 4), events.moved(-1, "3", 1), events.moved(1, "3", 2)) == (4, 1, 3)
    assert events.show("3", 99, "attention", shown)[events.step] == 4  # a step past the last: the last


# The lessons' notes that no Run check covers, on the shipped checkpoints.
@pytest.fixture(scope="module")
def models():
    import explorer

    return {name: explorer.load(name, "cpu") for name in ("date-translator", "induction-gpt")}


def test_positions_sinusoid_fast_then_slow_and_neighbours_similar(models):
    from explorer import positions, viz

    loaded = models["date-translator"]
    assert positions.scheme_of(loaded.config) == "sinusoidal"
    table = positions.position_tables(loaded.model, 48)["encoder"]  # (T, D)
    swing = np.abs(np.diff(table, axis=0)).mean(0)  # (D,) change from one position to the next
    assert swing[:4].mean() > 10 * swing[-4:].mean()
    for d in (64, 16):  # the lesson's d_model and the one its step asks for
        pe = viz.sinusoidal_table(48, d, 10000.0)
        sim = pe @ pe.T
        assert (sim.argmax(1) == np.arange(48)).all()  # brightest on the diagonal


def test_induction_heads_in_layer_one(models):
    from explorer.app.tabs.roles.scores import score_roles

    r = score_roles(models["induction-gpt"], "t1 t2 t3 t4 t5 t6 t1 t2 t3 t4", "decoder", None, 1024)
    induction, previous = np.asarray(r.probe["induction"]), np.asarray(r.probe["previous"])
    # the copying head L1 H2 scores highest (0.82); the others' attention still leans that way (0.30 to 0.63) while
    # the penalty it was trained with took their OV weights to about 0
    assert induction.argmax() == 1 * 4 + 2 and induction[1, 2] > 0.8 and (induction[0] < 0.1).all()
    assert previous[0, 1] == previous.max() and round(float(previous[0, 1]), 2) == 1.00


def test_the_month_digit_is_pushed_up_most_by_cross_l1_h3(models):
    from explorer.app.tabs.contributions.result import ContributionRequest, contributions

    loaded = models["date-translator"]
    c = contributions(loaded, ContributionRequest("lundi 3 mars 2025", position=6, steps=8), 1024)
    assert loaded.target_tokenizer.decode([c.token]) == "3"
    heads = c.baseline.heads  # kind -> (L, H) each head's direct share of the logit
    best = max(((float(v[la, h]), kind, la, h) for kind, v in heads.items()
                for la in range(v.shape[0]) for h in range(v.shape[1])))
    assert best[1:] == ("cross", 1, 3)


CROSS = {(layer, head) for layer in range(2) for head in range(4)}


def answer(a) -> str:
    """Sentence 1's answer as the output bar shows it: baseline, then the toggled one where it differs."""
    text = "".join(t for t, _ in a.chips.items if t not in ("Output:", "[EOS]"))
    base, _, toggled = text.partition("→ with the toggles:")
    return base if not toggled else f"{base} -> {toggled}"


def test_the_months_circuit_is_small_faithful_and_leaves_the_decoder_heads_out(models):
    """The lesson's circuit, computed as the tab computes it from the lesson's link: about 60 of 529 edges keeping 0.9
    on its pairs and on the held-out ones, cross L0 H1 and L1 H3 in it, no decoder self-attention head; its heads alone
    (the others switched off) break the answer."""
    from explorer.app.serving.session import Session
    from explorer.app.tabs.circuit.computation import circuit
    from explorer.app.tabs.circuit.forms import CircuitForm

    x = lesson("month-circuit")
    state, _ = parse_link(x.query, check_model=str, tabs=TABS)
    own = state.tab_values
    form = CircuitForm(Session("date-translator", "cpu"), own["ctask"], "", own["eap"], "logit_diff", own["edges"],
                       own["held"], own["npairs"])
    r = circuit(models["date-translator"], form.request(), 1024)
    assert (r.found, r.held, r.n_edges) == (24, 8, 529) and 40 <= len(r.edges) <= 90, len(r.edges)
    assert r.faithfulness >= 0.9 and r.held_faithfulness >= 0.9, (r.faithfulness, r.held_faithfulness)
    assert {(0, 1), (1, 3)}.isdisjoint(r.off["cross"]) and len(r.off["decoder"]) == 8
    on = {kind: frozenset(CROSS - set(r.off[kind])) for kind in r.heads}  # every kind has 2 layers x 4 heads
    kept = {k: [head_labels(2, 4)[la * 4 + h] for la, h in sorted(on[k])] for k in on}  # the switches it leaves on
    assert kept == {k.split("_")[0]: v for k, v in CIRCUIT_KEPT.items()}, kept  # the lesson's step 3 scenario
    broken = answer(analyze(models["date-translator"], state.values["s1"], None, Toggles(heads_on=on)))
    assert broken.startswith("2025-03-03 -> ") and not broken.endswith("2025-03-03"), broken

"""A teacher's path through the page's handlers (typed forms, no browser): roles switched off by their effect,
"why this token?" on the month of a French date, a model change that keeps the sentences and resets the toggles,
and words a model cannot read named on the status line."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from explorer.app.forms import RunForm
from explorer.app.page.head_labels import head_labels
from explorer.app.page.model_events import RESET
from explorer.app.run.toggles import Toggles
from explorer.app.serving.kept import Shown
from explorer.app.serving.session import Session, get_model
from explorer.app.tabs.contributions.why_token import WhyRequest, why, why_markdown
from explorer.app.tabs.roles.tab import RolesEvents, SwitchOffForm

INDUCTION = "t1 t2 t3 t4 t1 t2 t3"


def next_prob(loaded, ids, off=None):
    """p(the model's own next token) with the decoder heads `off` switched off (their output zeroed)."""
    mask = None
    if off:
        mask = {"decoder": torch.ones(loaded.config.n_layers, loaded.config.n_heads)}
        for layer, head in off:
            mask["decoder"][layer, head] = 0
    src = torch.tensor([ids])
    with torch.inference_mode():
        base = loaded.model(src, padding=False, need_weights=False).logits[0, -1].softmax(-1)
        out = loaded.model(src, padding=False, need_weights=False, head_mask=mask).logits[0, -1].softmax(-1)
    return float(out[int(base.argmax())])


def test_roles_switch_off_by_effect_picks_the_head_that_matters(page_events, ctx):
    """induction-gpt: one layer-1 head, L1 H2, copies (the others' OV weights are about 0); the probe ranks it first,
    and ranked by effect it is the head whose switch-off drops the next token most (checked here by running the
    model with each head off), the others moving it by about nothing."""
    from explorer.app.run.readings import read_texts

    ev = page_events
    roles = RolesEvents(ev, ev.page.parts["roles"])
    session = Session("induction-gpt", "cpu")
    by = {rank: roles.switched_off(SwitchOffForm(session, INDUCTION, "decoder", "induction", 1, rank))
          for rank in ("probe", "effect on the output")}
    probe_md, effect_md = (by[r][roles.parts.off_md] for r in by)
    assert "ranked on their induction score on the probe: L1 H2" in probe_md
    loaded = get_model(session, ctx)
    ids = read_texts(loaded, INDUCTION, None, 1024)[0].src
    p = next_prob(loaded, ids)
    drops = {h: p - next_prob(loaded, ids, [(1, h)]) for h in range(loaded.config.n_heads)}
    best = max(drops, key=drops.get)
    assert "ranked by the drop in the probability of the model's next token" in effect_md
    assert f": L1 H{best} \\(induction" in effect_md and f"p −{drops[best]:.2f}" in effect_md
    assert best == 2 and max(abs(drops[h]) for h in (0, 1, 3)) < 0.01  # the heads without OV weights do nothing
    # the switches the page receives: that head off, every other decoder head on
    on = by["effect on the output"][ev.page.heads["decoder"]]
    assert f"L1 H{best}" not in on and len(on) == loaded.config.n_layers * loaded.config.n_heads - 1


def test_why_the_month_finds_the_cross_attention_pair(ctx):
    """"lundi 3 mars 2025" -> 2025-03-03; the month's "3" (answer token 6). One head (decoder L0 H3) breaks the
    date's format; the pair search names cross L0 H1 + L1 H3, whose switch-off gives 2025-05-03."""
    loaded = get_model(Session("date-translator", "cpu"), ctx)
    alone = why(loaded, WhyRequest("lundi 3 mars 2025", position=6), 1024)
    assert alone.token == "3" and alone.position == 6 and alone.baseline_prob > 0.99
    assert alone.rows[0][0] == "decoder L0 H3" and alone.pair is None
    assert [row[2] for row in alone.rows] == sorted(row[2] for row in alone.rows)  # the largest drop first
    found = why(loaded, WhyRequest("lundi 3 mars 2025", position=6, search_pairs=True), 1024)
    heads, p, top = found.pair
    assert set(heads.split(" + ")) == {"cross L0 H1", "cross L1 H3"} and top == "5" and p < 0.1
    assert ("cross L1 H3 + cross L0 H1 off", "2025-05-03") in found.regenerated or \
        ("cross L0 H1 + cross L1 H3 off", "2025-05-03") in found.regenerated
    md = why_markdown(found)
    assert "The best pair" in md and "2025-05-03" in md and "2025-03-03" in md


def test_a_model_change_keeps_the_sentences_and_resets_the_toggles(page_events, ctx):
    ev = page_events
    text1, text2, setting = ev.page.setting("sentence1"), ev.page.setting("sentence2"), ev.page.setting
    session = Session("induction-gpt", "cpu")
    loaded = get_model(session, ctx)
    shown = Shown()
    shown.request = SimpleNamespace(toggles=Toggles(causal=False))
    out = ev.models.changed_model(session, loaded, "Loaded induction-gpt.",
                                  ("the cat sat on the mat the cat sat on the", ""), shown)
    assert text1 not in out  # the typed sentence stays
    assert out[text2] == loaded.task["examples"][1]  # an empty second sentence: the model's second example
    status = out[ev.status]
    assert "read as \\[UNK\\]" in status and "t0 … t299" in status and "examples are in the list" in status
    assert "back to the new model's defaults" in status
    assert out[setting("causal_mask")] is True and out[setting("padding_mask")] is True
    assert out[setting("custom_mask")] == "none"
    # The Run that follows keeps what the change said above its own notices (it names the unreadable words itself).
    assert shown.take_model_notice() == ("Loaded induction-gpt.\n\nThe new model's own examples are in the lists "
                                         "under the sentences.\n\n" + RESET)
    assert shown.take_model_notice() == ""  # said once
    # An API client read it in /load_model's answer: its next /analyze says only the Run's own notices.
    ev.models.changed_model(session, loaded, "Loaded induction-gpt.", ("t1 t2 t3", ""), shown)
    heads = head_labels(loaded.config.n_layers, loaded.config.n_heads)
    form = RunForm(session, "t1 t2 t3", "", True, True, "none", 0, 2, [], heads, [], "decoder", 0, 0, 1,
                   tab="attention")
    assert not ev.analyze_at_once(form, shown)[ev.status].startswith("Loaded")
    on = out[ev.page.heads["decoder"]]["value"]
    assert len(on) == loaded.config.n_layers * loaded.config.n_heads  # every head on
    # An empty first sentence gets the new model's example; a Run with no toggle is not said to be reset.
    plain = ev.models.changed_model(session, loaded, "Loaded.", ("", ""), None)
    assert plain[text1] == loaded.task["examples"][0] and "defaults" not in plain[ev.status]


def test_words_the_model_cannot_read_are_named_after_a_run(app):
    _, loaded = app.load("induction-gpt")
    a = app.analyze(loaded, "the cat sat on the mat t1 t2", None)
    assert "⚠️" in a.status and "“cat”" in a.status and "t0 … t299" in a.status
    assert "⚠️" not in app.analyze(loaded, "t1 t2 t3", None).status

"""Head effects (explorer.interpret.head_effects): every number equals the model's own forward pass with those heads
switched off (within 1e-5 in probability and logit, the same top token), for every head alone and for pairs mixing
kinds, on tiny random models of each architecture (decoder-only with rotary and grouped-query attention, an
encoder-decoder with T5's relative bias and the padding id as its start token, a masked LM, a classifier); batched
greedy answers equal one generation per head set; bad input names the bad value. On the shipped checkpoints: what
the date-translator's month and induction-gpt's heads do (see the tests' docstrings)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

import explorer
from explorer.outputs.generate import generate
from explorer.interpret import head_roles, repeated_tokens, top_heads
from explorer.interpret.head_effects import (DEFAULT_DROP, Head, effects_of, every_head, head_effects, heads_name,
                                             masks_without, pair_effects, regenerate, role_heads_by_effect, why_token)
from explorer.model import Transformer, TransformerConfig

TOLERANCE = 1e-5
COMMON = dict(d_model=32, n_heads=4, d_ff=64, dropout=0.0, max_len=64)
CONFIGS = {
    "decoder": dict(arch="decoder", vocab_size=50, n_layers=3, norm_first=True, positional="rotary", n_kv_heads=2,
                    sliding_window=6),
    "encoder-decoder": dict(arch="encoder-decoder", vocab_size=40, tgt_vocab_size=30, n_encoder_layers=2,
                            n_decoder_layers=3, norm_first=False, positional="relative"),
    "masked-lm": dict(arch="encoder", vocab_size=40, n_layers=2, norm_first=False, positional="learned",
                      mlm_head=True),
    "classifier": dict(arch="encoder", vocab_size=40, n_layers=2, norm_first=True, positional="sinusoidal",
                       num_classes=5),
}


def tiny(name: str) -> Transformer:
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(**COMMON, **CONFIGS[name])).eval()
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():  # off the default init, peaky enough that heads matter
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.4)
    return model


def inputs(name: str) -> tuple[torch.Tensor, torch.Tensor | None, int]:
    """(ids, tgt, position) the tests read."""
    gen = torch.Generator().manual_seed(2)
    ids = torch.randint(1, 40, (11,), generator=gen)
    if name == "encoder-decoder":
        return ids, torch.cat([torch.tensor([0]), torch.randint(1, 30, (7,), generator=gen)]), 4  # start = pad id
    return ids, None, {"decoder": 7, "masked-lm": 3, "classifier": 0}[name]


def reference(model: Transformer, ids, tgt, position: int, heads, base=None) -> torch.Tensor:
    """(W,) float64 logits at the position from the model's ordinary forward pass (weights path, full length), with
    `heads` off on top of the `base` head mask."""
    with torch.no_grad():
        out = model(ids[None], None if tgt is None else tgt[None],
                    head_mask=masks_without(model.config.attention_kinds(), heads, base))
    logits = out.logits[0] if model.classifier is not None else out.logits[0, position]
    return logits.double()


@pytest.fixture(scope="module", params=list(CONFIGS))
def case(request):
    name = request.param
    return name, tiny(name), *inputs(name)


def check(model, ids, tgt, effects, head_mask=None) -> None:
    base = reference(model, ids, tgt, effects.position, [], head_mask)
    assert abs(effects.baseline_prob - float(base.softmax(-1)[effects.token])) < TOLERANCE
    assert abs(effects.baseline_logit - float(base[effects.token])) < TOLERANCE
    assert effects.baseline_top == int(base.argmax())
    for v, heads in enumerate(effects.sets):
        logits = reference(model, ids, tgt, effects.position, heads, head_mask)
        probs = logits.softmax(-1)
        assert abs(effects.prob[v] - float(probs[effects.token])) < TOLERANCE, heads
        assert abs(effects.logit[v] - float(logits[effects.token])) < TOLERANCE, heads
        assert effects.top[v] == int(logits.argmax()), heads
        assert abs(effects.top_prob[v] - float(probs.max())) < TOLERANCE, heads


def test_every_head_alone_equals_the_forward_pass(case):
    name, model, ids, tgt, position = case
    effects = head_effects(model, ids, tgt=tgt, position=position)
    assert [s[0] for s in effects.sets] == every_head(model) and all(len(s) == 1 for s in effects.sets)
    assert len(effects.sets) == sum(L * H for L, H in model.config.attention_kinds().values())
    check(model, ids, tgt, effects)
    assert effects.drop.std() > 1e-3  # the heads matter here: the comparison is not of near-equal numbers


def test_pairs_equal_the_forward_pass_mixing_kinds(case):
    name, model, ids, tgt, position = case
    heads = every_head(model)
    chosen = heads[::max(1, len(heads) // 6)][:6]  # across kinds and layers
    effects = pair_effects(model, ids, chosen, tgt=tgt, position=position, token=3)
    assert len(effects.sets) == len(chosen) * (len(chosen) - 1) // 2 and effects.token == 3
    if name == "encoder-decoder":
        assert {frozenset(h.kind for h in s) for s in effects.sets} >= {frozenset({"encoder", "cross"}),
                                                                       frozenset({"decoder", "cross"})}
    check(model, ids, tgt, effects)


def test_any_head_set_and_batch_size_give_the_same_numbers(case):
    name, model, ids, tgt, position = case
    heads = every_head(model)
    sets = [heads[:3], heads[-2:], [heads[1], heads[-1]]]
    one = effects_of(model, ids, sets, tgt=tgt, position=position, batch_size=1)
    many = effects_of(model, ids, sets, tgt=tgt, position=position)
    check(model, ids, tgt, many)
    np.testing.assert_allclose(one.prob, many.prob, atol=1e-6)
    assert pickle.loads(pickle.dumps(many)).sets == many.sets  # picklable (it comes back from a GPU worker)


def test_heads_already_off_are_the_baseline(case):
    """With the page's switches (a base head mask), the baseline is that model and each variant switches its heads
    off on top: equal to the forward pass with both off; the heads already off are never paired."""
    name, model, ids, tgt, position = case
    kinds = model.config.attention_kinds()
    already = [every_head(model)[1], every_head(model)[-1]]
    base = masks_without(kinds, already)
    partial = {k: v for k, v in base.items() if (v == 0).any()}  # the kinds with a head off only
    effects = head_effects(model, ids, tgt=tgt, position=position, head_mask=partial)
    assert set(effects.switched_off) == set(already)
    check(model, ids, tgt, effects, base)
    assert effects.drop[effects.index([already[0]])] == pytest.approx(0.0, abs=1e-6)  # off already: no change
    forced = why_token(model, ids, tgt=tgt, position=position, head_mask=partial, search_pairs=True)
    assert not {h for s in forced.pairs.sets for h in s} & set(already)
    check(model, ids, tgt, forced.pairs, base)
    with pytest.raises(ValueError, match=r"head_mask\[.*must be \(n_layers, n_heads\)"):
        head_effects(model, ids, tgt=tgt, position=position, head_mask={next(iter(kinds)): torch.ones(1, 1)})


def test_negative_position_counts_from_the_end():
    model = tiny("decoder")
    ids, _, _ = inputs("decoder")
    a, b = head_effects(model, ids, position=-1), head_effects(model, ids, position=len(ids) - 1)
    assert a.position == b.position == len(ids) - 1
    np.testing.assert_allclose(a.prob, b.prob, atol=1e-7)


def test_ranking_grid_and_threshold():
    model = tiny("encoder-decoder")
    ids, tgt, position = inputs("encoder-decoder")
    effects = head_effects(model, ids, tgt=tgt, position=position)
    order = effects.order()
    drops = effects.drop[order]
    assert np.all(drops[:-1] >= drops[1:])
    assert effects.ranked(1)[0] == effects.sets[order[0]]
    grid = effects.grid("cross")
    assert grid.shape == (3, 4) and not np.isnan(grid).any()
    h = Head("cross", 2, 1)
    assert grid[2, 1] == effects.drop[effects.index([h])]
    assert np.array_equal(effects.moves(0.5), (effects.drop >= 0.5) | (effects.top != effects.baseline_top))
    with pytest.raises(ValueError, match="'encoder' heads"):
        head_effects(tiny("decoder"), inputs("decoder")[0]).grid("encoder")


def test_why_token_searches_pairs_only_when_no_head_moves_the_token():
    model = tiny("encoder-decoder")
    ids, tgt, position = inputs("encoder-decoder")
    singles = head_effects(model, ids, tgt=tgt, position=position)
    auto = why_token(model, ids, tgt=tgt, position=position)
    moved = bool(singles.moves(DEFAULT_DROP).any())
    assert auto.moved_by_one == moved and (auto.pairs is None) == moved
    forced = why_token(model, ids, tgt=tgt, position=position, search_pairs=True, pair_heads=5)
    quiet = [singles.sets[v][0] for v in singles.order() if not singles.moves(DEFAULT_DROP)[v]][:5]
    assert forced.pairs is not None and len(forced.pairs.sets) == 10
    assert {h for s in forced.pairs.sets for h in s} == set(quiet)  # the strongest heads that do not move it alone
    check(model, ids, tgt, forced.pairs)
    assert why_token(model, ids, tgt=tgt, position=position, search_pairs=False).pairs is None
    heads, prob, top = auto.best()
    effects = singles if moved else auto.pairs
    v = effects.order()[0]
    assert (heads, prob, top) == (effects.sets[v], float(effects.prob[v]), int(effects.top[v]))
    strict = why_token(model, ids, tgt=tgt, position=position, threshold=1.0)  # only a flip moves it now
    assert (strict.pairs is None) == bool(singles.flips.any())


@pytest.mark.parametrize("with_base", [False, True])
@pytest.mark.parametrize("name", ["decoder", "encoder-decoder"])
def test_regenerate_equals_one_generation_per_head_set(name, with_base):
    model = tiny(name)
    ids, _, _ = inputs(name)
    src = ids[:5] if name == "decoder" else ids
    heads = every_head(model)
    sets = [[heads[0]], [heads[-1], heads[2]], [heads[5]]]
    kwargs = dict(bos_id=1 if name == "encoder-decoder" else None, eos_id=2, max_new_tokens=6)
    base = masks_without(model.config.attention_kinds(), [heads[3]]) if with_base else None
    out = regenerate(model, src, sets, decode=lambda ids: " ".join(map(str, ids)), head_mask=base, **kwargs)
    for heads_off, answer in zip([[]] + sets, [out.baseline] + out.variants):
        one = generate(model, src[None], head_mask=masks_without(model.config.attention_kinds(), heads_off, base),
                       **kwargs).tokens[0].tolist()
        n = one.index(2) + 1 if 2 in one else len(one)
        assert answer.ids == one[:n] and answer.text == " ".join(map(str, one[:n]))
        assert answer.heads == tuple(heads_off)
    assert out.changed() == [a for a in out.variants if a.ids != out.baseline.ids]


def test_role_heads_by_effect_orders_a_roles_heads_by_effect():
    model = tiny("decoder")
    ids, _, position = inputs("decoder")
    effects = head_effects(model, ids, position=position)
    scores = torch.tensor([[0.9, 0.2, 0.6, float("nan")], [0.7, 0.8, 0.1, 0.55], [0.95, 0.0, 0.3, 0.6]])
    ranked = role_heads_by_effect(scores, effects, "decoder", k=10)
    grid = effects.grid("decoder")
    members = {(la, h) for la in range(3) for h in range(4) if scores[la, h] >= 0.5}
    assert {(r.layer, r.head) for r in ranked} == members
    assert [r.drop for r in ranked] == sorted((float(grid[la, h]) for la, h in members), reverse=True)
    assert all(r.score == pytest.approx(float(scores[r.layer, r.head])) for r in ranked)
    assert len(role_heads_by_effect(scores, effects, "decoder", k=2)) == 2
    assert [(r.layer, r.head) for r in role_heads_by_effect(scores, grid, "decoder", k=10)] == \
        [(r.layer, r.head) for r in ranked]  # an (L, H) effect map instead of the sweep
    with pytest.raises(ValueError, match=r"\(3, 4\)"):
        role_heads_by_effect(scores[:2], effects, "decoder", k=1)


def test_head_names():
    assert Head("cross", 0, 1).name(False) == "cross L0 H1"
    assert Head("decoder", 1, 3).name(False) == "L1 H3" and Head("decoder", 1, 3).name() == "decoder L1 H3"
    assert heads_name([Head("cross", 0, 1), Head("cross", 1, 3)]) == "cross L0 H1 + cross L1 H3"


def test_bad_input_names_the_bad_value():
    model = tiny("encoder-decoder")
    ids, tgt, _ = inputs("encoder-decoder")
    with pytest.raises(ValueError, match="position 8 is outside the sequence of 8 tokens"):
        head_effects(model, ids, tgt=tgt, position=8)
    with pytest.raises(ValueError, match="position -9"):
        head_effects(model, ids, tgt=tgt, position=-9)
    with pytest.raises(ValueError, match="token 30 is outside the vocabulary: ids are 0..29"):
        head_effects(model, ids, tgt=tgt, token=30)
    with pytest.raises(ValueError, match="token -1 is outside"):
        head_effects(model, ids, tgt=tgt, token=-1)
    with pytest.raises(ValueError, match="token must be a token id.*True"):
        head_effects(model, ids, tgt=tgt, token=True)
    with pytest.raises(ValueError, match="needs the decoder input tgt"):
        head_effects(model, ids)
    with pytest.raises(ValueError, match="cross L3 H0 is not a head"):
        effects_of(model, ids, [[Head("cross", 3, 0)]], tgt=tgt)
    with pytest.raises(ValueError, match="no 'cross' heads"):
        effects_of(tiny("decoder"), ids, [[Head("cross", 0, 0)]])
    with pytest.raises(ValueError, match="distinct heads"):
        effects_of(model, ids, [[Head("cross", 0, 0), Head("cross", 0, 0)]], tgt=tgt)
    with pytest.raises(ValueError, match="pairs are searched among 2..16 heads, got 1"):
        pair_effects(model, ids, [Head("cross", 0, 0)], tgt=tgt)
    with pytest.raises(ValueError, match="threshold .* got 2"):
        why_token(model, ids, tgt=tgt, threshold=2)
    with pytest.raises(ValueError, match="pair_heads .* got 40"):
        why_token(model, ids, tgt=tgt, pair_heads=40)
    with pytest.raises(ValueError, match="batch_size .* got 0"):
        head_effects(model, ids, tgt=tgt, batch_size=0)
    with pytest.raises(ValueError, match="classifier reads the first token only"):
        head_effects(tiny("classifier"), ids, position=3)
    bare = Transformer(TransformerConfig(**COMMON, arch="encoder", vocab_size=40)).eval()
    with pytest.raises(ValueError, match="no output head"):
        head_effects(bare, ids)
    model.train()
    with pytest.raises(ValueError, match="eval mode"):
        head_effects(model, ids, tgt=tgt)


# ------------------------------------------------------------------------------------------ shipped models
def test_date_translator_month_is_read_by_a_pair_of_cross_heads():
    """The shipped date-translator on "lundi 3 mars 2025" answers 2025-03-03. At the month's second digit (decoder
    position 6, reading "[BOS]2025-0", predicting "3"), one head alone does change the top token: decoder L0 H3 off
    makes it "-" (the greedy answer then reads 2025-0-030), so the automatic pair search does not start; no head alone
    turns the 3 into another digit. Searching pairs anyway among the 8 strongest heads that do not move it alone, the
    best pair is cross L0 H1 + cross L1 H3 (the 3 becomes a 5), and its greedy answer is 2025-05-03."""
    loaded = explorer.load("date-translator", "cpu")
    model = loaded.model.eval()
    from explorer.training.tasks import task_from_dict

    task = task_from_dict(loaded.task, loaded.tokenizer)
    src = torch.tensor(task.encode_source("lundi 3 mars 2025")[0])
    tgt = torch.tensor([task.bos_id] + task.chars("2025-03-03"))
    assert task.predict(model, ["lundi 3 mars 2025"]) == ["2025-03-03"]
    three, five, dash = (task.chars(c)[0] for c in "35-")
    auto = why_token(model, src, tgt=tgt, position=6)
    singles = auto.singles
    assert singles.token == three and singles.baseline_top == three
    flipped = [singles.sets[v] for v in np.nonzero(singles.flips)[0]]
    assert flipped == [(Head("decoder", 0, 3),)] and singles.top[singles.index(flipped[0])] == dash
    assert auto.pairs is None  # a head moves it alone
    digits = set(task.chars("0123456789")) - {three}
    assert not digits & set(singles.top.tolist())
    forced = why_token(model, src, tgt=tgt, position=6, search_pairs=True)
    best = forced.pairs.order()[0]
    assert set(forced.pairs.sets[best]) == {Head("cross", 0, 1), Head("cross", 1, 3)}
    assert forced.pairs.top[best] == five and forced.pairs.drop[best] > 0.9
    answers = regenerate(model, src, [forced.pairs.sets[best], flipped[0]], bos_id=task.bos_id, eos_id=task.eos_id,
                         max_new_tokens=task.max_new_tokens, decode=task.decode)
    assert answers.baseline.text == "2025-03-03"
    assert [a.text for a in answers.variants] == ["2025-05-03", "2025-0-030"]


def induction_reading(loaded, text: str) -> tuple[list[int], list[int]]:
    """(prompt, prompt + greedy answer without the end token): what the Contributions tab reads."""
    prompt = loaded.tokenizer.encode(text).ids
    eos = loaded.task["eos_id"]
    answer = generate(loaded.model, torch.tensor([prompt]), eos_id=eos,
                      max_new_tokens=loaded.task["max_new_tokens"]).tokens[0].tolist()
    return prompt, prompt + [i for i in answer if i != eos]


def test_induction_gpt_effect_and_probe_agree_on_the_one_copying_head():
    """induction-gpt: on the Roles tab's probe (4 rows of 20 random tokens repeated, seed 0) L1 H2 scores highest as
    an induction head; the other layer-1 heads' attention leans that way too, but the penalty it was trained with
    took their OV weights to about 0. On "t5 t9 t2 t7 t5 t9" (answer t2 t7 t5 t9 ...), the effect on the last
    position's top token ranks L1 H2 first by far (the others about 0), and L1 H2 off changes the greedy answer
    while L1 H3 off does not."""
    loaded = explorer.load("induction-gpt", "cpu")
    model = loaded.model.eval()
    probe = repeated_tokens(loaded.tokenizer, span=20, repeats=2, batch=4, seed=0,
                            vocab_size=loaded.config.vocab_size)
    scores = head_roles(model, probe.ids, padding=False)["decoder"]["induction"]
    assert top_heads(scores, 1) == [(1, 2)] and scores[1, 2] > 0.7
    prompt, reading = induction_reading(loaded, "t5 t9 t2 t7 t5 t9")
    effects = head_effects(model, torch.tensor(reading), position=-1)
    drops = [float(effects.drop[effects.index([Head("decoder", 1, h)])]) for h in range(4)]
    assert drops[2] > 0.5 and max(abs(drops[h]) for h in (0, 1, 3)) < 0.01, drops
    by_effect = role_heads_by_effect(scores, effects, "decoder", k=4)
    assert [(r.layer, r.head) for r in by_effect][0] == (1, 2)
    answers = regenerate(model, torch.tensor(prompt), [[Head("decoder", 1, 2)], [Head("decoder", 1, 3)]],
                         eos_id=loaded.task["eos_id"], max_new_tokens=loaded.task["max_new_tokens"])
    assert answers.variants[0].ids != answers.baseline.ids and answers.variants[1].ids == answers.baseline.ids

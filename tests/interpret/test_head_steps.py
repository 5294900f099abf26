"""One head worked through for a few keys (explorer.interpret.head_steps), on tiny GPT-2, Llama with grouped-query
attention, T5 (its position term; cross-attention) and BART (cross-attention): q is x through the head's rows of W_Q
(+ b), exp / sum is the weight the model returns (1e-6), the sum counts every allowed key (the picked ones and the
rest), the picked and the other shares of z add up to the model's own head output (1e-5), what it writes is z W_O;
a blocked key has no score, exp 0 and weight 0; the default keys; bad picks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("transformers")

from explorer.interpret import capture_block
from explorer.interpret.head_steps import MAX_KEYS, default_keys, example_json, worked_example
from tests.interpret.test_head_computation import capture_module, make, reference

TOL = 1e-6
Z_TOL = 1e-5


@pytest.fixture(scope="module", params=["gpt2", "llama-gqa", "t5", "bart"])
def family(request, tmp_path_factory):
    return make(request.param, tmp_path_factory.mktemp(f"steps-{request.param}"))


def kinds_of(model):
    return [k for k in ("encoder", "decoder", "cross") if k in model.config.attention_kinds()]


@torch.no_grad()
def test_the_steps_end_on_the_models_own_weights_and_output(family):
    model, ids, tgt = family.model, family.ids, family.tgt
    H = model.config.n_heads
    out, record = reference(model, ids, tgt)
    for kind in kinds_of(model):
        layer = 1
        capture = capture_block(model, ids, kind, layer, tgt=tgt)
        block = capture_module(model, kind, layer)
        Dh = block.head_dim
        returned = getattr(out.attentions, kind)[layer][0]  # (H, T, S)
        T = capture.n_queries
        for head in (0, H - 1):
            for query in (1, T - 1):
                comp = capture.head(head, query)
                ex = worked_example(comp, range(capture.n_keys) if capture.n_keys <= MAX_KEYS else None)
                picked = [k.key for k in ex.keys]
                assert picked == sorted(picked) and len(picked) >= 2
                model_weights = returned[head, query].double().numpy()
                for step in ex.keys:
                    assert step.weight == pytest.approx(model_weights[step.key], abs=TOL)
                    assert step.exp / ex.exp_sum == pytest.approx(model_weights[step.key], abs=TOL)
                    if step.blocked_by:
                        assert step.dot is None and step.score is None and step.exp == 0 and step.weight == 0
                    else:
                        k = capture.k[capture.kv_head(head), step.key].double()
                        assert step.dot == pytest.approx(float(capture.q[head, query].double() @ k), abs=1e-5)
                        bias = 0.0 if step.position is None else step.position
                        assert step.score == pytest.approx(step.dot * ex.scale + bias, abs=1e-5)
                # the sum is over every allowed key: the picked ones and the others
                allowed = comp.allowed
                assert ex.others_allowed + sum(not k.blocked_by for k in ex.keys) == allowed.sum() == ex.n_allowed
                assert sum(k.exp for k in ex.keys) + ex.others_exp == pytest.approx(ex.exp_sum, rel=1e-12)
                assert ex.weight_total == pytest.approx(1.0, abs=1e-5)
                assert ex.others_weight == pytest.approx(model_weights.sum() - model_weights[picked].sum(), abs=TOL)
                # z: the picked keys' weight x v plus the others', the model's own head output
                z_model = record[f"{kind}.{layer}.z"][0, head, query].double().numpy()
                parts = sum(k.weighted_value for k in ex.keys) + ex.others_value
                np.testing.assert_allclose(parts, z_model, rtol=0, atol=Z_TOL)
                np.testing.assert_allclose(ex.z, z_model, rtol=0, atol=Z_TOL)
                W_o = block.out_proj.weight[:, head * Dh:(head + 1) * Dh].double()
                np.testing.assert_allclose(ex.written, (torch.tensor(z_model) @ W_o.T).numpy(), rtol=0, atol=Z_TOL)
                # q = x W_Q (+ b): the head's rows of the model's own in_proj (before rotary in a rotary model)
                rows = slice(head * Dh, (head + 1) * Dh)
                b = block.in_proj.bias
                q = F.linear(torch.tensor(ex.x, dtype=torch.float32), block.in_proj.weight[rows],
                             None if b is None else b[rows]).numpy()
                np.testing.assert_allclose(ex.q_unrotated if ex.q_unrotated is not None else ex.q, q,
                                           rtol=0, atol=1e-5)
                assert set(example_json(ex)) >= {"keys", "exp_sum", "others_exp", "weight_total", "written"}


def test_grouped_query_heads_read_their_shared_values(family):
    model, ids = family.model, family.ids
    c = model.config
    if c.resolved_kv_heads == c.n_heads:
        pytest.skip("no grouped-query attention")
    capture = capture_block(model, ids, "decoder", 1)
    head = c.n_heads - 1
    g = capture.kv_head(head)
    assert g < head
    ex = worked_example(capture.head(head, -1))
    for step in ex.keys:
        np.testing.assert_array_equal(step.value, capture.v[g, step.key].double().numpy())


def test_a_masked_key_and_the_default_keys(family):
    """Causal: a middle query's default keys are the 3 strongest, itself and the first key after it (blocked: no
    score); with the padding of the last two keys blocked, a key the learner picks there has no score either."""
    model, ids, tgt = family.model, family.ids, family.tgt
    kind = "decoder" if "decoder" in model.config.attention_kinds() else "encoder"
    T = len(ids) if kind == "encoder" or tgt is None else len(tgt)
    real = torch.ones(len(ids), dtype=torch.bool)
    real[-2:] = False
    capture = capture_block(model, ids, kind, 1, tgt=tgt, key_mask=real[None])
    query = 2
    comp = capture.head(0, query)
    keys = default_keys(comp)
    strongest = [int(j) for j in np.argsort(-comp.weights, kind="stable")[:3]]
    assert set(strongest) | {query} <= set(keys)
    blocked = [j for j in keys if comp.blocked_by[j]]
    assert len(blocked) == 1 and blocked[0] > query  # causal (and, for a decoder-only model, padding too)
    ex = worked_example(comp)
    step = next(k for k in ex.keys if k.key == blocked[0])
    assert step.score is None and step.dot is None and step.exp == 0 and step.weight == 0
    assert ex.others_blocked == sum(1 for why in comp.blocked_by if why) - 1
    if kind == "decoder" and tgt is None:  # padding keys: the last two of the sequence
        ex2 = worked_example(capture.head(0, T - 3), [0, T - 1])
        assert "padding" in ex2.keys[1].blocked_by and ex2.keys[1].score is None
        assert ex2.weight_total == pytest.approx(1.0, abs=1e-5)


def test_every_key_blocked_is_all_zero(family):
    model, ids = family.model, family.ids
    if model.config.arch != "decoder":
        pytest.skip("left padding of a decoder-only model")
    real = torch.ones(len(ids), dtype=torch.bool)
    real[:2] = False  # left padding: query 0 sees nothing
    comp = capture_block(model, ids, "decoder", 0, key_mask=real[None]).head(0, 0)
    ex = worked_example(comp)
    assert ex.exp_sum == 0 and ex.weight_total == 0 and ex.n_allowed == 0
    assert all(k.score is None for k in ex.keys)


@pytest.mark.parametrize("keys, message", [([99], "outside"), (["x"], "not a key position"), ([True], "not a key"),
                                           (list(range(9)), "at most 8"), ([1.5], "not a whole number")])
def test_bad_picks_say_what_is_wrong(family, keys, message):
    comp = capture_block(family.model, family.ids, kinds_of(family.model)[0], 0, tgt=family.tgt).head(0, -1)
    with pytest.raises(ValueError, match=message):
        worked_example(comp, keys)

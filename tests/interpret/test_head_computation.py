"""Inside one head (explorer.interpret.head_computation): on tiny random models of every family, made by transformers
in the Hugging Face layout and loaded with explorer.load (GPT-2, Llama with grouped-query attention, GPT-NeoX with
partial rotary, Qwen2 with q/k/v biases, Mistral with a sliding window, T5 with its relative bias, BART, Marian,
BERT, RoBERTa, DistilBERT; encoder, decoder and cross kinds), with padding and a custom mask, and on the shipped
checkpoints: the weights equal the model's returned attention (1e-6), the written vector the head's output z through
its rows of W_O from the Record of an ordinary forward (1e-5), the query, keys and input the model's own; the parts
add up (products to dots, dots to scores, weights times values to z); blocked keys are the mask the model applied,
each with its reason; q and k before rotary rotate into the model's; the toggled run of a pair is the model run with
those toggles; the run stops at the chosen block; results pickle; bad input."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

import explorer
from explorer.interpret import (BlockCapture, block_sites, capture_block, capture_from_record, head_computation,
                                head_computation_pair, head_value_norms)
from explorer.model import Record, Transformer, TransformerConfig, apply_rotary, position_ids, rotary_tables
from explorer.model.masks import block_keys_mask
from tests.importers.test_llama import mistral_case
from tests.interpret.test_dla import Family, build, decoder_only, shipped_inputs

WEIGHTS_TOL = 1e-6
WRITTEN_TOL = 1e-5
FAMILIES = ["gpt2", "llama-gqa", "neox-parallel", "qwen2", "mistral", "t5", "bart", "marian", "bert-mlm",
            "roberta-mlm", "distilbert-mlm"]


def make(name: str, folder) -> Family:
    if name == "mistral":
        return decoder_only(mistral_case(folder, window=4))
    return build(name, folder)


@pytest.fixture(scope="module", params=FAMILIES)
def family(request, tmp_path_factory) -> Family:
    return make(request.param, tmp_path_factory.mktemp(f"hc-{request.param}"))


def reference(model: Transformer, ids: torch.Tensor, tgt: torch.Tensor | None, **forward):
    """An ordinary forward with every attention and a Record of every block's inputs and head outputs."""
    record = Record(only={"x", "q", "k", "v", "z", "mask"})
    with torch.no_grad():
        out = model(ids[None], None if tgt is None else tgt[None], record=record, **forward)
    return out, record


@torch.no_grad()
def check_against(model: Transformer, capture: BlockCapture, out, record: Record, heads, queries) -> None:
    """Every head and query asked: the numbers are the model's own, and they add up."""
    kind, layer = capture.kind, capture.layer
    prefix = f"{kind}.{layer}"
    returned = getattr(out.attentions, kind)[layer][0]  # (H, T, S)
    applied = getattr(out.masks, kind)
    H, Hkv = model.config.n_heads, model.config.resolved_kv_heads
    block = capture_module(model, kind, layer)
    Dh = block.head_dim
    for h in heads:
        for i in queries:
            r = capture.head(h, i)
            assert r.kv_head == h // (H // Hkv) and (r.n_heads, r.n_kv_heads) == (H, Hkv)
            np.testing.assert_allclose(r.weights, returned[h, i].numpy(), rtol=0, atol=WEIGHTS_TOL)
            z = record[f"{prefix}.z"][0, h, i]  # after the head mask: what W_O reads
            want = z @ block.out_proj.weight[:, h * Dh:(h + 1) * Dh].T
            np.testing.assert_allclose(r.written, want.detach().numpy(), rtol=0, atol=WRITTEN_TOL)
            assert abs(r.written_norm - float(want.norm())) < WRITTEN_TOL
            np.testing.assert_allclose(r.x, record[f"{prefix}.x"][0, i].numpy(), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(r.q, record[f"{prefix}.q"][0, h, i].numpy(), rtol=1e-5, atol=1e-6)
            # float32 sums in another order: induction-gpt's keys differ by up to 1.1e-6 near 0
            np.testing.assert_allclose(r.keys, record[f"{prefix}.k"][0, r.kv_head].numpy(), rtol=1e-5, atol=2e-6)
            np.testing.assert_allclose(r.values, record[f"{prefix}.v"][0, r.kv_head].numpy(), rtol=1e-5, atol=1e-6)
            # (the vectors: this run takes the fast attention path below the block, the reference the weights path)
            # the parts add up
            np.testing.assert_allclose(r.products.sum(-1), r.dots, rtol=1e-6, atol=1e-5)  # float32 sums, another order
            position = 0.0 if r.position is None else r.position
            np.testing.assert_allclose(r.scores, r.dots * r.scale + position, rtol=0, atol=1e-5)
            np.testing.assert_allclose(r.weights @ r.values, r.weighted_sum, rtol=0, atol=WRITTEN_TOL)
            assert abs(r.weights.sum() - (1.0 if r.allowed.any() else 0.0)) < 1e-5
            # blocked keys: the mask the model applied, each with a reason, -inf and weight 0
            mask_row = (torch.ones(returned.shape[-1], dtype=torch.bool) if applied is None
                        else applied[0, 0, i if applied.shape[-2] > 1 else 0])
            assert r.allowed.tolist() == mask_row.tolist()
            assert [why == "" for why in r.blocked_by] == r.allowed.tolist()
            assert "mask" not in r.blocked_by  # every blocked key has a named reason
            assert np.all(np.isneginf(r.masked_scores[~r.allowed])) and np.all(r.weights[~r.allowed] == 0)
            np.testing.assert_allclose(r.value_norms, head_value_norms(block, record[f"{prefix}.v"])[0, h].numpy(),
                                       rtol=1e-5, atol=1e-5)
            assert r.head_on and r.gate == 1.0


def capture_module(model: Transformer, kind: str, layer: int):
    if kind == "encoder":
        return model.encoder.layers[layer].self_attn
    return getattr(model.decoder.layers[layer], "cross_attn" if kind == "cross" else "self_attn")


def check_every_block(model: Transformer, ids: torch.Tensor, tgt: torch.Tensor | None, heads) -> None:
    """Every block of every kind, the heads given, the first, middle and last query."""
    out, record = reference(model, ids, tgt)
    for kind, (L, _) in model.config.attention_kinds().items():
        T = len(ids) if kind == "encoder" or tgt is None else len(tgt)
        for layer in range(L):
            capture = capture_block(model, ids, kind, layer, tgt=tgt)
            check_against(model, capture, out, record, heads, (0, T // 2, T - 1))


def test_every_kind_is_the_models_own(family):
    check_every_block(family.model, family.ids, family.tgt, (0, family.model.config.n_heads - 1))


def test_family_facts(family):
    """The scale, the position term, rotary and grouped-query attention each family has."""
    model, ids, tgt = family.model, family.ids, family.tgt
    c = model.config
    kind = "encoder" if c.arch == "encoder" else "decoder"
    r = head_computation(model, ids, kind, 1, c.n_heads - 1, -1, tgt=tgt)
    assert r.scale == (1.0 if c.positional == "relative" else c.resolved_head_dim ** -0.5)
    assert (r.position is not None) == (c.positional == "relative")
    assert r.rotary_dim == c.rotary_dim and (r.q_unrotated is not None) == (c.positional == "rotary")
    assert r.pre_norm == c.norm_first
    if c.positional == "rotary":
        R = c.rotary_dim
        assert 0 < R <= c.resolved_head_dim
        np.testing.assert_array_equal(r.q[R:], r.q_unrotated[R:])  # GPT-NeoX: the rest passes unrotated
        half = R // 2  # a rotation keeps the length of every (i, i + R/2) pair
        pairs = lambda v: np.hypot(v[..., :half], v[..., half:R])  # noqa: E731
        np.testing.assert_allclose(pairs(r.q), pairs(r.q_unrotated), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(pairs(r.keys), pairs(r.keys_unrotated), rtol=1e-5, atol=1e-6)
        # and the model's own rotation of them gives the model's q and k
        tables = rotary_tables(position_ids(None, len(ids)), c)
        q_un = torch.tensor(r.q_unrotated)[None, None, None].expand(1, 1, len(ids), -1)
        turned = apply_rotary(q_un, tables)[0, 0, r.query]
        np.testing.assert_allclose(turned.numpy(), r.q, rtol=0, atol=1e-5)
        k_turned = apply_rotary(torch.tensor(r.keys_unrotated)[None, None], tables)[0, 0]
        np.testing.assert_allclose(k_turned.numpy(), r.keys, rtol=0, atol=1e-5)
    if c.resolved_kv_heads < c.n_heads:
        assert r.kv_head == (c.n_heads - 1) // (c.n_heads // c.resolved_kv_heads) < c.n_heads - 1
    if "cross" in c.attention_kinds():
        cross = head_computation(model, ids, "cross", 0, 0, 0, tgt=tgt)
        assert cross.position is None and cross.rotary_dim == 0 and len(cross.key_ids) == len(ids)
        assert cross.key_ids.tolist() == ids.tolist() and cross.query_id == int(tgt[0])


def test_padding_and_custom_masks_with_their_reasons(family):
    """Padding keys (an explicit key mask: the last two tokens), a custom mask blocking key 1 and the causal and
    window masks: the model's own mask and weights, each blocked key with its reasons."""
    model, ids, tgt = family.model, family.ids, family.tgt
    arch = model.config.arch
    kind = "encoder" if arch == "encoder" else "decoder"
    T = len(ids)
    real = torch.ones(T, dtype=torch.bool)
    real[-2:] = False
    custom = block_keys_mask(T, T, [1])
    forward = dict(key_mask=real[None], attn_mask=custom)
    out, record = reference(model, ids, tgt, **forward)
    kinds = ["encoder"] if arch != "decoder" else []
    kinds += [] if arch == "encoder" else (["decoder"] if arch == "decoder" else ["decoder", "cross"])
    for kind in kinds:
        capture = capture_block(model, ids, kind, 1, tgt=tgt, **forward)
        Tq = capture.n_queries
        check_against(model, capture, out, record, (0,), range(Tq))
        r = capture.head(0, Tq - 1)
        if kind != "decoder":  # every key of the source: padding at the end, key 1 custom (self-attention only)
            assert r.blocked_by[-1] == "padding"
            assert r.blocked_by[1] == ("custom" if kind == "encoder" else "")
        elif arch == "decoder":
            assert r.blocked_by[-1] == "padding" and r.blocked_by[1] in ("custom", "custom, window")
            assert "causal" in capture.head(0, 2).blocked_by[3]
            if model.decoder.sliding_window:
                assert r.blocked_by[0] == "window" and r.blocked_by[2] == "window"
    if arch == "decoder":  # a row whose every key is blocked: weights 0, as the model's
        head_first = capture_block(model, ids, "decoder", 0, key_mask=real.flip(0)[None])  # left padding
        r0 = head_first.head(0, 0)
        assert not r0.allowed.any() and np.all(r0.weights == 0) and r0.blocked_by[0] == "padding"
        out0, _ = reference(model, ids, None, key_mask=real.flip(0)[None])
        assert torch.all(out0.attentions.decoder[0][0, 0, 0] == 0)


@torch.no_grad()
def test_head_off_and_masks_toggled_side_by_side(family):
    """A head switched off below, the chosen head itself off, the causal or padding mask off: each side is the model
    run with its own toggles (an earlier head off changes the layers above)."""
    model, ids, tgt = family.model, family.ids, family.tgt
    c = model.config
    kind = "encoder" if c.arch == "encoder" else "decoder"
    L, H = c.attention_kinds()[kind]
    head_mask = {kind: torch.ones(L, H)}
    head_mask[kind][0, 0] = 0.0  # below the block looked at
    head_mask[kind][1, 1] = 0.0  # the head looked at
    toggles = dict(head_mask=head_mask, causal=False) if kind == "decoder" else dict(head_mask=head_mask)
    pair = head_computation_pair(model, ids, kind, 1, 1, -1, tgt=tgt, **toggles)
    assert pair.toggled is not None
    assert f"{kind} L0 H0 off" in pair.changes and f"{kind} L1 H1 off" in pair.changes
    assert ("causal mask off" in pair.changes) == (kind == "decoder")
    for side, forward in ((pair.baseline, {}), (pair.toggled, toggles)):
        out, record = reference(model, ids, tgt, **forward)
        np.testing.assert_allclose(side.weights, getattr(out.attentions, kind)[1][0, 1, -1].numpy(), rtol=0,
                                   atol=WEIGHTS_TOL)
        W_o = capture_module(model, kind, 1).out_proj.weight[:, c.resolved_head_dim:2 * c.resolved_head_dim]
        want = record[f"{kind}.1.z"][0, 1, -1] @ W_o.T
        np.testing.assert_allclose(side.written, want.numpy(), rtol=0, atol=WRITTEN_TOL)
    off = pair.toggled
    assert not off.head_on and off.gate == 0.0 and np.all(off.written == 0) and off.written_norm == 0.0
    assert np.abs(off.weighted_sum).max() > 0  # what it would have written: its weights still computed
    assert np.abs(pair.weight_change).max() > 1e-4  # head L0 H0 off (and the causal mask) change its input
    assert pair.baseline.head_on
    none = head_computation_pair(model, ids, kind, 1, 0, 0, tgt=tgt)
    assert none.toggled is None and none.changes == () and none.weight_change is None


def padded(rows: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T) ids right-padded with 0 and their (B, T) key mask."""
    width = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    real = torch.zeros(len(rows), width, dtype=torch.bool)
    for b, r in enumerate(rows):
        ids[b, :len(r)], real[b, :len(r)] = r, True
    return ids, real


@pytest.mark.parametrize("name", ["gpt2", "llama-gqa", "t5", "bert-mlm"])
@torch.no_grad()
def test_a_capture_from_a_runs_record_is_the_rows_own(name, tmp_path):
    """A batch of two padded rows run once with a Record of every block's sites (as a page's Run would), a head
    switched off: each row's capture from that record equals the row run alone (weights, written vector, the off
    head's weighted sum, the reasons of its real keys)."""
    fam = make(name, tmp_path)
    model, c = fam.model, fam.model.config
    src, real = padded([fam.ids, fam.ids[:-3]])
    tgt, tgt_real = padded([fam.tgt, fam.tgt[:-2]]) if fam.tgt is not None else (None, None)
    kinds = c.attention_kinds()
    head_mask = {kind: torch.ones(shape) for kind, shape in kinds.items()}
    for m in head_mask.values():
        m[1, 1] = 0.0
    record = Record(only=set().union(*(block_sites(kind, 1) for kind in kinds)))
    model(src, tgt, key_mask=real, tgt_key_mask=tgt_real, head_mask=head_mask, record=record)
    for kind in kinds:
        for b in range(2):
            n_src, n_tgt = int(real[b].sum()), None if tgt is None else int(tgt_real[b].sum())
            alone = capture_block(model, src[b, :n_src], kind, 1, tgt=None if tgt is None else tgt[b, :n_tgt],
                                  head_mask=head_mask)
            batch = capture_from_record(model, record, src, kind, 1, row=b, tgt=tgt, key_mask=real,
                                        tgt_key_mask=tgt_real, head_mask=head_mask)
            Tq, S = alone.n_queries, alone.n_keys
            for h in range(c.n_heads):
                for i in (0, Tq - 1):
                    one, two = alone.head(h, i), batch.head(h, i)
                    np.testing.assert_allclose(two.weights[:S], one.weights, rtol=0, atol=WEIGHTS_TOL)
                    assert np.all(two.weights[S:] == 0) and all("padding" in why for why in two.blocked_by[S:])
                    assert two.blocked_by[:S] == one.blocked_by
                    np.testing.assert_allclose(two.written, one.written, rtol=0, atol=WRITTEN_TOL)
                    np.testing.assert_allclose(two.weighted_sum, one.weighted_sum, rtol=0, atol=WRITTEN_TOL)
                    assert two.head_on == one.head_on == (h != 1)
    with pytest.raises(ValueError, match=r"row 2 is outside the 2 sequences of the record: use 0..1"):
        capture_from_record(model, record, src, kind, 1, row=2, tgt=tgt, key_mask=real, tgt_key_mask=tgt_real)
    with pytest.raises(ValueError, match=r"the record lacks .*\.0\.x.*Record\(only=block_sites"):
        capture_from_record(model, record, src, kind, 0, tgt=tgt, key_mask=real, tgt_key_mask=tgt_real)


def test_the_run_stops_at_the_block(tmp_path):
    """No layer above the chosen block runs (a forward hook on each layer, set on this test's own model)."""
    fam = build("gpt2", tmp_path)
    calls = []
    handles = [layer.register_forward_hook(lambda m, a, o, i=i: calls.append(i))
               for i, layer in enumerate(fam.model.decoder.layers)]
    try:
        capture_block(fam.model, fam.ids, "decoder", 0)
    finally:
        for h in handles:
            h.remove()
    assert calls == []  # layer 0 stops inside its attention: not even layer 0's forward returns


def test_results_pickle(tmp_path):
    fam = build("llama-gqa", tmp_path)
    capture = capture_block(fam.model, fam.ids, "decoder", 1)
    again = pickle.loads(pickle.dumps(capture))
    r, r2 = capture.head(5, -1), again.head(5, -1)
    np.testing.assert_array_equal(r.weights, r2.weights)
    assert len(pickle.dumps(capture)) < 4 * sum(t.numel() * t.element_size() for t in vars(capture).values()
                                                if isinstance(t, torch.Tensor))  # no larger storage behind views
    result = pickle.loads(pickle.dumps(r))
    assert result.blocked_by == r.blocked_by and np.array_equal(result.written, r.written)
    np.testing.assert_allclose(capture.weights(5)[-1].numpy(), r.weights, rtol=0, atol=1e-7)


# ------------------------------------------------------------------------------------------------ shipped
@pytest.mark.parametrize("name", ["date-translator", "date-gpt", "induction-gpt"])
def test_shipped_checkpoints(name):
    model, ids, tgt = shipped_inputs(name)
    check_every_block(model, ids, tgt, range(model.config.n_heads))


# ------------------------------------------------------------------------------------------------ bad input
def test_bad_input(tmp_path):
    fam = build("gpt2", tmp_path)
    model, ids = fam.model, fam.ids
    T = len(ids)
    with pytest.raises(ValueError, match=rf"query position {T} is outside the {T} query tokens: use 0..{T - 1} "
                                         rf"\(or -{T}..-1 from the end\)"):
        head_computation(model, ids, "decoder", 0, 0, T)
    with pytest.raises(ValueError, match=r"head 6 is outside the 6 heads of a decoder layer: use 0..5"):
        head_computation(model, ids, "decoder", 0, 6, 0)
    with pytest.raises(ValueError, match=r"head -1 is outside"):
        head_computation(model, ids, "decoder", 0, -1, 0)
    with pytest.raises(ValueError, match=r"layer 2 is outside the 2 decoder layers: use 0..1"):
        head_computation(model, ids, "decoder", 2, 0, 0)
    with pytest.raises(ValueError, match=r"kind 'cross' is not an attention of this model: it has decoder"):
        head_computation(model, ids, "cross", 0, 0, 0)
    with pytest.raises(ValueError, match=r"query position 'last' is outside"):
        head_computation(model, ids, "decoder", 0, 0, "last")
    with pytest.raises(ValueError, match="only an encoder-decoder takes tgt"):
        head_computation(model, ids, "decoder", 0, 0, 0, tgt=ids)
    with pytest.raises(ValueError, match="one sequence"):
        head_computation(model, torch.stack([ids, ids]), "decoder", 0, 0, 0)
    with pytest.raises(ValueError, match="key_mask must be a boolean mask of one sequence"):
        head_computation(model, ids, "decoder", 0, 0, 0, key_mask=torch.ones(2, T, dtype=torch.bool))
    model.train()
    try:
        with pytest.raises(ValueError, match="eval mode"):
            head_computation(model, ids, "decoder", 0, 0, 0)
    finally:
        model.eval()


def test_encoder_decoder_needs_tgt_for_its_decoder():
    model = Transformer(TransformerConfig(arch="encoder-decoder", vocab_size=30, d_model=16, n_heads=2, n_layers=1,
                                          d_ff=32, dropout=0.0)).eval()
    src = torch.randint(1, 30, (5,))
    with pytest.raises(ValueError, match=r"an encoder-decoder's 'cross' attention needs the decoder input tgt"):
        head_computation(model, src, "cross", 0, 0, 0)
    r = head_computation(model, src, "encoder", 0, 1, -1)  # the encoder alone needs no tgt
    assert r.weights.shape == (5,) and r.query == 4

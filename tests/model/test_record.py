"""The per-call Record (explorer.model.record): every documented site is filled with its shape, on every
layout (pre-norm, post-norm, parallel residual, cross-attention, grouped-query attention, rotary, T5's
relative bias, embedding norm); each layer's output is rebuilt exactly from its input and the recorded head
outputs, MLP output and norm divisors; both attention paths record the same; recording changes nothing and
leaves nothing on the model."""

from __future__ import annotations

import threading

import pytest
import torch
from torch import nn

from explorer.model import Encoder, Record, Transformer, TransformerConfig
from explorer.model.record import norm_scale

BASE = dict(vocab_size=40, d_model=32, n_heads=4, n_layers=2, d_ff=48, dropout=0.0, max_len=24)
LAYOUTS = {
    "pre-norm decoder": dict(arch="decoder", norm_first=True, positional="learned"),
    "post-norm decoder": dict(arch="decoder", norm_first=False, positional="sinusoidal"),
    "gqa rotary rmsnorm": dict(arch="decoder", norm_first=True, norm="rmsnorm", positional="rotary", n_kv_heads=2,
                               mlp="gated", activation="silu", qkv_bias=True, out_bias=False, pad_id=None),
    "parallel residual": dict(arch="decoder", norm_first=True, positional="rotary", rotary_fraction=0.5,
                              parallel_residual=True, pad_id=None),
    "t5": dict(arch="encoder-decoder", norm_first=True, norm="rmsnorm", positional="relative", attn_scale=1.0,
               qkv_bias=False, out_bias=False, mlp_bias=False, lm_head_bias=False, relative_buckets=8,
               relative_max_distance=16),
    "bart": dict(arch="encoder-decoder", norm_first=False, positional="learned", position_offset=2,
                 embedding_norm=True, scale_embeddings=True, activation="gelu"),
    "annotated (pre-norm enc-dec)": dict(arch="encoder-decoder", norm_first=True, scale_embeddings=True),
    "bert-like encoder": dict(arch="encoder", norm_first=False, positional="learned", embedding_norm=True,
                              type_vocab_size=2, mlm_head=True),
    "seed000 encoder": dict(arch="encoder", norm_first=True, scale_embeddings=True),
    "wide heads (seed 002)": dict(arch="encoder-decoder", norm_first=False, positional="learned", head_dim=32),
}


def perturbed(options: dict, seed: int = 0) -> Transformer:
    model = Transformer(TransformerConfig(**BASE, **options)).eval()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.15)
    return model


def inputs(model: Transformer):
    gen = torch.Generator().manual_seed(1)
    src = torch.randint(3, 40, (2, 7), generator=gen)
    src[1, 5:] = 0  # padding (pad_id 0 where the model has one)
    tgt = torch.randint(3, 40, (2, 5), generator=gen) if model.config.arch == "encoder-decoder" else None
    return src, tgt


def expected_sites(model: Transformer, S: int, T: int) -> dict[str, tuple[int, ...]]:
    c = model.config
    B, D, H, Hkv, Dh = 2, c.d_model, c.n_heads, c.resolved_kv_heads, c.resolved_head_dim
    want = {}
    stacks = {"encoder": (c.encoder_layers, S), "decoder": (c.decoder_layers, T)}
    for stack, (layers, length) in stacks.items():
        if not layers:
            continue
        want[f"{stack}.embed"] = (B, length, D)
        if c.embedding_norm:
            want[f"{stack}.embed.scale"] = (B, length, 1)
        if c.resolved_final_norm:
            want[f"{stack}.final.scale"] = (B, length, 1)
        for i in range(layers):
            want.update({f"{stack}.{i}.z": (B, H, length, Dh), f"{stack}.{i}.v": (B, Hkv, length, Dh),
                         f"{stack}.{i}.scale": (B, length, 1), f"{stack}.{i}.mlp": (B, length, D),
                         f"{stack}.{i}.mlp.scale": (B, length, 1)})
            if stack == "decoder" and c.arch == "encoder-decoder":
                want.update({f"cross.{i}.z": (B, H, length, Dh), f"cross.{i}.v": (B, Hkv, S, Dh),
                             f"cross.{i}.scale": (B, length, 1)})
    return want


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_every_site_with_its_shape(layout):
    model = perturbed(LAYOUTS[layout])
    src, tgt = inputs(model)
    record = Record()
    with torch.no_grad():
        model(src, tgt, record=record)
    want = expected_sites(model, src.shape[1], 0 if tgt is None else tgt.shape[1])
    if model.config.arch == "decoder":  # a decoder-only model's sequence is src
        want = expected_sites(model, 0, src.shape[1])
    assert {name: tuple(record[name].shape) for name in record} == want


def frozen(norm: nn.Module, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """The norm applied with the recorded divisor."""
    if isinstance(norm, nn.LayerNorm):
        x = x - x.mean(-1, keepdim=True)
    y = x / scale * norm.weight
    return y + norm.bias if getattr(norm, "bias", None) is not None else y


def block_output(attention, z: torch.Tensor) -> torch.Tensor:
    """Sum over heads of z_h W_o^h plus W_o's bias, written out head by head."""
    Dh = attention.head_dim
    W = attention.out_proj.weight
    out = sum(z[:, h] @ W[:, h * Dh:(h + 1) * Dh].T for h in range(attention.n_heads))
    return out + attention.out_proj.bias if attention.out_proj.bias is not None else out


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_layers_rebuilt_from_the_record(layout):
    """Each layer's output = its input + what the record says each sublayer wrote, through the norms frozen at the
    recorded divisors: the record holds exactly what the residual stream received."""
    model = perturbed(LAYOUTS[layout])
    c = model.config
    src, tgt = inputs(model)
    record = Record()
    with torch.no_grad():
        out = model(src, tgt, record=record)
    stacks = [("decoder", model.decoder, out.hidden_states.decoder)] if model.decoder is not None else []
    if model.encoder is not None:
        stacks.append(("encoder", model.encoder, out.hidden_states.encoder))
    for kind, stack, hidden in stacks:
        assert torch.equal(record[f"{kind}.embed"], hidden[0])
        for i, layer in enumerate(stack.layers):
            x = hidden[i]
            self_sub = layer.attn_sublayer if kind == "encoder" else layer.self_sublayer
            if c.norm_first:  # the divisors are the norms' inputs' (pre-norm)
                assert torch.allclose(record[f"{kind}.{i}.scale"], norm_scale(self_sub.norm, x))
            y = x + block_output(layer.self_attn, record[f"{kind}.{i}.z"])
            if not c.norm_first:
                y = frozen(self_sub.norm, y, record[f"{kind}.{i}.scale"])
            if getattr(layer, "cross_attn", None) is not None:
                if c.norm_first:
                    assert torch.allclose(record[f"cross.{i}.scale"], norm_scale(layer.cross_sublayer.norm, y))
                y = y + block_output(layer.cross_attn, record[f"cross.{i}.z"])
                if not c.norm_first:
                    y = frozen(layer.cross_sublayer.norm, y, record[f"cross.{i}.scale"])
            if c.norm_first:  # the feed-forward norm reads the layer input (parallel residual) or y
                ff_in = x if c.parallel_residual else y
                assert torch.allclose(record[f"{kind}.{i}.mlp.scale"], norm_scale(layer.ff_sublayer.norm, ff_in))
            y = y + record[f"{kind}.{i}.mlp"]
            if not c.norm_first:
                y = frozen(layer.ff_sublayer.norm, y, record[f"{kind}.{i}.mlp.scale"])
            assert torch.allclose(y, hidden[i + 1], atol=1e-5), (kind, i)
        if stack.norm is not None:
            final = frozen(stack.norm, hidden[-1], record[f"{kind}.final.scale"])
            last = out.last_hidden_state if kind == "decoder" or c.arch == "encoder" else out.encoder_last_hidden_state
            assert torch.allclose(final, last, atol=1e-5)


@pytest.mark.parametrize("layout", ["gqa rotary rmsnorm", "t5", "bart", "bert-like encoder", "parallel residual"])
def test_both_attention_paths_record_the_same(layout):
    model = perturbed(LAYOUTS[layout])
    src, tgt = inputs(model)
    kinds = model.config.attention_kinds()
    head_mask = {kind: torch.ones(shape).index_fill_(1, torch.tensor([1]), 0.0) for kind, shape in kinds.items()}
    slow, fast = Record(), Record()
    with torch.no_grad():
        model(src, tgt, head_mask=head_mask, need_weights=True, record=slow)
        model(src, tgt, head_mask=head_mask, need_weights=False, record=fast)
    assert list(slow) == list(fast) and len(slow) > 0
    for name in slow:
        assert torch.allclose(slow[name], fast[name], atol=1e-5), name
        if name.endswith(".z"):  # head 1 switched off in every block: exactly 0 on both paths
            assert torch.all(slow[name][:, 1] == 0) and torch.all(fast[name][:, 1] == 0)


def test_record_sees_what_the_head_hook_returns():
    model = perturbed(LAYOUTS["pre-norm decoder"])
    src, _ = inputs(model)

    def double(kind, layer, z):
        return z * 2 if layer == 1 else z

    record = Record()
    seen = {}
    with torch.no_grad():
        model(src, head_hook=lambda k, i, z: seen.setdefault(i, z), record=Record())
        model(src, head_hook=double, record=record)
    assert torch.allclose(record["decoder.1.z"], seen[1] * 2)


def attributes(model: nn.Module) -> dict[str, set[str]]:
    return {name: set(vars(module)) for name, module in model.named_modules()}


@pytest.mark.parametrize("layout", ["t5", "bart", "gqa rotary rmsnorm"])
def test_recording_changes_nothing_and_stores_nothing_on_the_model(layout):
    model = perturbed(LAYOUTS[layout])
    src, tgt = inputs(model)
    before = attributes(model)
    with torch.no_grad():
        plain = model(src, tgt)
        recorded = model(src, tgt, record=Record())
    assert torch.equal(plain.logits, recorded.logits)
    for a, b in zip(plain.attentions.decoder, recorded.attentions.decoder):
        assert torch.equal(a, b)
    assert attributes(model) == before


def test_concurrent_calls_keep_their_own_records():
    model = perturbed(LAYOUTS["pre-norm decoder"])
    rows = [torch.randint(3, 40, (1, 6), generator=torch.Generator().manual_seed(s)) for s in range(4)]
    records = [Record() for _ in rows]

    def run(i):
        with torch.no_grad():
            for _ in range(5):
                model(rows[i], record=records[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(rows))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for ids, record in zip(rows, records):
        alone = Record()
        with torch.no_grad():
            model(ids, record=alone)
        assert all(torch.equal(alone[name], record[name]) for name in alone)


def test_a_stack_imported_from_torch_records_too():
    layer = torch.nn.TransformerEncoderLayer(32, 4, 48, dropout=0.0, batch_first=True)
    ours = Encoder.from_torch(torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)).eval()
    record = Record()
    with torch.no_grad():
        ours(torch.randn(1, 5, 32), record=record)
    assert record["encoder.1.z"].shape == (1, 4, 5, 8) and record["encoder.0.mlp.scale"].shape == (1, 5, 1)


def test_missing_site_names_what_was_recorded():
    record = Record()
    with pytest.raises(KeyError, match="not recorded; recorded sites: none"):
        record["decoder.0.z"]


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_record_keeps_only_the_sites_asked_for(layout, monkeypatch):
    """Record(only=...) keeps those sites, the same tensors as a full record, and computes no norm divisor it does
    not keep (the app records the values alone)."""
    import explorer.model.record as record_module

    model = perturbed(LAYOUTS[layout])
    src, tgt = inputs(model)
    full, values = Record(), Record(only={"v"})
    with torch.no_grad():
        model(src, tgt, record=full)
        computed = []
        real = record_module.norm_scale
        monkeypatch.setattr(record_module, "norm_scale", lambda *a: computed.append(1) or real(*a))
        model(src, tgt, record=values)
    assert set(values) == {name for name in full if name.endswith(".v")} and len(values) > 0
    assert all(torch.equal(values[name], full[name]) for name in values) and computed == []


@pytest.mark.parametrize("layout", ["gqa rotary rmsnorm", "t5", "bart", "bert-like encoder", "parallel residual"])
def test_what_a_block_reads_is_recorded_when_asked_for(layout):
    """The opt-in sites ("x", "q", "k", "mask", "bias"): never in a full record, kept by name or by full name (one
    block only), the same on both attention paths: the block's input, q and k after rotary as the model's weights
    give them, the mask and the score bias the block applied."""
    from explorer.model.attention import MultiHeadAttention

    model = perturbed(LAYOUTS[layout])
    src, tgt = inputs(model)
    kinds = model.config.attention_kinds()
    full, named, one = Record(), Record(only={"x", "q", "k", "mask", "bias", "v"}), Record(only={"cross.1.q"}
                                                                                          if "cross" in kinds else
                                                                                          {"encoder.1.q", "decoder.1.q"})
    with torch.no_grad():
        out = model(src, tgt, record=full)
        model(src, tgt, record=named, need_weights=False)
        model(src, tgt, record=one)
    assert not any(name.rsplit(".", 1)[-1] in ("x", "q", "k", "mask", "bias") for name in full)
    assert len(one) == 1 and next(iter(one)).endswith(".1.q")
    B, T = src.shape[0], src.shape[1] if tgt is None else tgt.shape[1]
    c = model.config
    for kind, (L, H) in kinds.items():
        Tq = src.shape[1] if kind == "encoder" else T
        S = src.shape[1] if kind != "decoder" else T
        for i in range(L):
            p = f"{kind}.{i}"
            assert named[f"{p}.x"].shape == (B, Tq, c.d_model)
            assert named[f"{p}.q"].shape == (B, H, Tq, c.resolved_head_dim)
            assert named[f"{p}.k"].shape == named[f"{p}.v"].shape == (B, c.resolved_kv_heads, S, c.resolved_head_dim)
            applied = getattr(out.masks, kind)
            assert (f"{p}.mask" in named) == (applied is not None)
            if applied is not None:
                assert torch.equal(named[f"{p}.mask"].expand(B, 1, Tq, S), applied.expand(B, 1, Tq, S))
            assert (f"{p}.bias" in named) == (c.positional == "relative" and kind != "cross")
            block: MultiHeadAttention = (model.encoder.layers[i].self_attn if kind == "encoder" else
                                         getattr(model.decoder.layers[i], "cross_attn" if kind == "cross" else "self_attn"))
            if c.positional != "rotary" and kind != "cross":  # q and k are the input through W_q, W_k
                q, k, _ = block.project(named[f"{p}.x"], None)
                assert torch.allclose(q, named[f"{p}.q"], atol=1e-6) and torch.allclose(k, named[f"{p}.k"], atol=1e-6)

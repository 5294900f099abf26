"""Information Flow Routes (explorer.interpret.flow): on tiny random models of GPT-2, Llama with grouped-query
attention, GPT-NeoX with parallel residual, T5 and BART (decoder with cross-attention heads, post-norm for BART)
and BERT (an encoder, post-norm), every kept node's shares sum to 1 before the threshold and the parts of each
update add up to the whole; heads switched off have share 0; the proximity of a node's parts computed by hand
from explicit vectors equals ours; the graph is top-down and connected; on the shipped induction-gpt the route
from the last token of a repeat goes through layer 1's induction heads to the token after the earlier copy, and
from there through layer 0's previous-token head to the repeated token; bad input."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

import explorer
from explorer.interpret import contribution_graph, head_roles, proximity_shares, top_heads
from explorer.interpret.flow import FlowNode
from explorer.model import Record
from tests.interpret.test_dla import build, random_head_mask

FAMILIES = ["gpt2", "llama-gqa", "neox-parallel", "t5", "bart", "bert-mlm"]


@pytest.fixture(scope="module", params=FAMILIES)
def family(request, tmp_path_factory):
    return build(request.param, tmp_path_factory.mktemp(f"flow-{request.param}"))


def graph_of(family, threshold=0.04, **kw):
    f = family
    position = f.positions[0]
    return contribution_graph(f.model, f.ids, tgt=f.tgt, position=position, threshold=threshold, **kw)


def test_shares_sum_to_one_and_edges_reach_down(family):
    g = graph_of(family, threshold=0.02)
    config = family.model.config
    assert g.nodes[0] == g.root and g.root.sublayer == "out"
    assert g.parallel == config.parallel_residual
    assert g.cross == (config.arch == "encoder-decoder")
    for node, table in g.shares.items():
        assert abs(table.total() - 1.0) < 1e-5, (node, table.total())
        assert table.residual >= 0 and (table.mlp is None or table.mlp >= 0)
        assert table.heads is None or bool((table.heads >= 0).all())
        if table.heads is not None:
            kind = table.attention
            S = g.lengths["encoder"] if kind == "cross" else g.lengths[node.stack]
            assert table.heads.shape == (config.n_heads, S)
            if kind == "decoder":  # causal: no share from a later key
                assert bool((table.heads[:, node.position + 1:] == 0).all())
    # every kept node but the root is the source of a kept edge; every edge's target is a kept node
    kept = set(g.nodes)
    sources = {e.source for e in g.edges}
    assert kept - {g.root} == sources
    assert {e.target for e in g.edges} <= kept
    for e in g.edges:
        assert e.share >= g.threshold and 0 < e.weight <= 1 + 1e-6
        assert e.kind in ("head", "mlp", "residual")
        assert (e.head is not None) == (e.kind == "head") == (e.attention is not None)
        assert e.target in g.shares
        if e.kind == "residual" or e.kind == "mlp":
            assert e.source.position == e.target.position
    # weights renormalised over the kept parts of each node
    for node in g.shares:
        into = g.edges_into(node)
        if into:
            assert abs(sum(e.weight for e in into) - 1.0) < 1e-5
    # every stack reached gets down to its embeddings
    assert any(n.sublayer == "embed" for n in g.nodes)
    if g.cross:
        crossing = [t for t in g.shares.values() if t.attention == "cross"]
        assert crossing  # every decoder layer's cross update is reached through the residual
        assert any(e.attention == "cross" for e in g.edges) == any(
            float(t.heads.max()) >= g.threshold for t in crossing)


def test_heads_switched_off_have_share_zero(family):
    head_mask = random_head_mask(family.model, seed=5)
    g = graph_of(family, threshold=0.01, head_mask=head_mask)
    seen = 0
    for node, table in g.shares.items():
        if table.heads is None:
            continue
        off = head_mask[table.attention][node.layer] == 0
        assert bool((table.heads[off] == 0).all())
        assert float(table.heads[~off].sum()) > 0
        seen += 1
    assert seen
    for e in g.edges:
        if e.kind == "head":
            assert head_mask[e.attention][e.layer, e.head] == 1


# ------------------------------------------------------------------------------------------------ by hand
def _norm_frozen(norm, scale, c):
    """A post-norm sublayer's norm frozen at `scale`: gamma * (c - mean c) / s (LayerNorm)."""
    if isinstance(norm, torch.nn.LayerNorm):
        c = c - c.mean(-1, keepdim=True)
    return c / scale * norm.weight


@torch.no_grad()
def explicit_parts(model, record, out, kind, layer, t, node_sublayer, stacks):
    """(whole (D,), parts (k, D), labels): the node's update written out vector by vector with loops, from a
    forward pass's record, weights and hidden states (independent of flow.py's chunked computation)."""
    config = model.config
    stack_mod = model.decoder if kind == "decoder" else model.encoder
    block = stack_mod.layers[layer]
    hidden = stacks[kind]["hidden"]
    x_in = hidden[layer][0, t]
    H, Dh = config.n_heads, config.resolved_head_dim

    def head_parts(att_kind, attention, weights):
        v = record[f"{att_kind}.{layer}.v"][0]  # (Hkv, S, Dh)
        G = H // v.shape[0]
        Wo = attention.out_proj.weight  # (D, H*Dh)
        parts, labels = [], []
        for h in range(H):
            for j in range(v.shape[1]):
                vec = weights[0, h, t, j] * (v[h // G, j] @ Wo[:, h * Dh:(h + 1) * Dh].T)
                parts.append(vec)
                labels.append(("head", h, j))
        return parts, labels

    def attn_out(att_kind, attention):
        z = record[f"{att_kind}.{layer}.z"][0, :, t].reshape(-1)
        return attention.out_proj(z)

    post = not config.norm_first
    if node_sublayer == "attn":
        attention = block.self_attn
        sub = block.self_sublayer if kind == "decoder" else block.attn_sublayer
        parts, labels = head_parts(kind, attention, stacks[kind]["self"][layer])
        whole = x_in + attn_out(kind, attention)
        residual = x_in
        if post:
            scale = record[f"{kind}.{layer}.scale"][0, t]
            whole = sub.norm(whole)
            parts = [_norm_frozen(sub.norm, scale, p) for p in parts]
            residual = _norm_frozen(sub.norm, scale, residual)
        return whole, torch.stack([residual, *parts]), [("residual",), *labels]
    if node_sublayer == "out" and config.parallel_residual:
        parts, labels = head_parts(kind, block.self_attn, stacks[kind]["self"][layer])
        mlp = record[f"{kind}.{layer}.mlp"][0, t]
        whole = hidden[layer + 1][0, t]
        return whole, torch.stack([x_in, mlp, *parts]), [("residual",), ("mlp",), *labels]
    raise NotImplementedError(node_sublayer)


@pytest.mark.parametrize("name", ["gpt2", "llama-gqa", "neox-parallel", "bert-mlm"])
def test_proximity_by_hand(name, tmp_path):
    """The top layer's update at the root position: explicit part vectors (loops over heads and keys), the parts
    plus W_o's bias add up to the whole, and the hand-written proximity gives our share table."""
    f = build(name, tmp_path)
    model, config = f.model, f.model.config
    kind = "encoder" if config.arch == "encoder" else "decoder"
    record = Record()
    with torch.no_grad():
        if kind == "encoder":
            res = model.encode(f.ids[None], record=record)
            stacks = {kind: {"hidden": res.hidden_states, "self": res.attentions}}
        else:
            res = model.decode(f.ids[None], record=record)
            stacks = {kind: {"hidden": res.hidden_states, "self": res.self_attentions}}
    T = f.ids.shape[0]
    t = f.positions[0] % T
    layer = (config.encoder_layers if kind == "encoder" else config.decoder_layers) - 1
    sub = "out" if config.parallel_residual else "attn"
    whole, parts, labels = explicit_parts(model, record, res, kind, layer, t, sub, stacks)
    block = (model.encoder if kind == "encoder" else model.decoder).layers[layer]
    if config.norm_first:  # the parts and W_o's bias add up to the whole (pre-norm: no norm in between)
        bias = block.self_attn.out_proj.bias
        total = parts.sum(0) + (0 if bias is None else bias)
        assert torch.allclose(total, whole, atol=1e-4)
    # the measure, written out: max(||y||_1 - ||y - c||_1, 0), floored at 1e-5 for non-zero parts, normalised
    norm = whole.abs().sum()
    prox = torch.stack([(norm - (whole - p).abs().sum()).clamp(min=0) for p in parts])
    prox = torch.where(parts.ne(0).any(-1), prox.clamp(min=1e-5), torch.zeros_like(prox))
    want = prox / prox.sum()
    assert torch.allclose(proximity_shares(whole[None], parts[None])[0], want, atol=1e-6)
    g = contribution_graph(model, f.ids, position=t, threshold=0.5)  # high threshold: the root's table is enough
    node = FlowNode(kind, layer, t, sub)
    if sub == "attn":  # the root is "out"; follow its residual edge to the attention node
        g = contribution_graph(model, f.ids, position=t, threshold=1e-6)
    table = g.shares[node]
    got = [table.residual] + ([table.mlp] if labels[1] == ("mlp",) else []) + \
        [float(table.heads[h, j]) for (_, h, j) in labels[1 + (labels[1] == ("mlp",)):]]
    assert torch.allclose(torch.tensor(got, dtype=want.dtype), want, atol=2e-5), (got[:4], want[:4])


@torch.no_grad()
def test_cross_heads_by_hand(tmp_path):
    """BART (post-norm): the cross-attention update of the root position, written out over encoder keys through
    the frozen norm, equals our share table; cross edges start at the encoder's top nodes and the trace goes on
    into the encoder."""
    f = build("bart", tmp_path)
    model, config = f.model, f.model.config
    record = Record()
    enc = model.encode(f.ids[None], record=record)
    dec = model.decode(f.tgt[None], enc.memory, enc.key_mask, key_mask=model.target_key_mask(f.tgt[None], True),
                       record=record)
    t, layer = f.tgt.shape[0] - 1, config.decoder_layers - 1
    block = model.decoder.layers[layer]
    H, Dh = config.n_heads, config.resolved_head_dim
    x_in = dec.hidden_states[layer][0, t]
    z_self = record[f"decoder.{layer}.z"][0, :, t].reshape(-1)
    x_self = block.self_sublayer.norm(x_in + block.self_attn.out_proj(z_self))
    z_cross = record[f"cross.{layer}.z"][0, :, t].reshape(-1)
    whole = block.cross_sublayer.norm(x_self + block.cross_attn.out_proj(z_cross))
    scale = record[f"cross.{layer}.scale"][0, t]
    v = record[f"cross.{layer}.v"][0]
    Wo = block.cross_attn.out_proj.weight
    a = dec.cross_attentions[layer][0]
    S = v.shape[1]
    parts = [_norm_frozen(block.cross_sublayer.norm, scale, x_self)]
    for h in range(H):
        for j in range(S):
            vector = a[h, t, j] * (v[h, j] @ Wo[:, h * Dh:(h + 1) * Dh].T)
            parts.append(_norm_frozen(block.cross_sublayer.norm, scale, vector))
    want = proximity_shares(whole[None], torch.stack(parts)[None])[0]
    g = contribution_graph(model, f.ids, tgt=f.tgt, threshold=1e-6)
    table = g.shares[FlowNode("decoder", layer, t, "cross")]
    assert table.attention == "cross" and table.heads.shape == (H, S)
    got = torch.cat([torch.tensor([table.residual]), table.heads.flatten()])
    assert torch.allclose(got, want.float(), atol=2e-5)
    cross = [e for e in g.edges if e.attention == "cross"]
    assert cross and all(e.source.stack == "encoder" and e.source.layer == config.encoder_layers - 1 for e in cross)
    assert any(n.stack == "encoder" and n.sublayer == "embed" for n in g.nodes)


# ------------------------------------------------------------------------------------------------ induction
@pytest.fixture(scope="module")
def induction():
    return explorer.load("induction-gpt", "cpu")


def test_induction_route(induction):
    """t5 t17 t99 t42 t8 t250 t13 t77 t5 t17 t99 t42 t8: from the last t8 (position 13 after [BOS]), the route goes
    through layer 1's induction heads to t250 (position 6, after the earlier t8), and there through layer 0's
    previous-token head to t8 at position 5: the two-layer induction circuit, found by the graph alone."""
    model, tok = induction.model, induction.tokenizer
    ids = torch.tensor(tok.encode("t5 t17 t99 t42 t8 t250 t13 t77 t5 t17 t99 t42 t8").ids)
    roles = head_roles(model, ids[None])["decoder"]
    induction_heads = {h for (layer, h) in top_heads(roles["induction"], 4, min_score=0.5) if layer == 1}
    previous_head = top_heads(roles["previous"])[0]
    assert induction_heads and previous_head[0] == 0
    T = ids.shape[0]
    assert T == 14 and tok.decode([int(ids[13])]) == tok.decode([int(ids[5])]) == "t8"
    # the copying head's output is small beside the residual stream (its OV weights were kept small in training):
    # shares 0.004 (L1 H2) and 0.013 (L0 H1), under the default threshold of 0.04
    g = contribution_graph(model, ids, threshold=0.003)
    into_l1 = [e for e in g.edges if e.target == FlowNode("decoder", 1, 13, "attn") and e.kind == "head"]
    # the strongest layer-1 head edge reads position 6 (the token after the earlier t8) through an induction head
    best = max(into_l1, key=lambda e: e.share)
    assert best.source == FlowNode("decoder", 0, 6, "out") and best.head in induction_heads
    assert all(e.source.position == 6 for e in into_l1)  # no layer-1 head route reads another position
    assert {e.head for e in into_l1} <= induction_heads
    # at position 6, layer 0: the previous-token head carries t8 from position 5, its largest head share
    into_l0 = [e for e in g.edges if e.target == FlowNode("decoder", 0, 6, "attn") and e.kind == "head"]
    top = max(into_l0, key=lambda e: e.share)
    assert (0, top.head) == previous_head and top.source == FlowNode("decoder", 0, 5, "embed")
    # the route exists end to end: root <- (1, 13, attn) <- (0, 6, out) <- (0, 6, attn) <- (0, 5, embed)
    assert FlowNode("decoder", 0, 5, "embed") in g.nodes
    assert FlowNode("decoder", 0, 6, "attn") in g.nodes
    # switching the previous-token head off takes its edge away (share 0)
    mask = torch.ones(2, 4)
    mask[previous_head] = 0
    off = contribution_graph(model, ids, head_mask={"decoder": mask}, threshold=0.003)
    for node, table in off.shares.items():
        if table.heads is not None and node.layer == 0:
            assert bool((table.heads[previous_head[1]] == 0).all())


# ------------------------------------------------------------------------------------------------ errors
def test_bad_input(induction):
    model = induction.model
    ids = torch.tensor([2, 9, 21, 103])
    with pytest.raises(ValueError, match="threshold"):
        contribution_graph(model, ids, threshold=0)
    with pytest.raises(ValueError, match="outside the sequence"):
        contribution_graph(model, ids, position=4)
    with pytest.raises(ValueError, match="kind must name a stack"):
        contribution_graph(model, ids, kind="encoder")
    with pytest.raises(ValueError, match="only an encoder-decoder takes tgt"):
        contribution_graph(model, ids, tgt=ids)
    with pytest.raises(ValueError, match="one sequence"):
        contribution_graph(model, ids[None].repeat(2, 1))
    model.train()
    try:
        with pytest.raises(ValueError, match="eval mode"):
            contribution_graph(model, ids)
    finally:
        model.eval()

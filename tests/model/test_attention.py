import torch

from explorer.model import MultiHeadAttention, causal_mask, padding_mask
from explorer.model.attention import attend_fast, attend_with_weights


def make(d_model=16, heads=4, head_dim=None):
    return MultiHeadAttention(d_model, heads, head_dim or d_model // heads).eval()


def test_weights_shape_and_rows_sum_to_one_over_allowed_keys():
    attn = make()
    x = torch.randn(2, 5, 16)
    mask = padding_mask(torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]), 0) & causal_mask(5)
    _, w = attn(x, mask=mask)
    assert w.shape == (2, 4, 5, 5)
    assert torch.allclose(w.sum(-1), torch.ones(2, 4, 5), atol=1e-6)
    assert (w.masked_select(~mask.expand_as(w)) == 0).all()  # masked entries exactly 0
    assert (w.triu(diagonal=1) == 0).all()  # nothing above the diagonal with the causal mask


def test_fully_masked_row_gives_zero_weights_and_zero_output_on_both_paths():
    q = torch.randn(1, 2, 3, 4)
    mask = torch.tensor([[True, True, False], [False, False, False], [True, False, False]])[None, None]
    out, w = attend_with_weights(q, q, q, mask)
    fast = attend_fast(q, q, q, mask)
    assert not torch.isnan(out).any() and not torch.isnan(w).any() and not torch.isnan(fast).any()
    assert (w[:, :, 1] == 0).all() and (out[:, :, 1] == 0).all() and (fast[:, :, 1] == 0).all()
    assert torch.allclose(out, fast, atol=1e-6)


def test_fully_masked_row_has_finite_gradients_on_the_fast_path():
    q = torch.randn(1, 2, 3, 4, requires_grad=True)
    mask = torch.tensor([[True, True, False], [False, False, False], [True, False, False]])[None, None]
    attend_fast(q, q, q, mask).sum().backward()
    assert torch.isfinite(q.grad).all()


def test_fast_path_matches_weights_path_with_masks_and_head_mask():
    attn = make(24, 3, head_dim=10)  # head width not d_model / heads
    x, memory = torch.randn(3, 6, 24), torch.randn(3, 4, 24)
    mask = padding_mask(torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1], [1, 0, 0, 0]]), 0)
    head_mask = torch.tensor([1.0, 0.0, 1.0])
    slow, _ = attn(x, memory, mask=mask, head_mask=head_mask, need_weights=True)
    fast, none = attn(x, memory, mask=mask, head_mask=head_mask, need_weights=False)
    assert none is None
    assert torch.allclose(slow, fast, atol=1e-6)


def test_per_head_weights_match_torch_multihead_attention():
    torch_mha = torch.nn.MultiheadAttention(16, 4, batch_first=True).eval()
    ours = make(16, 4)
    ours.in_proj.weight.data.copy_(torch_mha.in_proj_weight)
    ours.in_proj.bias.data.copy_(torch_mha.in_proj_bias)
    ours.out_proj.load_state_dict(torch_mha.out_proj.state_dict())
    x, memory = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
    kpm = torch.tensor([[False] * 7, [False] * 4 + [True] * 3])  # torch: True = ignore
    ref_out, ref_w = torch_mha(x, memory, memory, key_padding_mask=kpm, need_weights=True,
                               average_attn_weights=False)
    out, w = ours(x, memory, mask=(~kpm)[:, None, None, :])
    assert (out - ref_out).abs().max() < 1e-5
    assert (w - ref_w).abs().max() < 1e-5
    # self-attention with a causal mask
    ref_out, ref_w = torch_mha(x, x, x, attn_mask=~causal_mask(5), need_weights=True, average_attn_weights=False)
    out, w = ours(x, mask=causal_mask(5))
    assert (out - ref_out).abs().max() < 1e-5 and (w - ref_w).abs().max() < 1e-5


def test_all_ones_head_mask_is_exactly_no_head_mask():
    attn = make()
    x = torch.randn(2, 5, 16)
    plain, w1 = attn(x)
    masked, w2 = attn(x, head_mask=torch.ones(4))
    assert torch.equal(plain, masked) and torch.equal(w1, w2)


def test_switching_a_head_off_zeroes_its_slice_before_w_o():
    attn = make()
    x = torch.randn(2, 5, 16)
    out, weights = attn(x, head_mask=torch.tensor([1.0, 1.0, 0.0, 1.0]))
    # by hand: per-head outputs, zero head 2's slice of the concatenation, then W_o
    q, k, v = attn.project(x, None)
    heads = torch.softmax(q @ k.transpose(-2, -1) / 2.0, dim=-1) @ v  # Dh = 4, sqrt = 2
    concat = heads.transpose(1, 2).reshape(2, 5, 16).clone()
    concat[..., 8:12] = 0
    assert torch.allclose(out, attn.out_proj(concat), atol=1e-6)
    # the weights returned for the switched-off head are the ones it computed
    _, unmasked_weights = attn(x)
    assert torch.equal(weights, unmasked_weights)


def test_per_sample_head_masks_equal_separate_calls():
    attn = make()
    x = torch.randn(1, 5, 16).expand(4, 5, 16)
    head_mask = 1 - torch.eye(4)  # sample i has head i off
    batched, _ = attn(x, head_mask=head_mask)
    for i in range(4):
        single, _ = attn(x[:1], head_mask=head_mask[i])
        assert torch.allclose(batched[i], single[0], atol=1e-6)


# ---------------------------------------------------------------- query blocks (attend_with_weights in blocks)
def dense_reference(q, k, v, mask=None, bias=None):
    """softmax(q k^T / sqrt(Dh) + bias) v over the whole matrix in float64; fully masked rows -> 0."""
    G = q.shape[1] // k.shape[1]
    k, v = k.double().repeat_interleave(G, 1), v.double().repeat_interleave(G, 1)
    scores = q.double() @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if bias is not None:
        scores = scores + bias.double()
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = torch.nan_to_num(scores.softmax(-1), nan=0.0)
    return w @ v, w


def block_masks(T):
    """Masks whose query blocks see different key spans: causal, left padding with fully masked rows, a
    sliding window, rows with no key at all, and a mask over keys alone (no query axis)."""
    from explorer.model.masks import sliding_window_mask
    pad = padding_mask(torch.tensor([[0] * 5 + [1] * (T - 5), [1] * T]), 0)  # (2, 1, 1, T)
    holes = torch.rand(T, T) > 0.3
    holes[7:13] = False  # whole blocks of rows without a key
    return {"causal": causal_mask(T), "left padding": pad & causal_mask(T), "padding alone": pad,
            "sliding window": causal_mask(T) & sliding_window_mask(T, 6), "holes": holes}


def test_blocks_of_query_rows_equal_the_whole_matrix(monkeypatch):
    import explorer.model.attention as attention
    monkeypatch.setattr(attention, "BLOCK_CELLS", 2 * 4 * 3 * 40)  # 3 rows per block: 14 blocks of 40 tokens
    torch.manual_seed(0)
    T = 40
    q, k, v = torch.randn(2, 4, T, 8), torch.randn(2, 2, T, 8), torch.randn(2, 2, T, 8)  # grouped: 2 kv heads
    bias = torch.randn(1, 4, T, T)
    for name, mask in block_masks(T).items():
        for b in (None, bias):
            out, w = attend_with_weights(q, k, v, mask, bias=b)
            ref_out, ref_w = dense_reference(q, k, v, mask, b)
            assert torch.allclose(w.double(), ref_w, atol=1e-6), name
            assert torch.allclose(out.double(), ref_out, atol=1e-5), name
            assert (w.masked_select(~mask.expand_as(w)) == 0).all(), name  # outside the spans: exactly 0


def test_weights_dtype_casts_each_block_and_leaves_the_output_in_float32(monkeypatch):
    import explorer.model.attention as attention
    monkeypatch.setattr(attention, "BLOCK_CELLS", 4 * 64 * 5)
    q = torch.randn(1, 4, 64, 8)
    mask = causal_mask(64)
    out32, w32 = attend_with_weights(q, q, q, mask)
    out16, w16 = attend_with_weights(q, q, q, mask, weights_dtype=torch.float16)
    assert w16.dtype == torch.float16 and out16.dtype == torch.float32
    assert torch.equal(w16, w32.to(torch.float16)) and torch.equal(out16, out32)


def test_gradients_through_blocks_equal_one_block(monkeypatch):
    import explorer.model.attention as attention
    torch.manual_seed(1)
    q0, bias0 = torch.randn(1, 2, 24, 4), torch.randn(1, 2, 24, 24)
    mask = causal_mask(24) & (torch.rand(24, 24) > 0.2)
    grads = []
    for cells in (10 ** 9, 2 * 24 * 5):  # one block, then blocks of 5 rows
        monkeypatch.setattr(attention, "BLOCK_CELLS", cells)
        q, bias = q0.clone().requires_grad_(), bias0.clone().requires_grad_()
        out, w = attend_with_weights(q, q, q, mask, bias=bias)
        (out.square().sum() + w[..., 3].sum()).backward()
        grads.append((q.grad, bias.grad))
    assert torch.allclose(grads[0][0], grads[1][0], atol=1e-5)
    assert torch.allclose(grads[0][1], grads[1][1], atol=1e-5)


def test_cross_attention_blocks_see_only_real_source_keys(monkeypatch):
    import explorer.model.attention as attention
    monkeypatch.setattr(attention, "BLOCK_CELLS", 3 * 2 * 4 * 9)
    x, memory = torch.randn(3, 20, 8), torch.randn(3, 9, 8)
    mask = padding_mask(torch.tensor([[1] * 9, [1] * 4 + [0] * 5, [0] * 9]), 0)  # the last source is all padding
    q, kv = x.view(3, 20, 2, 4).transpose(1, 2), memory.view(3, 9, 2, 4).transpose(1, 2)
    out, w = attend_with_weights(q, kv, kv, mask)
    ref_out, ref_w = dense_reference(q, kv, kv, mask)
    assert torch.allclose(w.double(), ref_w, atol=1e-6) and torch.allclose(out.double(), ref_out, atol=1e-5)
    assert (w[2] == 0).all() and (out[2] == 0).all()

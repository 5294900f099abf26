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

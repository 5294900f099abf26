"""Head roles: hand-made attention patterns give exactly the expected scores; scores of model runs."""

import math

import pytest
import torch

from explorer.interpret.roles import (
    ROLES,
    allowed_keys,
    head_mask_without,
    head_roles,
    role_patterns,
    role_scores,
    top_heads,
)
from explorer.model import Transformer, TransformerConfig

T = 7


def uniform_causal(T: int) -> torch.Tensor:
    """(T, T) attention spreading each query evenly over keys 0..q."""
    return torch.ones(T, T).tril() / torch.arange(1, T + 1)[:, None]


def one_hot_rows(keys: list[int]) -> torch.Tensor:
    """(T, T) attention where query q puts all its weight on keys[q]."""
    a = torch.zeros(len(keys), len(keys))
    a[torch.arange(len(keys)), torch.tensor(keys)] = 1.0
    return a


def stacked(*heads: torch.Tensor) -> torch.Tensor:
    """(H, T, T) heads -> stacked (L=1, H, T, T)."""
    return torch.stack(heads)[None]


def reference_patterns(ids: list[int], window: int) -> dict[str, torch.Tensor]:
    """The roles' key sets written as loops over (query, key), independent of the vectorised code."""
    n = len(ids)
    p = {r: torch.zeros(n, n, dtype=torch.bool) for r in ROLES}
    for q in range(n):
        for k in range(n):
            p["previous"][q, k] = k == q - 1
            p["duplicate"][q, k] = k < q and ids[k] == ids[q]
            p["induction"][q, k] = 1 <= k <= q and ids[k - 1] == ids[q]
            p["first"][q, k] = k == 0
            p["self"][q, k] = k == q
            p["local"][q, k] = abs(q - k) <= window
    return p


def test_patterns_match_the_definitions():
    ids = [2, 5, 6, 5, 7, 5, 6, 6, 9, 2]
    got = role_patterns(torch.tensor([ids]), window=2)
    for role, want in reference_patterns(ids, 2).items():
        assert torch.equal(got[role][0], want), role


def test_perfect_heads_score_one():
    ids = torch.tensor([1, 10, 11, 12, 10, 11, 12])  # induction is defined at q = 4, 5, 6
    previous = one_hot_rows([0, 0, 1, 2, 3, 4, 5])
    induction = one_hot_rows([0, 0, 0, 0, 2, 3, 4])
    duplicate = one_hot_rows([0, 0, 0, 0, 1, 2, 3])
    sink = one_hot_rows([0] * T)
    diagonal = torch.eye(T)
    s = role_scores(stacked(previous, induction, duplicate, sink, diagonal), ids)
    # rows 1..6 count for previous / first / self; the heads that look at key 0 from rows 1..3 score there
    assert s["previous"][0].tolist() == pytest.approx([1.0, 1 / 6, 1 / 6, 1 / 6, 0.0])
    assert s["induction"][0].tolist() == pytest.approx([0.0, 1.0, 0.0, 0.0, 0.0])
    assert s["duplicate"][0].tolist() == pytest.approx([0.0, 0.0, 1.0, 0.0, 0.0])
    assert s["first"][0].tolist() == pytest.approx([1 / 6, 3 / 6, 3 / 6, 1.0, 0.0])
    assert s["self"][0].tolist() == pytest.approx([0.0, 0.0, 0.0, 0.0, 1.0])
    # local (window 2) counts from q = 3; the induction head's keys 2, 3, 4 of rows 4..6 are 2 away
    assert s["local"][0].tolist() == pytest.approx([1.0, 3 / 4, 0.0, 0.0, 1.0])


def test_uniform_attention_scores_the_mean_of_one_over_t_plus_one():
    ids = torch.tensor([1, 10, 11, 12, 10, 11, 12])
    s = role_scores(stacked(uniform_causal(T)), ids, window=2)
    mean_inverse = sum(1 / (q + 1) for q in range(1, T)) / (T - 1)  # rows 1..T-1, one predicted key each
    for role in ("previous", "first", "self"):
        assert s[role].item() == pytest.approx(mean_inverse, abs=1e-7), role
    assert s["induction"].item() == pytest.approx(sum(1 / (q + 1) for q in (4, 5, 6)) / 3, abs=1e-7)
    assert s["duplicate"].item() == pytest.approx(sum(1 / (q + 1) for q in (4, 5, 6)) / 3, abs=1e-7)
    assert s["local"].item() == pytest.approx(sum(3 / (q + 1) for q in range(3, T)) / (T - 3), abs=1e-7)


def test_matches_transformerlens_mul_score_on_the_rows_it_counts():
    """TransformerLens: sum(A * P) / sum(A) over the whole pattern. Ours restricts it to counted rows."""
    torch.manual_seed(1)
    ids = torch.tensor([3, 4, 5, 6, 4, 5, 6, 3])
    a = torch.rand(1, 2, 8, 8).tril()
    a = a / a.sum(-1, keepdim=True)
    pattern = role_patterns(ids[None])["induction"][0].float()
    rows = pattern.sum(-1) > 0  # the rows where induction predicts a key
    for h in range(2):
        tl = (a[0, h][rows] * pattern[rows]).sum() / a[0, h][rows].sum()
        assert role_scores([a], ids)["induction"][0, h].item() == pytest.approx(tl.item(), abs=1e-6)


def test_a_long_float16_run_scores_as_the_whole_pattern_formula_in_float32():
    """Scores gather the predicted keys (a few per query) instead of reading a dense pattern: on a long text
    with many repeated tokens, per role, the same as sum(A * P) / sum(A) over the counted rows, computed densely
    in float64, for float32 attention and for the float16 a long app run keeps."""
    torch.manual_seed(2)
    n = 300
    ids = torch.randint(0, 40, (n,))  # ~7 copies of each token: thousands of duplicate / induction pairs
    a = torch.rand(2, 3, n, n).tril() ** 8
    a = a / a.sum(-1, keepdim=True)
    patterns = role_patterns(ids[None])
    allowed = allowed_keys(ids[None])[0]
    fast32, fast16 = role_scores(list(a[:, None]), ids), role_scores(list(a[:, None].half()), ids)
    for role in ROLES:
        predicted = patterns[role][0] & allowed
        rows = (predicted.sum(-1) > 0) & (predicted.sum(-1) < allowed.sum(-1))
        for layer in range(2):
            for head in range(3):
                w = a[layer, head].double()[rows]
                want = (w * predicted[rows]).sum() / w.sum()
                assert fast32[role][layer, head].item() == pytest.approx(want.item(), abs=1e-6), role
                assert fast16[role][layer, head].item() == pytest.approx(want.item(), abs=2e-3), role


def test_float16_layers_score_as_their_float32_copies_block_by_block():
    """A float16 layer is read a block of query rows at a time (roles.row_sums): the scores are those of its exact
    float32 copy, bit for bit, also for a slice of a padded batch (not contiguous) and rows past the last block."""
    from explorer.interpret import roles

    torch.manual_seed(3)
    n = roles.ROWS_AT_ONCE * 2 + 37  # two whole blocks and a part
    ids = torch.randint(0, 30, (n,))
    a = torch.rand(3, 2, 4, n + 5, n + 5).tril() ** 4
    half = (a / a.sum(-1, keepdim=True)).half()[:, :, :, :n, :n]  # (L, B, H, n, n) views, as text_scores slices them
    layers16 = [layer[1:2] for layer in half]
    scores16 = role_scores(layers16, ids)
    scores32 = role_scores([layer.float().contiguous() for layer in layers16], ids)
    for role in ROLES:
        assert torch.equal(scores16[role].nan_to_num(-1), scores32[role].nan_to_num(-1)), role


def test_roles_without_a_defined_row_are_nan():
    ids = torch.tensor([1, 2, 3, 4])  # no repeated token
    s = role_scores(stacked(uniform_causal(4)), ids)
    assert math.isnan(s["duplicate"].item()) and math.isnan(s["induction"].item())
    assert not math.isnan(s["previous"].item())


def test_padded_rows_and_keys_do_not_count_and_batches_average_per_sequence():
    a1 = stacked(one_hot_rows([0, 0, 1, 2, 3]))[0]  # (H=1, 5, 5) previous-token head
    a2 = stacked(one_hot_rows([0, 0, 0, 0, 0]))[0]  # attends to the first token only
    ids = torch.tensor([[1, 5, 6, 7, 8], [1, 5, 6, 0, 0]])  # row 2 padded from position 3
    key_mask = ids != 0
    a2[0, 3:] = 0.0  # padded query rows: whatever the model computes there must not count
    a2[0, 3:, 1] = 1.0
    s = role_scores([torch.stack([a1, a2])], ids, key_mask=key_mask)
    # sequence 1: previous 1.0; sequence 2 (rows 1, 2 count): q=1 attends to key 0 = previous, q=2 does not
    assert s["previous"].item() == pytest.approx((1.0 + 0.5) / 2)
    alone = role_scores([a2[None, :, :3, :3]], ids[1:, :3])
    assert alone["previous"].item() == pytest.approx(0.5)


def test_stacked_and_per_layer_inputs_agree_and_shapes_are_checked():
    torch.manual_seed(0)
    a = torch.rand(3, 2, 6, 6).tril()  # (L, H, T, T)
    a = a / a.sum(-1, keepdim=True)
    ids = torch.tensor([1, 4, 5, 4, 5, 9])
    per_layer = role_scores([a[i][None] for i in range(3)], ids)
    together = role_scores(a, ids)
    for role in ROLES:
        assert per_layer[role].shape == (3, 2)
        assert torch.allclose(per_layer[role], together[role], equal_nan=True)
    with pytest.raises(ValueError, match="do not match"):
        role_scores(a, ids[:5])
    with pytest.raises(ValueError, match="unknown role"):
        role_scores(a, ids, roles=["nope"])


def test_custom_mask_decides_trivial_rows():
    """With key 0 blocked, query 1 can only attend to itself: a row with no choice counts for no role."""
    ids = torch.tensor([1, 2, 3, 4])
    block = torch.ones(4, 4, dtype=torch.bool)
    block[:, 0] = False
    allowed = allowed_keys(ids[None], attn_mask=block)
    assert allowed[0, 1].tolist() == [False, True, False, False]
    a = torch.zeros(4, 4)
    a[1:, 1:] = torch.ones(3, 3).tril() / torch.arange(1, 4)[:, None]
    s = role_scores(stacked(a), ids, attn_mask=block)
    assert s["self"].item() == pytest.approx((1 / 2 + 1 / 3) / 2)  # rows 2 and 3 only
    assert math.isnan(s["first"].item())  # key 0 may not be attended: first-token is never defined


def test_top_heads_and_ablation_mask():
    scores = torch.tensor([[0.1, 0.9, float("nan")], [0.95, 0.2, 0.9]])
    assert top_heads(scores, 2) == [(1, 0), (0, 1)]
    assert top_heads(scores, 5, min_score=0.5) == [(1, 0), (0, 1), (1, 2)]
    assert top_heads(scores, 0) == []
    mask = head_mask_without([(1, 0), (0, 1)], 2, 3)
    assert mask.tolist() == [[1, 0, 1], [0, 1, 1]]
    with pytest.raises(ValueError, match="outside"):
        head_mask_without([(2, 0)], 2, 3)


def _model(arch: str, **kw) -> Transformer:
    config = TransformerConfig(arch=arch, vocab_size=50, d_model=32, n_heads=4, n_layers=2, d_ff=64, dropout=0.0,
                               max_len=32, **kw)
    return Transformer(config).eval()


def test_head_roles_scores_the_attention_the_model_returns():
    model = _model("decoder", norm_first=True)
    ids = torch.tensor([[2, 5, 6, 7, 5, 6, 7, 8]])
    roles = head_roles(model, ids)
    assert set(roles) == {"decoder"} and set(roles["decoder"]) == set(ROLES)
    attn = model(ids).attentions.decoder
    for role, got in roles["decoder"].items():
        assert torch.allclose(got, role_scores(attn, ids)[role], equal_nan=True)
        assert got.shape == (2, 4)


def test_head_roles_of_a_padded_batch_average_the_unpadded_sequences():
    model = _model("decoder", positional="learned")
    a, b = [2, 5, 6, 7, 5, 6, 7, 8], [2, 9, 10, 9, 10]
    batch = torch.tensor([a, b + [0, 0, 0]])
    together = head_roles(model, batch)["decoder"]
    one, two = head_roles(model, torch.tensor(a))["decoder"], head_roles(model, torch.tensor(b))["decoder"]
    for role in ROLES:
        assert torch.allclose(together[role], (one[role] + two[role]) / 2, atol=1e-6), role


def test_head_roles_encoder_decoder_and_encoder():
    model = _model("encoder-decoder")
    src, tgt = torch.tensor([[3, 4, 5, 3, 4, 5]]), torch.tensor([[2, 7, 8, 7, 8]])
    assert set(head_roles(model, src)) == {"encoder"}
    both = head_roles(model, src, tgt)
    out = model(src, tgt)
    assert torch.allclose(both["decoder"]["induction"], role_scores(out.attentions.decoder, tgt)["induction"],
                          equal_nan=True)
    assert torch.allclose(both["encoder"]["self"], role_scores(out.attentions.encoder, src, causal=False)["self"])
    encoder = _model("encoder")
    assert set(head_roles(encoder, src)) == {"encoder"}
    with pytest.raises(ValueError, match="one sequence"):
        head_roles(encoder, src, tgt)


def test_head_roles_of_a_model_without_a_padding_id_count_every_token():
    """GPT-2 has no padding id: nothing is padding, so padding=True scores every row as padding=False does."""
    model = _model("decoder", pad_id=None)
    ids = torch.tensor([[0, 5, 6, 7, 5, 6, 7, 0]])  # id 0 is an ordinary token here
    padded, plain = head_roles(model, ids, padding=True), head_roles(model, ids, padding=False)
    for role in ROLES:
        assert torch.allclose(padded["decoder"][role], plain["decoder"][role], equal_nan=True), role

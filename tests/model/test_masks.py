import pytest
import torch

from explorer.model import masks


def test_padding_mask_marks_real_keys():
    ids = torch.tensor([[5, 6, 0], [7, 0, 0]])
    mask = masks.padding_mask(ids, pad_id=0)
    assert mask.shape == (2, 1, 1, 3)
    assert mask[:, 0, 0].tolist() == [[True, True, False], [True, False, False]]


def test_causal_mask_is_lower_triangle():
    assert masks.causal_mask(3).tolist() == [[True, False, False], [True, True, False], [True, True, True]]


def test_custom_masks():
    assert masks.local_window_mask(4, 1).tolist() == [
        [True, True, False, False], [True, True, True, False], [False, True, True, True], [False, False, True, True]]
    assert masks.no_self_mask(2).tolist() == [[False, True], [True, False]]
    assert masks.block_keys_mask(2, 3, [1]).tolist() == [[True, False, True], [True, False, True]]
    with pytest.raises(ValueError, match="outside"):
        masks.block_keys_mask(2, 3, [3])


def test_combine_masks_ands_and_broadcasts():
    pad = masks.padding_mask(torch.tensor([[1, 1, 0]]), 0)
    combined = masks.combine_masks(pad, masks.causal_mask(3), None)
    assert combined.shape == (1, 1, 3, 3)
    assert combined[0, 0].tolist() == [[True, False, False], [True, True, False], [True, True, False]]
    assert masks.combine_masks(None, None) is None


@pytest.mark.parametrize("shape, expected", [((3, 4), (1, 1, 3, 4)), ((2, 3, 4), (2, 1, 3, 4)),
                                             ((2, 1, 3, 4), (2, 1, 3, 4))])
def test_normalize_mask_shapes(shape, expected):
    assert masks.normalize_mask(torch.ones(shape, dtype=torch.bool)).shape == expected


def test_normalize_mask_rejects_non_boolean_and_bad_shapes():
    with pytest.raises(ValueError, match="boolean"):
        masks.normalize_mask(torch.ones(3, 3))
    with pytest.raises(ValueError, match=r"\(B, 1, T, S\)"):
        masks.normalize_mask(torch.ones(2, 2, 3, 3, dtype=torch.bool))


def test_torch_masks_translate_at_the_boundary():
    torch_kpm = torch.tensor([[False, True]])  # torch: True = ignore
    assert masks.from_torch_mask(torch_kpm, key_padding=True).tolist() == [[True, False]]
    assert masks.to_torch_key_padding_mask(torch.tensor([[True, False]])).tolist() == [[False, True]]
    additive = torch.nn.Transformer.generate_square_subsequent_mask(3)
    assert torch.equal(masks.from_torch_mask(additive)[0, 0], masks.causal_mask(3))
    with pytest.raises(ValueError, match="0/-inf"):
        masks.from_torch_mask(torch.full((2, 2), 0.5))

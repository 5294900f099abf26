"""Page settings -> head masks and the custom mask (explorer.app.run.toggles), and the "L0 H3" boundary labels
(explorer.app.page.head_labels)."""

from __future__ import annotations

import pytest
import torch

from explorer.app.page.head_labels import clicked_tile, head_label, head_labels, parse_heads
from explorer.app.run.toggles import Toggles, custom_mask, head_mask
from explorer.app.serving.errors import AppError
from explorer.model import TransformerConfig

CONFIG = TransformerConfig(arch="encoder-decoder", vocab_size=20, d_model=16, n_heads=4, n_layers=2, d_ff=32)


def test_all_heads_on_is_no_mask():
    assert head_mask(CONFIG, Toggles()) is None
    every_head = frozenset((layer, h) for layer in range(2) for h in range(4))
    everything = {k: every_head for k in ("encoder", "decoder", "cross")}
    assert head_mask(CONFIG, Toggles(heads_on=everything)) is None


def test_head_mask_per_kind():
    m = head_mask(CONFIG, Toggles(heads_on={"cross": frozenset({(1, 2)}), "encoder": frozenset()}))
    assert set(m) == {"encoder", "decoder", "cross"}
    assert m["decoder"].eq(1).all() and m["encoder"].eq(0).all()  # a missing kind: all on; an empty one: all off
    assert m["cross"].nonzero().tolist() == [[1, 2]]


def test_head_mask_refuses_what_does_not_exist():
    with pytest.raises(AppError, match="L2 H0 does not exist in the encoder"):
        head_mask(CONFIG, Toggles(heads_on={"encoder": frozenset({(2, 0)})}))
    decoder_only = CONFIG.replace(arch="decoder")
    with pytest.raises(AppError, match="no cross attention"):
        head_mask(decoder_only, Toggles(heads_on={"cross": frozenset()}))
    with pytest.raises(AppError, match="unknown custom mask"):
        Toggles(custom="everything")


def test_custom_masks():
    assert custom_mask(Toggles(), 5) == (None, None)
    window, _ = custom_mask(Toggles(custom="local window", window=1), 5)
    assert window[2].tolist() == [False, True, True, True, False]
    no_self, _ = custom_mask(Toggles(custom="no self"), 3)
    assert not no_self.diagonal().any() and no_self.sum() == 6
    blocked, notice = custom_mask(Toggles(custom="block token", block_token=1), 4)
    assert not blocked[:, 1].any() and blocked[:, [0, 2, 3]].all() and notice is None
    moved, notice = custom_mask(Toggles(custom="block token", block_token=9), 4)
    assert not moved[:, 3].any() and "blocked position 3 instead" in notice
    assert Toggles().default_masks and not Toggles(padding=False).default_masks


def test_head_labels_round_trip():
    labels = head_labels(2, 3)
    assert labels[:4] == ["L0 H0", "L0 H1", "L0 H2", "L1 H0"] and head_label(1, 2) == "L1 H2"
    assert parse_heads(labels) == {(layer, h) for layer in range(2) for h in range(3)}
    assert parse_heads(None) == frozenset() and parse_heads([" L3 H4 "]) == {(3, 4)}
    for bad in ("L0H1", "layer 0", "<script>", "L-1 H0", "L0 H1 extra"):
        with pytest.raises(AppError, match="is not of the form"):
            parse_heads([bad])


def test_clicked_tile_messages():
    assert clicked_tile("1,2,1763800000000") == (1, 2) == clicked_tile(" 1,2 ")
    for bad in (None, "", "layer 1", "1;2", "-1,2", "1,2,3,4", "<script>", "99999,1"):
        assert clicked_tile(bad) is None, bad


def test_toggles_are_values():
    """Frozen and hashable inputs: nothing a request changes can leak into another one."""
    t = Toggles(heads_on={"encoder": frozenset({(0, 0)})})
    with pytest.raises(AttributeError):
        t.padding = False  # type: ignore[misc]
    assert torch.equal(head_mask(CONFIG, t)["encoder"], head_mask(CONFIG, t)["encoder"])
